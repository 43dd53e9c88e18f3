import type { ActiveDirectoryApi } from '../runtime/active-directory.js';
import type { CriRuntime } from '../runtime/cri-runtime.js';

/**
 * What the gRPC edge serves: the runtime's CRI contract (src/runtime/cri-runtime.ts), derived
 * from the proto. The edge registers a handler for every RPC of the service definition that the
 * backend has a method for (service-handlers.ts).
 * The elements of listContainers and listPodSandbox are never changed once returned (a changed
 * record comes back as a new object): the edge caches their encodings by identity (list-encoding.ts).
 */
export type CriBackend = CriRuntime & {
  /** cri-winsim's ActiveDirectory service, served on the same socket when the backend has it (UNIMPLEMENTED otherwise). */
  readonly activeDirectory?: ActiveDirectoryApi;
};
