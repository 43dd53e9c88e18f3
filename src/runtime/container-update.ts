import type { ReopenContainerLogRequest__Output } from '../generated/runtime/v1/ReopenContainerLogRequest.js';
import type { ReopenContainerLogResponse } from '../generated/runtime/v1/ReopenContainerLogResponse.js';
import type { UpdateContainerResourcesRequest__Output } from '../generated/runtime/v1/UpdateContainerResourcesRequest.js';
import type { UpdateContainerResourcesResponse } from '../generated/runtime/v1/UpdateContainerResourcesResponse.js';
import { RuntimeError, withContext } from './errors.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerState, containerStateName } from './store/container-store.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

/** UpdateContainerResources: created and running containers take new limits into their spec. */
export function updateContainerResources(ctx: RuntimeContext, req: UpdateContainerResourcesRequest__Output): UpdateContainerResourcesResponse {
  requireField(req.container_id, 'container_id');
  const container = ctx.containers.mustFind(req.container_id);
  const state = container.status.state;
  if (state !== ContainerState.CREATED && state !== ContainerState.RUNNING) {
    throw new RuntimeError('FailedPrecondition', `container ${container.id} is in ${containerStateName(state)} state: its resources cannot be updated`);
  }
  const linux = req.linux ?? container.resources?.linux ?? null;
  const windows = req.windows ?? container.resources?.windows ?? null;
  // The spec shows the new resources from now on.
  ctx.containers.setResources(container, { linux, windows });
  return {};
}

/**
 * ReopenContainerLog: after the kubelet rotated (renamed) the log file, output goes to a new
 * file at the original path; that file exists when this returns.
 */
export async function reopenContainerLog(ctx: RuntimeContext, req: ReopenContainerLogRequest__Output): Promise<ReopenContainerLogResponse> {
  requireField(req.container_id, 'container_id');
  const container = ctx.containers.mustFind(req.container_id);
  const writer = container.live.logWriter;
  if (container.status.state !== ContainerState.RUNNING || writer === undefined) {
    throw new RuntimeError('FailedPrecondition', `container ${container.id} is not running: its log cannot be reopened`);
  }
  try {
    await writer.reopen();
  } catch (err) {
    throw withContext(err, `failed to reopen log ${container.logPath} of container ${container.id}`);
  }
  return {};
}

/** The RPCs this file serves (see rpc.ts). */
export const containerUpdateRpcs = { UpdateContainerResources: updateContainerResources, ReopenContainerLog: reopenContainerLog } satisfies RpcHandlers;
