import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriBackend } from './backend.js';
import { streamUnimplemented, unary, type CallContext } from './call.js';
import { requireId } from './validation.js';

export function statsHandlers(
  runtime: CriBackend,
  ctx: CallContext,
): Pick<RuntimeServiceHandlers,
  | 'ContainerStats' | 'ListContainerStats' | 'StreamContainerStats'
  | 'PodSandboxStats' | 'ListPodSandboxStats' | 'StreamPodSandboxStats'> {
  return {
    ContainerStats: unary(ctx, 'ContainerStats', async (req) => {
      requireId(req.container_id, 'container id');
      return runtime.containerStats(req);
    }, (req) => ({ containerId: req.container_id })),
    ListContainerStats: unary(ctx, 'ListContainerStats', (req) => runtime.listContainerStats(req)),
    StreamContainerStats: streamUnimplemented(ctx, 'StreamContainerStats', 'use ListContainerStats'),
    PodSandboxStats: unary(ctx, 'PodSandboxStats', async (req) => {
      requireId(req.pod_sandbox_id, 'pod sandbox id');
      return runtime.podSandboxStats(req);
    }, (req) => ({ podSandboxId: req.pod_sandbox_id })),
    ListPodSandboxStats: unary(ctx, 'ListPodSandboxStats', (req) => runtime.listPodSandboxStats(req)),
    StreamPodSandboxStats: streamUnimplemented(ctx, 'StreamPodSandboxStats', 'use ListPodSandboxStats'),
  };
}
