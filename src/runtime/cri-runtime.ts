import type { ContainerEventResponse } from '../generated/runtime/v1/ContainerEventResponse.js';
import { containerAttachRpcs } from './container-attach.js';
import { containerExecRpcs } from './container-exec.js';
import { execSyncRpcs } from './container-exec-sync.js';
import { sandboxPortForwardRpcs } from './sandbox-port-forward.js';
import { containerCreateRpcs } from './container-create.js';
import { containerRemoveRpcs } from './container-remove.js';
import { containerStartRpcs } from './container-start.js';
import { containerStatusRpcs } from './container-status.js';
import { containerStopRpcs } from './container-stop.js';
import { containerUpdateRpcs } from './container-update.js';
import { imageServiceRpcs } from './image-service.js';
import { metricsRpcs } from './metrics.js';
import type { RpcHandlers, RpcMethods } from './rpc.js';
import { runtimeStatusRpcs } from './runtime-status.js';
import { sandboxRunRpcs } from './sandbox-run.js';
import { sandboxStatusRpcs } from './sandbox-status.js';
import { sandboxStopRpcs } from './sandbox-stop.js';
import { statsRpcs } from './stats.js';
import { versionRpcs } from './version.js';

/**
 * Every RPC the simulated runtime serves, with its handler: the tables of the handler files.
 * CheckpointContainer and the server streams are not among them (the
 * gRPC edge answers UNIMPLEMENTED; GetContainerEvents is `subscribeContainerEvents`).
 */
export const RUNTIME_RPCS = {
  ...versionRpcs,
  ...runtimeStatusRpcs,
  ...sandboxRunRpcs,
  ...sandboxStopRpcs,
  ...sandboxStatusRpcs,
  ...containerCreateRpcs,
  ...containerStartRpcs,
  ...containerStopRpcs,
  ...containerRemoveRpcs,
  ...containerStatusRpcs,
  ...containerUpdateRpcs,
  ...execSyncRpcs,
  ...containerExecRpcs,
  ...containerAttachRpcs,
  ...sandboxPortForwardRpcs,
  ...statsRpcs,
  ...metricsRpcs,
  ...imageServiceRpcs,
} satisfies RpcHandlers;

/**
 * The simulated runtime as the gRPC edge (src/cri) and in-process callers see it: one method per
 * RPC in RUNTIME_RPCS, named after the RPC in lowerCamelCase, taking the decoded request and
 * resolving with the response. Failures are RuntimeErrors (errors.ts) that the edge maps to gRPC
 * codes. Requests are validated here, not at the edge, so in-process callers get the same checks.
 */
export type CriRuntime = RpcMethods<typeof RUNTIME_RPCS> & {
  /**
   * Container lifecycle events for GetContainerEvents: listener is called for every event until
   * the returned function is called.
   */
  subscribeContainerEvents(listener: (ev: ContainerEventResponse) => void): () => void;
};
