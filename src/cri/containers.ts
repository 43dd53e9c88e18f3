import type { CreateContainerRequest__Output } from '../generated/runtime/v1/CreateContainerRequest.js';
import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriBackend } from './backend.js';
import { streamUnimplemented, unary, unaryUnimplemented, type CallContext } from './call.js';
import { encodedFromCache } from './list-encoding.js';
import { requireId, requireMessage, requireNonNegative, requireString } from './validation.js';

const CONTAINER_ID = 'container id';

const byContainerId = (req: { container_id: string }) => ({ containerId: req.container_id });

const byNewContainer = (req: CreateContainerRequest__Output) => ({
  podSandboxId: req.pod_sandbox_id,
  container: req.config?.metadata?.name,
});

/** crictl refuses a ContainerStatus without metadata.name and image.image, so both are required here. */
function validateCreateContainer(req: CreateContainerRequest__Output): void {
  requireId(req.pod_sandbox_id, 'pod sandbox id');
  requireMessage(req.config, 'config');
  requireMessage(req.config.metadata, 'config.metadata');
  requireString(req.config.metadata.name, 'config.metadata.name');
  requireMessage(req.config.image, 'config.image');
  requireString(req.config.image.image, 'config.image.image');
}

export function containerHandlers(
  runtime: CriBackend,
  ctx: CallContext,
): Pick<RuntimeServiceHandlers,
  | 'CreateContainer' | 'StartContainer' | 'StopContainer' | 'RemoveContainer' | 'ListContainers'
  | 'StreamContainers' | 'ContainerStatus' | 'UpdateContainerResources' | 'ReopenContainerLog'
  | 'CheckpointContainer'> {
  return {
    CreateContainer: unary(ctx, 'CreateContainer', async (req) => {
      validateCreateContainer(req);
      return runtime.createContainer(req);
    }, byNewContainer),
    StartContainer: unary(ctx, 'StartContainer', async (req) => {
      requireId(req.container_id, CONTAINER_ID);
      return runtime.startContainer(req);
    }, byContainerId),
    StopContainer: unary(ctx, 'StopContainer', async (req) => {
      requireId(req.container_id, CONTAINER_ID);
      requireNonNegative(req.timeout, 'timeout');
      return runtime.stopContainer(req);
    }, byContainerId),
    RemoveContainer: unary(ctx, 'RemoveContainer', async (req) => {
      requireId(req.container_id, CONTAINER_ID);
      return runtime.removeContainer(req);
    }, byContainerId),
    // The elements are the runtime's stable list views: their encodings are cached.
    ListContainers: unary(ctx, 'ListContainers', async (req) =>
      encodedFromCache('containers', (await runtime.listContainers(req)).containers ?? [])),
    StreamContainers: streamUnimplemented(ctx, 'StreamContainers', 'use ListContainers'),
    ContainerStatus: unary(ctx, 'ContainerStatus', async (req) => {
      requireId(req.container_id, CONTAINER_ID);
      return runtime.containerStatus(req);
    }, byContainerId),
    UpdateContainerResources: unary(ctx, 'UpdateContainerResources', async (req) => {
      requireId(req.container_id, CONTAINER_ID);
      return runtime.updateContainerResources(req);
    }, byContainerId),
    ReopenContainerLog: unary(ctx, 'ReopenContainerLog', async (req) => {
      requireId(req.container_id, CONTAINER_ID);
      return runtime.reopenContainerLog(req);
    }, byContainerId),
    CheckpointContainer: unaryUnimplemented(ctx, 'CheckpointContainer', 'simulated containers cannot be checkpointed'),
  };
}
