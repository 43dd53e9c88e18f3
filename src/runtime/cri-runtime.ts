import type { VersionRequest__Output } from '../generated/runtime/v1/VersionRequest.js';
import type { VersionResponse } from '../generated/runtime/v1/VersionResponse.js';
import type { StatusRequest__Output } from '../generated/runtime/v1/StatusRequest.js';
import type { StatusResponse } from '../generated/runtime/v1/StatusResponse.js';
import type { RuntimeConfigRequest__Output } from '../generated/runtime/v1/RuntimeConfigRequest.js';
import type { RuntimeConfigResponse } from '../generated/runtime/v1/RuntimeConfigResponse.js';
import type { UpdateRuntimeConfigRequest__Output } from '../generated/runtime/v1/UpdateRuntimeConfigRequest.js';
import type { UpdateRuntimeConfigResponse } from '../generated/runtime/v1/UpdateRuntimeConfigResponse.js';
import type { RunPodSandboxRequest__Output } from '../generated/runtime/v1/RunPodSandboxRequest.js';
import type { RunPodSandboxResponse } from '../generated/runtime/v1/RunPodSandboxResponse.js';
import type { StopPodSandboxRequest__Output } from '../generated/runtime/v1/StopPodSandboxRequest.js';
import type { StopPodSandboxResponse } from '../generated/runtime/v1/StopPodSandboxResponse.js';
import type { RemovePodSandboxRequest__Output } from '../generated/runtime/v1/RemovePodSandboxRequest.js';
import type { RemovePodSandboxResponse } from '../generated/runtime/v1/RemovePodSandboxResponse.js';
import type { PodSandboxStatusRequest__Output } from '../generated/runtime/v1/PodSandboxStatusRequest.js';
import type { PodSandboxStatusResponse } from '../generated/runtime/v1/PodSandboxStatusResponse.js';
import type { ListPodSandboxRequest__Output } from '../generated/runtime/v1/ListPodSandboxRequest.js';
import type { ListPodSandboxResponse } from '../generated/runtime/v1/ListPodSandboxResponse.js';
import type { CreateContainerRequest__Output } from '../generated/runtime/v1/CreateContainerRequest.js';
import type { CreateContainerResponse } from '../generated/runtime/v1/CreateContainerResponse.js';
import type { StartContainerRequest__Output } from '../generated/runtime/v1/StartContainerRequest.js';
import type { StartContainerResponse } from '../generated/runtime/v1/StartContainerResponse.js';
import type { StopContainerRequest__Output } from '../generated/runtime/v1/StopContainerRequest.js';
import type { StopContainerResponse } from '../generated/runtime/v1/StopContainerResponse.js';
import type { RemoveContainerRequest__Output } from '../generated/runtime/v1/RemoveContainerRequest.js';
import type { RemoveContainerResponse } from '../generated/runtime/v1/RemoveContainerResponse.js';
import type { ListContainersRequest__Output } from '../generated/runtime/v1/ListContainersRequest.js';
import type { ListContainersResponse } from '../generated/runtime/v1/ListContainersResponse.js';
import type { ContainerStatusRequest__Output } from '../generated/runtime/v1/ContainerStatusRequest.js';
import type { ContainerStatusResponse } from '../generated/runtime/v1/ContainerStatusResponse.js';
import type { UpdateContainerResourcesRequest__Output } from '../generated/runtime/v1/UpdateContainerResourcesRequest.js';
import type { UpdateContainerResourcesResponse } from '../generated/runtime/v1/UpdateContainerResourcesResponse.js';
import type { ReopenContainerLogRequest__Output } from '../generated/runtime/v1/ReopenContainerLogRequest.js';
import type { ReopenContainerLogResponse } from '../generated/runtime/v1/ReopenContainerLogResponse.js';
import type { ExecSyncRequest__Output } from '../generated/runtime/v1/ExecSyncRequest.js';
import type { ExecSyncResponse } from '../generated/runtime/v1/ExecSyncResponse.js';
import type { ContainerStatsRequest__Output } from '../generated/runtime/v1/ContainerStatsRequest.js';
import type { ContainerStatsResponse } from '../generated/runtime/v1/ContainerStatsResponse.js';
import type { ListContainerStatsRequest__Output } from '../generated/runtime/v1/ListContainerStatsRequest.js';
import type { ListContainerStatsResponse } from '../generated/runtime/v1/ListContainerStatsResponse.js';
import type { PodSandboxStatsRequest__Output } from '../generated/runtime/v1/PodSandboxStatsRequest.js';
import type { PodSandboxStatsResponse } from '../generated/runtime/v1/PodSandboxStatsResponse.js';
import type { ListPodSandboxStatsRequest__Output } from '../generated/runtime/v1/ListPodSandboxStatsRequest.js';
import type { ListPodSandboxStatsResponse } from '../generated/runtime/v1/ListPodSandboxStatsResponse.js';
import type { ListMetricDescriptorsRequest__Output } from '../generated/runtime/v1/ListMetricDescriptorsRequest.js';
import type { ListMetricDescriptorsResponse } from '../generated/runtime/v1/ListMetricDescriptorsResponse.js';
import type { ListPodSandboxMetricsRequest__Output } from '../generated/runtime/v1/ListPodSandboxMetricsRequest.js';
import type { ListPodSandboxMetricsResponse } from '../generated/runtime/v1/ListPodSandboxMetricsResponse.js';
import type { UpdatePodSandboxResourcesRequest__Output } from '../generated/runtime/v1/UpdatePodSandboxResourcesRequest.js';
import type { UpdatePodSandboxResourcesResponse } from '../generated/runtime/v1/UpdatePodSandboxResourcesResponse.js';
import type { ListImagesRequest__Output } from '../generated/runtime/v1/ListImagesRequest.js';
import type { ListImagesResponse } from '../generated/runtime/v1/ListImagesResponse.js';
import type { ImageStatusRequest__Output } from '../generated/runtime/v1/ImageStatusRequest.js';
import type { ImageStatusResponse } from '../generated/runtime/v1/ImageStatusResponse.js';
import type { PullImageRequest__Output } from '../generated/runtime/v1/PullImageRequest.js';
import type { PullImageResponse } from '../generated/runtime/v1/PullImageResponse.js';
import type { RemoveImageRequest__Output } from '../generated/runtime/v1/RemoveImageRequest.js';
import type { RemoveImageResponse } from '../generated/runtime/v1/RemoveImageResponse.js';
import type { ImageFsInfoRequest__Output } from '../generated/runtime/v1/ImageFsInfoRequest.js';
import type { ImageFsInfoResponse } from '../generated/runtime/v1/ImageFsInfoResponse.js';
import type { ExecRequest__Output } from '../generated/runtime/v1/ExecRequest.js';
import type { ExecResponse } from '../generated/runtime/v1/ExecResponse.js';
import type { AttachRequest__Output } from '../generated/runtime/v1/AttachRequest.js';
import type { AttachResponse } from '../generated/runtime/v1/AttachResponse.js';
import type { PortForwardRequest__Output } from '../generated/runtime/v1/PortForwardRequest.js';
import type { PortForwardResponse } from '../generated/runtime/v1/PortForwardResponse.js';
import type { ContainerEventResponse } from '../generated/runtime/v1/ContainerEventResponse.js';

/**
 * The simulated runtime as the gRPC edge (src/cri) sees it: one method per implemented CRI RPC,
 * named after the RPC in lowerCamelCase, taking the decoded request and resolving with the
 * response. Failures are RuntimeErrors (src/runtime/errors.ts) that the edge maps to gRPC codes.
 * The streaming lists and CheckpointContainer are not part of it (the
 * edge answers UNIMPLEMENTED).
 */
export interface CriRuntime {
  version(req: VersionRequest__Output): Promise<VersionResponse>;
  status(req: StatusRequest__Output): Promise<StatusResponse>;
  runtimeConfig(req: RuntimeConfigRequest__Output): Promise<RuntimeConfigResponse>;
  updateRuntimeConfig(req: UpdateRuntimeConfigRequest__Output): Promise<UpdateRuntimeConfigResponse>;
  runPodSandbox(req: RunPodSandboxRequest__Output): Promise<RunPodSandboxResponse>;
  stopPodSandbox(req: StopPodSandboxRequest__Output): Promise<StopPodSandboxResponse>;
  removePodSandbox(req: RemovePodSandboxRequest__Output): Promise<RemovePodSandboxResponse>;
  podSandboxStatus(req: PodSandboxStatusRequest__Output): Promise<PodSandboxStatusResponse>;
  listPodSandbox(req: ListPodSandboxRequest__Output): Promise<ListPodSandboxResponse>;
  createContainer(req: CreateContainerRequest__Output): Promise<CreateContainerResponse>;
  startContainer(req: StartContainerRequest__Output): Promise<StartContainerResponse>;
  stopContainer(req: StopContainerRequest__Output): Promise<StopContainerResponse>;
  removeContainer(req: RemoveContainerRequest__Output): Promise<RemoveContainerResponse>;
  listContainers(req: ListContainersRequest__Output): Promise<ListContainersResponse>;
  containerStatus(req: ContainerStatusRequest__Output): Promise<ContainerStatusResponse>;
  updateContainerResources(req: UpdateContainerResourcesRequest__Output): Promise<UpdateContainerResourcesResponse>;
  reopenContainerLog(req: ReopenContainerLogRequest__Output): Promise<ReopenContainerLogResponse>;
  execSync(req: ExecSyncRequest__Output): Promise<ExecSyncResponse>;
  exec(req: ExecRequest__Output): Promise<ExecResponse>;
  attach(req: AttachRequest__Output): Promise<AttachResponse>;
  portForward(req: PortForwardRequest__Output): Promise<PortForwardResponse>;
  containerStats(req: ContainerStatsRequest__Output): Promise<ContainerStatsResponse>;
  listContainerStats(req: ListContainerStatsRequest__Output): Promise<ListContainerStatsResponse>;
  podSandboxStats(req: PodSandboxStatsRequest__Output): Promise<PodSandboxStatsResponse>;
  listPodSandboxStats(req: ListPodSandboxStatsRequest__Output): Promise<ListPodSandboxStatsResponse>;
  listMetricDescriptors(req: ListMetricDescriptorsRequest__Output): Promise<ListMetricDescriptorsResponse>;
  listPodSandboxMetrics(req: ListPodSandboxMetricsRequest__Output): Promise<ListPodSandboxMetricsResponse>;
  updatePodSandboxResources(req: UpdatePodSandboxResourcesRequest__Output): Promise<UpdatePodSandboxResourcesResponse>;
  listImages(req: ListImagesRequest__Output): Promise<ListImagesResponse>;
  imageStatus(req: ImageStatusRequest__Output): Promise<ImageStatusResponse>;
  pullImage(req: PullImageRequest__Output): Promise<PullImageResponse>;
  removeImage(req: RemoveImageRequest__Output): Promise<RemoveImageResponse>;
  imageFsInfo(req: ImageFsInfoRequest__Output): Promise<ImageFsInfoResponse>;
  /**
   * Container lifecycle events for GetContainerEvents: listener is called for every event until
   * the returned function is called.
   */
  subscribeContainerEvents(listener: (ev: ContainerEventResponse) => void): () => void;
}
