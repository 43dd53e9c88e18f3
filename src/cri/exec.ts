import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriBackend } from './backend.js';
import { unary, type CallContext } from './call.js';
import { requireId, requireNonEmpty, requireNonNegative } from './validation.js';

export function execHandlers(
  runtime: CriBackend,
  ctx: CallContext,
): Pick<RuntimeServiceHandlers, 'ExecSync' | 'Exec' | 'Attach' | 'PortForward'> {
  return {
    ExecSync: unary(ctx, 'ExecSync', async (req) => {
      requireId(req.container_id, 'container id');
      requireNonEmpty(req.cmd, 'cmd');
      requireNonNegative(req.timeout, 'timeout');
      return runtime.execSync(req);
    }, (req) => ({ containerId: req.container_id })),
    // The streaming RPCs answer with a URL of the runtime's streaming server; the runtime checks
    // the request with the kubelet streaming server's texts.
    Exec: unary(ctx, 'Exec', (req) => runtime.exec(req), (req) => ({ containerId: req.container_id })),
    Attach: unary(ctx, 'Attach', (req) => runtime.attach(req), (req) => ({ containerId: req.container_id })),
    PortForward: unary(ctx, 'PortForward', (req) => runtime.portForward(req), (req) => ({ podSandboxId: req.pod_sandbox_id })),
  };
}
