import type { RunPodSandboxRequest__Output } from '../generated/runtime/v1/RunPodSandboxRequest.js';
import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriBackend } from './backend.js';
import { streamUnimplemented, unary, type CallContext } from './call.js';
import { encodedFromCache } from './list-encoding.js';
import { requireId, requireMessage, requireString } from './validation.js';

const POD_SANDBOX_ID = 'pod sandbox id';

const byPodSandboxId = (req: { pod_sandbox_id: string }) => ({ podSandboxId: req.pod_sandbox_id });

const bySandboxName = (req: RunPodSandboxRequest__Output) => ({
  pod: req.config?.metadata?.name,
  namespace: req.config?.metadata?.namespace,
});

/**
 * The sandbox metadata is the pod's identity: crictl refuses a PodSandboxStatus without
 * name, namespace and uid, so a sandbox is never created without them.
 */
function validateRunPodSandbox(req: RunPodSandboxRequest__Output): void {
  requireMessage(req.config, 'config');
  requireMessage(req.config.metadata, 'config.metadata');
  requireString(req.config.metadata.name, 'config.metadata.name');
  requireString(req.config.metadata.namespace, 'config.metadata.namespace');
  requireString(req.config.metadata.uid, 'config.metadata.uid');
}

export function sandboxHandlers(
  runtime: CriBackend,
  ctx: CallContext,
): Pick<RuntimeServiceHandlers,
  | 'RunPodSandbox' | 'StopPodSandbox' | 'RemovePodSandbox' | 'PodSandboxStatus' | 'ListPodSandbox'
  | 'StreamPodSandboxes' | 'UpdatePodSandboxResources'> {
  return {
    RunPodSandbox: unary(ctx, 'RunPodSandbox', async (req) => {
      validateRunPodSandbox(req);
      return runtime.runPodSandbox(req);
    }, bySandboxName),
    StopPodSandbox: unary(ctx, 'StopPodSandbox', async (req) => {
      requireId(req.pod_sandbox_id, POD_SANDBOX_ID);
      return runtime.stopPodSandbox(req);
    }, byPodSandboxId),
    RemovePodSandbox: unary(ctx, 'RemovePodSandbox', async (req) => {
      requireId(req.pod_sandbox_id, POD_SANDBOX_ID);
      return runtime.removePodSandbox(req);
    }, byPodSandboxId),
    PodSandboxStatus: unary(ctx, 'PodSandboxStatus', async (req) => {
      requireId(req.pod_sandbox_id, POD_SANDBOX_ID);
      return runtime.podSandboxStatus(req);
    }, byPodSandboxId),
    // The elements are the runtime's stable list views: their encodings are cached.
    ListPodSandbox: unary(ctx, 'ListPodSandbox', async (req) =>
      encodedFromCache('items', (await runtime.listPodSandbox(req)).items ?? [])),
    StreamPodSandboxes: streamUnimplemented(ctx, 'StreamPodSandboxes', 'use ListPodSandbox'),
    UpdatePodSandboxResources: unary(ctx, 'UpdatePodSandboxResources', async (req) => {
      requireId(req.pod_sandbox_id, POD_SANDBOX_ID);
      return runtime.updatePodSandboxResources(req);
    }, byPodSandboxId),
  };
}
