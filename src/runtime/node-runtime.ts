import { mkdir, rm } from 'node:fs/promises';
import { CallLoad } from './call-load.js';
import { countCredentialSpecLeaks } from './container-create-windows.js';
import { join, resolve } from 'node:path';
import type { ContainerEventResponse } from '../generated/runtime/v1/ContainerEventResponse.js';
import { silentLogger, type Logger } from '../log.js';
import { systemClock, type Clock } from './clock.js';
import { containerSpecsFor } from './container-create.js';
import { handleContainerExit } from './container-start.js';
import { forceStop } from './container-stop.js';
import { RUNTIME_RPCS, type CriRuntime } from './cri-runtime.js';
import { RuntimeError } from './errors.js';
import { RandomSource } from './ids.js';
import { LogFileHandles } from './logging/cri-log-writer.js';
import { pullImage } from './image-service.js';
import { SimulatedRegistry } from './images/catalogue.js';
import { DEFAULT_POD_CIDR, loopbackPodCidr, PodIpPool } from './network/pod-ip-pool.js';
import { SandboxSockets } from './network/sandbox-sockets.js';
import { HostPorts } from './network/host-ports.js';
import { StreamingServer, parseStreamingAddress } from './streaming/streaming-server.js';
import { registerBuiltinCommands } from './process/builtin-commands.js';
import { CommandRegistry } from './process/command-registry.js';
import { rpcServerClass, type AnyRpcHandler } from './rpc.js';
import type { RuntimeContext, RuntimeSettings } from './runtime-context.js';
import { ContainerStore } from './store/container-store.js';
import { Interner } from './store/intern.js';
import { ImageStore } from './store/image-store.js';
import { SandboxStore } from './store/sandbox-store.js';
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
  /**
   * Pod CIDR used until UpdateRuntimeConfig sets one: a range inside 127.0.0.0/8 (every pod IP
   * is a real loopback address). Default 127.10.0.0/16; nodes of one process each get their own.
   */
  podCidr?: string;
  /** Where the streaming server listens (`host:port` on loopback; port 0: a free one). Default 127.0.0.1:0. */
  streamingAddress?: string;
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
 *
 * Its RPC methods come from RUNTIME_RPCS (cri-runtime.ts): each one is `serve` with the RPC's
 * handler.
 */
export class NodeRuntime extends rpcServerClass(RUNTIME_RPCS) implements CriRuntime {
  private closed = false;

  private constructor(
    private readonly ctx: RuntimeContext,
    private readonly listeners: Set<(ev: ContainerEventResponse) => void>,
  ) {
    super();
  }

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
    const podCidr = loopbackPodCidr(options.podCidr ?? DEFAULT_POD_CIDR, 'podCidr');
    const streamingAddress = options.streamingAddress ?? '127.0.0.1:0';
    parseStreamingAddress(streamingAddress);
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
    let streaming: StreamingServer;
    try {
      streaming = await StreamingServer.listen(streamingAddress, logger.child({ subsystem: 'streaming' }));
    } catch (err) {
      await windows.close();
      throw new RuntimeError('InvalidArgument', `streaming address ${streamingAddress}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    const ctx: RuntimeContext = {
      settings,
      logger,
      clock: options.clock ?? systemClock,
      sandboxes: new SandboxStore(interner),
      containers: new ContainerStore(interner, containerSpecsFor(preparedWindows.flavor)),
      images: new ImageStore(),
      registry: options.registry ?? new SimulatedRegistry(),
      commands,
      network: { podIps: new PodIpPool(podCidr), kubeletPodCidr: '', forwards: new SandboxSockets(), hostPorts: new HostPorts() },
      streaming,
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
    await this.ctx.streaming.close();
    this.ctx.network.hostPorts.releaseAll();
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

  protected async serve(rpc: string, handler: AnyRpcHandler, request: unknown): Promise<unknown> {
    if (this.closed) throw new RuntimeError('Unavailable', `runtime is closed: ${rpc} refused`);
    this.ctx.load.enter();
    try {
      return await handler(this.ctx, request as never);
    } catch (err) {
      if (err instanceof RuntimeError) throw err;
      this.ctx.logger.error({ err, rpc }, 'unexpected runtime failure');
      throw new RuntimeError('Internal', `${rpc}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    } finally {
      this.ctx.load.leave();
    }
  }

  /** The streaming server's base URL (http://127.0.0.1:port). */
  get streamingUrl(): string {
    return this.ctx.streaming.url;
  }

  subscribeContainerEvents(listener: (ev: ContainerEventResponse) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
