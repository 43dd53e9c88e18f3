import type { PodSandbox } from '../generated/runtime/v1/PodSandbox.js';
import type { ListPodSandboxRequest__Output } from '../generated/runtime/v1/ListPodSandboxRequest.js';
import type { ListPodSandboxResponse } from '../generated/runtime/v1/ListPodSandboxResponse.js';
import type { PodSandboxStatusRequest__Output } from '../generated/runtime/v1/PodSandboxStatusRequest.js';
import type { PodSandboxStatusResponse } from '../generated/runtime/v1/PodSandboxStatusResponse.js';
import type { UpdatePodSandboxResourcesRequest__Output } from '../generated/runtime/v1/UpdatePodSandboxResourcesRequest.js';
import type { UpdatePodSandboxResourcesResponse } from '../generated/runtime/v1/UpdatePodSandboxResourcesResponse.js';
import { nanosToWire } from './clock.js';
import { sandboxInfo, toContainerStatus, toPodSandbox, toPodSandboxStatus } from './cri-views.js';
import { recordFilter } from './container-status.js';
import type { RuntimeContext } from './runtime-context.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

function mustFindSandbox(ctx: RuntimeContext, id: string) {
  requireField(id, 'pod_sandbox_id');
  return ctx.sandboxes.mustFind(id);
}

export function podSandboxStatus(ctx: RuntimeContext, req: PodSandboxStatusRequest__Output): PodSandboxStatusResponse {
  const sandbox = mustFindSandbox(ctx, req.pod_sandbox_id);
  const response: PodSandboxStatusResponse = {
    status: toPodSandboxStatus(sandbox),
    containers_statuses: ctx.containers.inGroup(sandbox.id).map((c) => toContainerStatus(ctx, c)),
    timestamp: nanosToWire(ctx.clock.nowNanos()),
  };
  if (req.verbose) response.info = sandboxInfo(sandbox);
  return response;
}

/**
 * ListPodSandbox: filters by id (or prefix), state and label selector through the store indexes.
 * Each element is the store's list view: the same object while the sandbox is unchanged.
 */
export function listPodSandbox(ctx: RuntimeContext, req: ListPodSandboxRequest__Output): ListPodSandboxResponse {
  // A frozen array, shared by every unfiltered list until a sandbox changes.
  return { items: ctx.sandboxes.listViews(recordFilter(ctx, req.filter), toPodSandbox) as PodSandbox[] };
}

/** UpdatePodSandboxResources: records the pod-level overhead and resources. */
export function updatePodSandboxResources(ctx: RuntimeContext, req: UpdatePodSandboxResourcesRequest__Output): UpdatePodSandboxResourcesResponse {
  const sandbox = mustFindSandbox(ctx, req.pod_sandbox_id);
  sandbox.resources = { overhead: req.overhead, resources: req.resources };
  ctx.sandboxes.touched(sandbox);
  return {};
}

/** The RPCs this file serves (see rpc.ts). */
export const sandboxStatusRpcs = { PodSandboxStatus: podSandboxStatus, ListPodSandbox: listPodSandbox, UpdatePodSandboxResources: updatePodSandboxResources } satisfies RpcHandlers;
