import type { ContainerStatusRequest__Output } from '../generated/runtime/v1/ContainerStatusRequest.js';
import type { ContainerStatusResponse } from '../generated/runtime/v1/ContainerStatusResponse.js';
import type { ListContainersRequest__Output } from '../generated/runtime/v1/ListContainersRequest.js';
import type { ListContainersResponse } from '../generated/runtime/v1/ListContainersResponse.js';
import { containerInfo, toContainer, toContainerStatus } from './cri-views.js';
import { RuntimeError } from './errors.js';
import type { RuntimeContext } from './runtime-context.js';

export function containerStatus(ctx: RuntimeContext, req: ContainerStatusRequest__Output): ContainerStatusResponse {
  if (req.container_id === '') throw new RuntimeError('InvalidArgument', 'container_id must not be empty');
  const container = ctx.containers.mustFind(req.container_id);
  const response: ContainerStatusResponse = { status: toContainerStatus(container) };
  if (req.verbose) response.info = containerInfo(container);
  return response;
}

/**
 * ListContainers: id (or prefix), state, pod sandbox id and label selector, through the indexes.
 * Each element is the store's list view: the same object while the container is unchanged.
 */
export function listContainers(ctx: RuntimeContext, req: ListContainersRequest__Output): ListContainersResponse {
  const f = req.filter;
  const containers = ctx.containers.list({
    ...(f?.id ? { id: f.id } : {}),
    ...(f?.state ? { state: f.state.state } : {}),
    ...(f?.pod_sandbox_id ? { group: resolveSandboxId(ctx, f.pod_sandbox_id) } : {}),
    ...(f?.label_selector ? { labelSelector: f.label_selector } : {}),
  });
  return { containers: containers.map((c) => ctx.containers.view(c, toContainer)) };
}

/** A sandbox filter may be a prefix, as ids everywhere else; no match filters everything out. */
export function resolveSandboxId(ctx: RuntimeContext, idOrPrefix: string): string {
  try {
    return ctx.sandboxes.find(idOrPrefix)?.id ?? idOrPrefix;
  } catch {
    return idOrPrefix;
  }
}
