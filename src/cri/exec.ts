import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriBackend } from './backend.js';
import { unary, unaryUnimplemented, type CallContext } from './call.js';
import { requireId, requireNonEmpty, requireNonNegative } from './validation.js';

/** Exec, Attach and PortForward answer with the URL of a streaming server, which the simulator does not run. */
const NO_STREAMING_SERVER = 'the simulator has no streaming server';

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
    Exec: unaryUnimplemented(ctx, 'Exec', `${NO_STREAMING_SERVER}; use ExecSync (crictl exec -s)`),
    Attach: unaryUnimplemented(ctx, 'Attach', `${NO_STREAMING_SERVER}; read the container log instead (crictl logs)`),
    PortForward: unaryUnimplemented(ctx, 'PortForward', NO_STREAMING_SERVER),
  };
}
