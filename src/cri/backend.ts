import type * as grpc from '@grpc/grpc-js';
import type { ContainerEventResponse } from '../generated/runtime/v1/ContainerEventResponse.js';
import type { ImageServiceHandlers } from '../generated/runtime/v1/ImageService.js';
import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriRuntime } from '../runtime/cri-runtime.js';

/**
 * What the gRPC edge serves: the runtime's CRI contract (src/runtime/cri-runtime.ts).
 * The elements of listContainers and listPodSandbox are never changed once returned (a changed
 * record comes back as a new object): the edge caches their encodings by identity (list-encoding.ts).
 */
export type CriBackend = CriRuntime;

/**
 * The naming convention of that contract, derived mechanically from the generated service
 * types: one async method per implemented RPC, lowerCamelCase of the RPC, taking the received
 * request message and resolving to the response message.
 */
type RuntimeMethod<H> = H extends grpc.handleUnaryCall<infer Req, infer Res> ? (request: Req) => Promise<Res> : never;

/** RuntimeService RPCs the runtime implements. The rest are answered UNIMPLEMENTED at the edge. */
export type BackendRuntimeRpc =
  | 'Version' | 'Status' | 'RuntimeConfig' | 'UpdateRuntimeConfig'
  | 'RunPodSandbox' | 'StopPodSandbox' | 'RemovePodSandbox' | 'PodSandboxStatus' | 'ListPodSandbox'
  | 'UpdatePodSandboxResources'
  | 'CreateContainer' | 'StartContainer' | 'StopContainer' | 'RemoveContainer' | 'ListContainers'
  | 'ContainerStatus' | 'UpdateContainerResources' | 'ReopenContainerLog'
  | 'ExecSync' | 'Exec' | 'Attach' | 'PortForward'
  | 'ContainerStats' | 'ListContainerStats' | 'PodSandboxStats' | 'ListPodSandboxStats'
  | 'ListMetricDescriptors' | 'ListPodSandboxMetrics';

export type BackendImageRpc = 'ListImages' | 'ImageStatus' | 'PullImage' | 'RemoveImage' | 'ImageFsInfo';

export type ConventionBackend = {
  [K in BackendRuntimeRpc as Uncapitalize<K>]: RuntimeMethod<RuntimeServiceHandlers[K]>;
} & {
  [K in BackendImageRpc as Uncapitalize<K>]: RuntimeMethod<ImageServiceHandlers[K]>;
} & {
  subscribeContainerEvents(listener: (event: ContainerEventResponse) => void): () => void;
};

/**
 * Compile-time check that CriRuntime and the convention agree both ways: a method added to one
 * and not the other, or a request/response type that drifts, fails the build here.
 */
export type ContractMatchesConvention = [CriRuntime, ConventionBackend] extends [ConventionBackend, CriRuntime] ? true : never;
export const contractMatchesConvention: ContractMatchesConvention = true;
