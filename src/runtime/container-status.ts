import type { Container } from '../generated/runtime/v1/Container.js';
import type { ContainerStatusRequest__Output } from '../generated/runtime/v1/ContainerStatusRequest.js';
import type { ContainerStatusResponse } from '../generated/runtime/v1/ContainerStatusResponse.js';
import type { ListContainersRequest__Output } from '../generated/runtime/v1/ListContainersRequest.js';
import type { ListContainersResponse } from '../generated/runtime/v1/ListContainersResponse.js';
import { containerInfo, toContainer, toContainerStatus } from './cri-views.js';
import type { RuntimeContext } from './runtime-context.js';
import type { RecordFilter } from './store/record-store.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

export function containerStatus(ctx: RuntimeContext, req: ContainerStatusRequest__Output): ContainerStatusResponse {
  requireField(req.container_id, 'container_id');
  const container = ctx.containers.mustFind(req.container_id);
  const response: ContainerStatusResponse = { status: toContainerStatus(ctx, container) };
  if (req.verbose) response.info = containerInfo(ctx, container);
  return response;
}

/**
 * ListContainers: id (or prefix), state, pod sandbox id and label selector, through the indexes.
 * Each element is the store's list view: the same object while the container is unchanged.
 */
export function listContainers(ctx: RuntimeContext, req: ListContainersRequest__Output): ListContainersResponse {
  // A frozen array, shared by every unfiltered list until a container changes.
  return { containers: ctx.containers.listViews(recordFilter(ctx, req.filter), toContainer) as Container[] };
}

/** What the CRI list filters (containers, sandboxes, their stats) may set. */
export interface CriListFilter {
  id?: string;
  state?: { state: number } | null;
  pod_sandbox_id?: string;
  label_selector?: Record<string, string>;
}

/**
 * The store filter for a CRI list filter: only the criteria the request sets (an empty string,
 * a null state or an empty selector sets none). Built key by key, so that every filter with the
 * same criteria has one shape.
 */
export function recordFilter(ctx: RuntimeContext, f: CriListFilter | null | undefined): RecordFilter {
  const filter: RecordFilter = {};
  if (f?.id) filter.id = f.id;
  if (f?.state) filter.state = f.state.state;
  if (f?.pod_sandbox_id) filter.group = resolveSandboxId(ctx, f.pod_sandbox_id);
  if (f?.label_selector) filter.labelSelector = f.label_selector;
  return filter;
}

/** A sandbox filter may be a prefix, as ids everywhere else; no match filters everything out. */
export function resolveSandboxId(ctx: RuntimeContext, idOrPrefix: string): string {
  try {
    return ctx.sandboxes.find(idOrPrefix)?.id ?? idOrPrefix;
  } catch {
    return idOrPrefix;
  }
}

/** The RPCs this file serves (see rpc.ts). */
export const containerStatusRpcs = { ContainerStatus: containerStatus, ListContainers: listContainers } satisfies RpcHandlers;
