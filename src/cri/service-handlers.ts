import type { handleUnaryCall, ServiceDefinition, UntypedHandleCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import { streamUnimplemented, unary, unaryUnimplemented, type CallContext } from './call.js';
import { encodedFromCache } from './list-encoding.js';

/**
 * The handlers of a CRI service, made from its definition: a unary RPC the backend has a method
 * for (lowerCamelCase of the RPC) is passed to it as it was decoded; the runtime validates the
 * request and its errors are mapped to a status once (status.ts). Everything else answers
 * UNIMPLEMENTED with a message naming the RPC. Nothing here is written per RPC but what the edge
 * itself adds: the cached list encodings, the server streams it serves, and the reasons below.
 */

/** Why an RPC is not offered (the UNIMPLEMENTED message after the RPC's name). */
const NOT_OFFERED: Readonly<Record<string, string>> = {
  CheckpointContainer: 'simulated containers cannot be checkpointed',
  // The v1.36 server streams: on UNIMPLEMENTED clients fall back to the List* RPC.
  StreamPodSandboxes: 'use ListPodSandbox',
  StreamContainers: 'use ListContainers',
  StreamContainerStats: 'use ListContainerStats',
  StreamPodSandboxStats: 'use ListPodSandboxStats',
  StreamPodSandboxMetrics: 'use ListPodSandboxMetrics',
  StreamImages: 'use ListImages',
};
const NO_HANDLER = 'the runtime has no handler for it';

/**
 * List responses whose elements are the runtime's stable list views, by the name of their one
 * field: their encodings are cached (list-encoding.ts, withCachedListEncoding).
 */
const CACHED_LISTS: Readonly<Record<string, string>> = { ListContainers: 'containers', ListPodSandbox: 'items' };

type Method = (request: unknown, deadlineMs?: number) => Promise<unknown>;

/** Ids worth a log binding, from any request that carries them (only with debug logging on). */
function requestIds(request: unknown): Record<string, unknown> {
  const r = request as {
    container_id?: unknown;
    pod_sandbox_id?: unknown;
    config?: { metadata?: { name?: unknown; namespace?: unknown } | null } | null;
    image?: { image?: unknown } | null;
  };
  const ids: Record<string, unknown> = {};
  if (typeof r.container_id === 'string' && r.container_id !== '') ids.containerId = r.container_id;
  if (typeof r.pod_sandbox_id === 'string' && r.pod_sandbox_id !== '') ids.podSandboxId = r.pod_sandbox_id;
  const metadata = r.config?.metadata;
  if (metadata != null) {
    // A sandbox's metadata has a namespace; a container's only a name.
    if (typeof metadata.namespace === 'string') Object.assign(ids, { pod: metadata.name, namespace: metadata.namespace });
    else ids.container = metadata.name;
  }
  if (typeof r.image?.image === 'string') ids.image = r.image.image;
  return ids;
}

function unaryHandler(ctx: CallContext, rpc: string, runtime: object, method: Method): handleUnaryCall<unknown, unknown> {
  const field = CACHED_LISTS[rpc];
  if (field !== undefined) {
    return unary(ctx, rpc, async (request, deadlineMs) => {
      const response = (await method.call(runtime, request, deadlineMs)) as Record<string, object[] | undefined>;
      return encodedFromCache(field, response[field] ?? []);
    }, requestIds);
  }
  return unary(ctx, rpc, (request, deadlineMs) => method.call(runtime, request, deadlineMs), requestIds);
}

/**
 * The handlers of every RPC in `definition`: the backend's methods for the unary RPCs it has,
 * `streams` for the server streams the edge serves itself, UNIMPLEMENTED for the rest.
 */
export function serviceHandlers(
  definition: ServiceDefinition,
  runtime: object,
  ctx: CallContext,
  streams: Readonly<Record<string, UntypedHandleCall>> = {},
): UntypedServiceImplementation {
  const methods = runtime as unknown as Record<string, unknown>;
  const handlers: UntypedServiceImplementation = {};
  for (const [rpc, method] of Object.entries(definition)) {
    const why = NOT_OFFERED[rpc] ?? NO_HANDLER;
    if (method.responseStream) {
      handlers[rpc] = streams[rpc] ?? streamUnimplemented(ctx, rpc, why);
      continue;
    }
    const implementation = methods[rpc.charAt(0).toLowerCase() + rpc.slice(1)];
    handlers[rpc] = typeof implementation === 'function' && NOT_OFFERED[rpc] === undefined
      ? unaryHandler(ctx, rpc, runtime, implementation as Method)
      : unaryUnimplemented(ctx, rpc, why);
  }
  return handlers;
}
