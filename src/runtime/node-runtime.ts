import { mkdir, rm } from 'node:fs/promises';
import { CallLoad } from './call-load.js';
import { countCredentialSpecLeaks } from './container-create-windows.js';
import { join, resolve } from 'node:path';
import type { ContainerEventResponse } from '../generated/runtime/v1/ContainerEventResponse.js';
import type { ContainerStatsRequest__Output } from '../generated/runtime/v1/ContainerStatsRequest.js';
import type { ContainerStatsResponse } from '../generated/runtime/v1/ContainerStatsResponse.js';
import type { ContainerStatusRequest__Output } from '../generated/runtime/v1/ContainerStatusRequest.js';
import type { ContainerStatusResponse } from '../generated/runtime/v1/ContainerStatusResponse.js';
import type { CreateContainerRequest__Output } from '../generated/runtime/v1/CreateContainerRequest.js';
import type { CreateContainerResponse } from '../generated/runtime/v1/CreateContainerResponse.js';
import type { ExecSyncRequest__Output } from '../generated/runtime/v1/ExecSyncRequest.js';
import type { ExecSyncResponse } from '../generated/runtime/v1/ExecSyncResponse.js';
import type { ImageFsInfoRequest__Output } from '../generated/runtime/v1/ImageFsInfoRequest.js';
import type { ImageFsInfoResponse } from '../generated/runtime/v1/ImageFsInfoResponse.js';
import type { ImageStatusRequest__Output } from '../generated/runtime/v1/ImageStatusRequest.js';
import type { ImageStatusResponse } from '../generated/runtime/v1/ImageStatusResponse.js';
import type { ListContainerStatsRequest__Output } from '../generated/runtime/v1/ListContainerStatsRequest.js';
import type { ListContainerStatsResponse } from '../generated/runtime/v1/ListContainerStatsResponse.js';
import type { ListContainersRequest__Output } from '../generated/runtime/v1/ListContainersRequest.js';
import type { ListContainersResponse } from '../generated/runtime/v1/ListContainersResponse.js';
import type { ListImagesRequest__Output } from '../generated/runtime/v1/ListImagesRequest.js';
import type { ListImagesResponse } from '../generated/runtime/v1/ListImagesResponse.js';
import type { ListMetricDescriptorsRequest__Output } from '../generated/runtime/v1/ListMetricDescriptorsRequest.js';
import type { ListMetricDescriptorsResponse } from '../generated/runtime/v1/ListMetricDescriptorsResponse.js';
import type { ListPodSandboxMetricsRequest__Output } from '../generated/runtime/v1/ListPodSandboxMetricsRequest.js';
import type { ListPodSandboxMetricsResponse } from '../generated/runtime/v1/ListPodSandboxMetricsResponse.js';
import type { ListPodSandboxRequest__Output } from '../generated/runtime/v1/ListPodSandboxRequest.js';
import type { ListPodSandboxResponse } from '../generated/runtime/v1/ListPodSandboxResponse.js';
import type { ListPodSandboxStatsRequest__Output } from '../generated/runtime/v1/ListPodSandboxStatsRequest.js';
import type { ListPodSandboxStatsResponse } from '../generated/runtime/v1/ListPodSandboxStatsResponse.js';
import type { PodSandboxStatsRequest__Output } from '../generated/runtime/v1/PodSandboxStatsRequest.js';
import type { PodSandboxStatsResponse } from '../generated/runtime/v1/PodSandboxStatsResponse.js';
import type { PodSandboxStatusRequest__Output } from '../generated/runtime/v1/PodSandboxStatusRequest.js';
import type { PodSandboxStatusResponse } from '../generated/runtime/v1/PodSandboxStatusResponse.js';
import type { PullImageRequest__Output } from '../generated/runtime/v1/PullImageRequest.js';
import type { PullImageResponse } from '../generated/runtime/v1/PullImageResponse.js';
import type { RemoveContainerRequest__Output } from '../generated/runtime/v1/RemoveContainerRequest.js';
import type { RemoveContainerResponse } from '../generated/runtime/v1/RemoveContainerResponse.js';
import type { RemoveImageRequest__Output } from '../generated/runtime/v1/RemoveImageRequest.js';
import type { RemoveImageResponse } from '../generated/runtime/v1/RemoveImageResponse.js';
import type { RemovePodSandboxRequest__Output } from '../generated/runtime/v1/RemovePodSandboxRequest.js';
import type { RemovePodSandboxResponse } from '../generated/runtime/v1/RemovePodSandboxResponse.js';
import type { ReopenContainerLogRequest__Output } from '../generated/runtime/v1/ReopenContainerLogRequest.js';
import type { ReopenContainerLogResponse } from '../generated/runtime/v1/ReopenContainerLogResponse.js';
import type { RunPodSandboxRequest__Output } from '../generated/runtime/v1/RunPodSandboxRequest.js';
import type { RunPodSandboxResponse } from '../generated/runtime/v1/RunPodSandboxResponse.js';
import type { RuntimeConfigRequest__Output } from '../generated/runtime/v1/RuntimeConfigRequest.js';
import type { RuntimeConfigResponse } from '../generated/runtime/v1/RuntimeConfigResponse.js';
import type { StartContainerRequest__Output } from '../generated/runtime/v1/StartContainerRequest.js';
import type { StartContainerResponse } from '../generated/runtime/v1/StartContainerResponse.js';
import type { StatusRequest__Output } from '../generated/runtime/v1/StatusRequest.js';
import type { StatusResponse } from '../generated/runtime/v1/StatusResponse.js';
import type { StopContainerRequest__Output } from '../generated/runtime/v1/StopContainerRequest.js';
import type { StopContainerResponse } from '../generated/runtime/v1/StopContainerResponse.js';
import type { StopPodSandboxRequest__Output } from '../generated/runtime/v1/StopPodSandboxRequest.js';
import type { StopPodSandboxResponse } from '../generated/runtime/v1/StopPodSandboxResponse.js';
import type { UpdateContainerResourcesRequest__Output } from '../generated/runtime/v1/UpdateContainerResourcesRequest.js';
import type { UpdateContainerResourcesResponse } from '../generated/runtime/v1/UpdateContainerResourcesResponse.js';
import type { UpdatePodSandboxResourcesRequest__Output } from '../generated/runtime/v1/UpdatePodSandboxResourcesRequest.js';
import type { UpdatePodSandboxResourcesResponse } from '../generated/runtime/v1/UpdatePodSandboxResourcesResponse.js';
import type { UpdateRuntimeConfigRequest__Output } from '../generated/runtime/v1/UpdateRuntimeConfigRequest.js';
import type { UpdateRuntimeConfigResponse } from '../generated/runtime/v1/UpdateRuntimeConfigResponse.js';
import type { VersionRequest__Output } from '../generated/runtime/v1/VersionRequest.js';
import type { VersionResponse } from '../generated/runtime/v1/VersionResponse.js';
import { silentLogger, type Logger } from '../log.js';
import { systemClock, type Clock } from './clock.js';
import { execSync } from './container-exec-sync.js';
import { containerSpecs, createContainer } from './container-create.js';
import { removeContainer } from './container-remove.js';
import { handleContainerExit, startContainer } from './container-start.js';
import { containerStatus, listContainers } from './container-status.js';
import { forceStop, stopContainer } from './container-stop.js';
import { reopenContainerLog, updateContainerResources } from './container-update.js';
import type { CriRuntime } from './cri-runtime.js';
import { RuntimeError } from './errors.js';
import { RandomSource } from './ids.js';
import { LogFileHandles } from './logging/cri-log-writer.js';
import { imageFsInfo, imageStatus, listImages, pullImage, removeImage } from './image-service.js';
import { SimulatedRegistry } from './images/catalogue.js';
import { listMetricDescriptors, listPodSandboxMetrics } from './metrics.js';
import { registerBuiltinCommands } from './process/builtin-commands.js';
import { CommandRegistry } from './process/command-registry.js';
import type { RuntimeContext, RuntimeSettings } from './runtime-context.js';
import { runtimeConfig, status, updateRuntimeConfig } from './runtime-status.js';
import { runPodSandbox } from './sandbox-run.js';
import { listPodSandbox, podSandboxStatus, updatePodSandboxResources } from './sandbox-status.js';
import { removePodSandbox, stopPodSandbox } from './sandbox-stop.js';
import { containerStats, listContainerStats, listPodSandboxStats, podSandboxStats } from './stats.js';
import { ContainerStore } from './store/container-store.js';
import { Interner } from './store/intern.js';
import { ImageStore } from './store/image-store.js';
import { SandboxStore } from './store/sandbox-store.js';
import { version } from './version.js';
import { WindowsRuntime, type WindowsRuntimeOptions } from './windows/windows-runtime.js';

export interface NodeRuntimeOptions {
  /** Directory the runtime owns: runtime-managed logs (`pods/`, `containers/`) and, for the Windows path, credential spec files. */
  stateDir: string;
  logger?: Logger;
  clock?: Clock;
  /** Commands the emulator knows; default: a registry of this runtime's own. The built-in commands are added to it. */
  commands?: CommandRegistry;
  registry?: SimulatedRegistry;
  /** Runtime handlers RunPodSandbox accepts. Default `['', 'runc', 'runhcs-wcow-process']`. */
  runtimeHandlers?: string[];
  /** OS of a sandbox whose config has no `windows` section. Default 'linux'. */
  defaultSandboxOs?: 'linux' | 'windows';
  /** Simulated pull latency in milliseconds. Default 5. */
  pullDelayMs?: number;
  cgroupDriver?: 'systemd' | 'cgroupfs';
  /** Pod CIDR used until UpdateRuntimeConfig sets one. Default 10.88.0.0/16. */
  podCidr?: string;
  /** References pulled at open (e.g. the pause image). */
  preloadImages?: string[];
  runtimeName?: string;
  runtimeVersion?: string;
  /** Options of the Windows path (node file, AD mode, credential spec transport, test faults). */
  windows?: WindowsRuntimeOptions;
}

/**
 * The simulated node runtime: in-memory stores with the CRI state machines, a simulated image
 * registry, and containers whose processes run in the command emulator and write real CRI log
 * files. State lives in memory for the life of the instance; `close` stops every simulated
 * process and removes the runtime-owned files.
 */
export class NodeRuntime implements CriRuntime {
  private closed = false;

  private constructor(
    private readonly ctx: RuntimeContext,
    private readonly listeners: Set<(ev: ContainerEventResponse) => void>,
  ) {}

  static async open(options: NodeRuntimeOptions): Promise<NodeRuntime> {
    if (options.stateDir === '') throw new RuntimeError('InvalidArgument', 'stateDir must not be empty');
    const settings: RuntimeSettings = {
      stateDir: resolve(options.stateDir),
      runtimeName: options.runtimeName ?? 'cri-winsim',
      runtimeVersion: options.runtimeVersion ?? '0.1.0',
      runtimeHandlers: options.runtimeHandlers ?? ['', 'runc', 'runhcs-wcow-process'],
      defaultSandboxOs: options.defaultSandboxOs ?? 'linux',
      pullDelayMs: options.pullDelayMs ?? 5,
      cgroupDriver: options.cgroupDriver ?? 'systemd',
      windows: options.windows ?? {},
    };
    // The node file is checked before anything is created or reset.
    const preparedWindows = await WindowsRuntime.prepare(settings.windows);
    await mkdir(settings.stateDir, { recursive: true, mode: 0o700 });
    // State is in memory: runtime-owned logs of an earlier instance belong to nothing now.
    await Promise.all(['pods', 'containers'].map((d) => rm(join(settings.stateDir, d), { recursive: true, force: true })));
    const commands = options.commands ?? new CommandRegistry();
    registerBuiltinCommands(commands);
    let hostPid = 1000;
    const listeners = new Set<(ev: ContainerEventResponse) => void>();
    const logger = options.logger ?? silentLogger();
    // Leftover credential specs of an earlier instance are swept before anything serves.
    // `subsystem`, not `component`: the caller's logger may bind `component` already, and pino
    // would print the key twice.
    const load = new CallLoad();
    const random = new RandomSource();
    const windows = await WindowsRuntime.open(preparedWindows, settings.stateDir, commands, logger.child({ subsystem: 'windows' }), load, random);
    const interner = new Interner();
    const ctx: RuntimeContext = {
      settings,
      logger,
      clock: options.clock ?? systemClock,
      sandboxes: new SandboxStore(interner),
      containers: new ContainerStore(interner, containerSpecs),
      images: new ImageStore(),
      registry: options.registry ?? new SimulatedRegistry(),
      commands,
      network: { podCidr: options.podCidr ?? '10.88.0.0/16', nextHost: 2 },
      windows,
      load,
      random,
      logFiles: new LogFileHandles(undefined, load.tidyUp),
      onLogError: (err, path) => logger.warn({ err, logPath: path }, 'writing the container log failed'),
      onContainerExit: (container, exit) => handleContainerExit(ctx, container, exit),
      nextHostPid: () => ++hostPid,
      hasEventListeners: () => listeners.size > 0,
      publish: (event) => {
        for (const listener of listeners) {
          try {
            listener(event);
          } catch (err) {
            logger.warn({ err }, 'container event listener failed');
          }
        }
      },
    };
    const runtime = new NodeRuntime(ctx, listeners);
    for (const ref of options.preloadImages ?? []) {
      await pullImage({ ...ctx, settings: { ...settings, pullDelayMs: 0 } }, {
        image: { image: ref, annotations: {}, user_specified_image: ref, runtime_handler: '', image_ref: '' },
        auth: null,
        sandbox_config: null,
      });
    }
    logger.info({ stateDir: settings.stateDir }, 'runtime ready');
    return runtime;
  }

  /** Stops every simulated process, flushes and closes the logs, removes runtime-owned files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const containers = [...this.ctx.containers.all()];
    await Promise.all(containers.map((c) => forceStop(this.ctx, c)));
    await Promise.all(containers.map((c) => c.live.logWriter?.close()));
    this.listeners.clear();
    const { stateDir } = this.ctx.settings;
    await Promise.all(['pods', 'containers'].map((d) => rm(join(stateDir, d), { recursive: true, force: true })));
    await this.ctx.windows.close();
    this.ctx.load.tidyUp.now();
    this.ctx.logger.info('runtime closed');
  }

  /**
   * Credential specs left behind that no container operation will remove (0 is the only good
   * value): the files or registry values no live container refers to. For the metrics' gauge.
   */
  credentialSpecLeaks(): Promise<number> {
    return countCredentialSpecLeaks(this.ctx);
  }

  /** The stores and settings, for tests and for the Windows path's own modules. */
  get context(): RuntimeContext {
    return this.ctx;
  }

  private async call<T>(rpc: string, fn: () => T | Promise<T>): Promise<T> {
    if (this.closed) throw new RuntimeError('Unavailable', `runtime is closed: ${rpc} refused`);
    this.ctx.load.enter();
    try {
      return await fn();
    } catch (err) {
      if (err instanceof RuntimeError) throw err;
      this.ctx.logger.error({ err, rpc }, 'unexpected runtime failure');
      throw new RuntimeError('Internal', `${rpc}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    } finally {
      this.ctx.load.leave();
    }
  }

  version(req: VersionRequest__Output): Promise<VersionResponse> {
    return this.call('Version', () => version(this.ctx, req));
  }
  status(req: StatusRequest__Output): Promise<StatusResponse> {
    return this.call('Status', () => status(this.ctx, req));
  }
  runtimeConfig(_req: RuntimeConfigRequest__Output): Promise<RuntimeConfigResponse> {
    return this.call('RuntimeConfig', () => runtimeConfig(this.ctx));
  }
  updateRuntimeConfig(req: UpdateRuntimeConfigRequest__Output): Promise<UpdateRuntimeConfigResponse> {
    return this.call('UpdateRuntimeConfig', () => updateRuntimeConfig(this.ctx, req));
  }
  runPodSandbox(req: RunPodSandboxRequest__Output): Promise<RunPodSandboxResponse> {
    return this.call('RunPodSandbox', () => runPodSandbox(this.ctx, req));
  }
  stopPodSandbox(req: StopPodSandboxRequest__Output): Promise<StopPodSandboxResponse> {
    return this.call('StopPodSandbox', () => stopPodSandbox(this.ctx, req));
  }
  removePodSandbox(req: RemovePodSandboxRequest__Output): Promise<RemovePodSandboxResponse> {
    return this.call('RemovePodSandbox', () => removePodSandbox(this.ctx, req));
  }
  podSandboxStatus(req: PodSandboxStatusRequest__Output): Promise<PodSandboxStatusResponse> {
    return this.call('PodSandboxStatus', () => podSandboxStatus(this.ctx, req));
  }
  listPodSandbox(req: ListPodSandboxRequest__Output): Promise<ListPodSandboxResponse> {
    return this.call('ListPodSandbox', () => listPodSandbox(this.ctx, req));
  }
  createContainer(req: CreateContainerRequest__Output): Promise<CreateContainerResponse> {
    return this.call('CreateContainer', () => createContainer(this.ctx, req));
  }
  startContainer(req: StartContainerRequest__Output): Promise<StartContainerResponse> {
    return this.call('StartContainer', () => startContainer(this.ctx, req));
  }
  stopContainer(req: StopContainerRequest__Output): Promise<StopContainerResponse> {
    return this.call('StopContainer', () => stopContainer(this.ctx, req));
  }
  removeContainer(req: RemoveContainerRequest__Output): Promise<RemoveContainerResponse> {
    return this.call('RemoveContainer', () => removeContainer(this.ctx, req));
  }
  listContainers(req: ListContainersRequest__Output): Promise<ListContainersResponse> {
    return this.call('ListContainers', () => listContainers(this.ctx, req));
  }
  containerStatus(req: ContainerStatusRequest__Output): Promise<ContainerStatusResponse> {
    return this.call('ContainerStatus', () => containerStatus(this.ctx, req));
  }
  updateContainerResources(req: UpdateContainerResourcesRequest__Output): Promise<UpdateContainerResourcesResponse> {
    return this.call('UpdateContainerResources', () => updateContainerResources(this.ctx, req));
  }
  reopenContainerLog(req: ReopenContainerLogRequest__Output): Promise<ReopenContainerLogResponse> {
    return this.call('ReopenContainerLog', () => reopenContainerLog(this.ctx, req));
  }
  execSync(req: ExecSyncRequest__Output): Promise<ExecSyncResponse> {
    return this.call('ExecSync', () => execSync(this.ctx, req));
  }
  containerStats(req: ContainerStatsRequest__Output): Promise<ContainerStatsResponse> {
    return this.call('ContainerStats', () => containerStats(this.ctx, req));
  }
  listContainerStats(req: ListContainerStatsRequest__Output): Promise<ListContainerStatsResponse> {
    return this.call('ListContainerStats', () => listContainerStats(this.ctx, req));
  }
  podSandboxStats(req: PodSandboxStatsRequest__Output): Promise<PodSandboxStatsResponse> {
    return this.call('PodSandboxStats', () => podSandboxStats(this.ctx, req));
  }
  listPodSandboxStats(req: ListPodSandboxStatsRequest__Output): Promise<ListPodSandboxStatsResponse> {
    return this.call('ListPodSandboxStats', () => listPodSandboxStats(this.ctx, req));
  }
  listMetricDescriptors(_req: ListMetricDescriptorsRequest__Output): Promise<ListMetricDescriptorsResponse> {
    return this.call('ListMetricDescriptors', () => listMetricDescriptors());
  }
  listPodSandboxMetrics(_req: ListPodSandboxMetricsRequest__Output): Promise<ListPodSandboxMetricsResponse> {
    return this.call('ListPodSandboxMetrics', () => listPodSandboxMetrics(this.ctx));
  }
  updatePodSandboxResources(req: UpdatePodSandboxResourcesRequest__Output): Promise<UpdatePodSandboxResourcesResponse> {
    return this.call('UpdatePodSandboxResources', () => updatePodSandboxResources(this.ctx, req));
  }
  listImages(req: ListImagesRequest__Output): Promise<ListImagesResponse> {
    return this.call('ListImages', () => listImages(this.ctx, req));
  }
  imageStatus(req: ImageStatusRequest__Output): Promise<ImageStatusResponse> {
    return this.call('ImageStatus', () => imageStatus(this.ctx, req));
  }
  pullImage(req: PullImageRequest__Output): Promise<PullImageResponse> {
    return this.call('PullImage', () => pullImage(this.ctx, req));
  }
  removeImage(req: RemoveImageRequest__Output): Promise<RemoveImageResponse> {
    return this.call('RemoveImage', () => removeImage(this.ctx, req));
  }
  imageFsInfo(_req: ImageFsInfoRequest__Output): Promise<ImageFsInfoResponse> {
    return this.call('ImageFsInfo', () => imageFsInfo(this.ctx));
  }

  subscribeContainerEvents(listener: (ev: ContainerEventResponse) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
