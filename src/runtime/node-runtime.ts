import { mkdir, rm } from 'node:fs/promises';
import { MEASURED_TUNING, tuningParts, type RuntimeTuning } from '../tuning/runtime-tuning.js';
import { join, resolve } from 'node:path';
import type { ContainerConfig__Output } from '../generated/runtime/v1/ContainerConfig.js';
import type { ContainerEventResponse } from '../generated/runtime/v1/ContainerEventResponse.js';
import { silentLogger, type Logger } from '../log.js';
import { systemClock, type Clock } from './clock.js';
import { containerSpecsFor } from './container-create.js';
import { handleContainerExit } from './container-start.js';
import { forceStop } from './container-stop.js';
import { RUNTIME_RPCS, type CriRuntime } from './cri-runtime.js';
import { RuntimeError } from './errors.js';
import { chooseRuntimeFlavor, openRuntimeFlavor } from './flavors/select.js';
import { RandomSource } from './ids.js';
import { LogFileHandles } from './logging/cri-log-writer.js';
import { pullImage } from './image-service.js';
import { imageFile, type SimulatedRegistry } from './images/catalogue.js';
import { ImageWorld } from './images/image-world.js';
import { loadImagesFile, parseUnknownImageRule, type ImagesSection } from './images/images-file.js';
import { HYPERV_HANDLER, PROCESS_HANDLER } from './images/windows-compat.js';
import { prepareCredentialSpecValidation } from './windows/credential-spec.js';
import { DEFAULT_POD_CIDR, loopbackPodCidr, PodIpPool } from './network/pod-ip-pool.js';
import { SandboxSockets } from './network/sandbox-sockets.js';
import { HostPorts } from './network/host-ports.js';
import { StreamingServer, parseStreamingAddress } from './streaming/streaming-server.js';
import { StreamingOnFirstUse, type RuntimeStreaming } from './streaming/streaming-on-first-use.js';
import { registerBuiltinCommands } from '../emulator/builtin-commands.js';
import { CommandRegistry } from '../emulator/command-registry.js';
import { rpcServerClass, type AnyRpcHandler } from './rpc.js';
import { CallConditions, type CallConditionsOptions } from './call-conditions/call-conditions.js';
import { withNodeFileTiming } from './call-conditions/node-file-timing.js';
import { normaliseImageReference } from './images/reference.js';
import type { RuntimeContext, RuntimeSettings } from './runtime-context.js';
import { ContainerStore, RECORD_CONFIG_FIELDS } from './store/container-store.js';
import { ImageStore } from './store/image-store.js';
import { SandboxStore } from './store/sandbox-store.js';
import { WindowsRuntime, type WindowsRuntimeOptions } from './windows/windows-runtime.js';
import { METADATA_DB_FILE, MetadataDb, type MetadataFile } from './store/metadata-db.js';
import { encodeContainer, encodeImage, encodeNetwork, encodeSandbox, NETWORK_RECORD_ID } from './store/record-codec.js';
import { recoverState, sweepRuntimeLogDirectories } from './recovery.js';
import type { PidLockFile } from './pid-lock-file.js';
import { lockStateDir } from './state-dir-lock.js';
import { ACTIVE_DIRECTORY_RPCS, type ActiveDirectoryApi } from './active-directory.js';
import type { LiveDomain } from './windows/live-domain.js';
import { DOMAIN_RECORD_ID, encodeDomain } from './store/domain-record.js';
import { explainContainer, type IdentityRuntime } from './identity-explain.js';
import type { ExplainContainerRequest__Output } from '../generated/criwinsim/identity/v1/ExplainContainerRequest.js';
import type { ExplainContainerResponse } from '../generated/criwinsim/identity/v1/ExplainContainerResponse.js';

/** Every change of a record is written to the metadata store (group-committed per event-loop turn). */
function persistChanges(ctx: RuntimeContext, db: MetadataDb): void {
  ctx.images.onRecordChange((id, image) => (image === undefined ? db.removed('image', id) : db.changed('image', id, () => encodeImage(image))));
  ctx.sandboxes.onRecordChange((id, sandbox) => (sandbox === undefined ? db.removed('sandbox', id) : db.changed('sandbox', id, () => encodeSandbox(sandbox))));
  ctx.containers.onRecordChange((id, container) =>
    container === undefined ? db.removed('container', id) : db.changed('container', id, () => encodeContainer(container, ctx.containers.configOf(container))),
  );
  ctx.network.onPodCidrChange = () => db.changed('meta', NETWORK_RECORD_ID, () => encodeNetwork(ctx.network));
  ctx.windows.domain.onChange(() => db.changed('meta', DOMAIN_RECORD_ID, () => encodeDomain(ctx.windows.domain.current)));
}

/** The security options of every container the runtime holds (what the leak count must not count). */
function* liveSecurityOptions(ctx: RuntimeContext): Iterable<readonly string[]> {
  for (const c of ctx.containers.all()) yield c.securityOptions;
}

export interface NodeRuntimeOptions {
  /** Directory the runtime owns: runtime-managed logs (`pods/`, `containers/`) and, for the Windows path, credential spec files. */
  stateDir: string;
  logger?: Logger;
  clock?: Clock;
  /** Commands the emulator knows; default: a registry of this runtime's own. The built-in commands are added to it. */
  commands?: CommandRegistry;
  /**
   * The built-in catalogue (tests may give a smaller one). Immutable once built, so the runtimes
   * of one process may share one (node mode does); default: a catalogue of this runtime's own.
   */
  registry?: SimulatedRegistry;
  /** `--images FILE` and `--unknown-images` (docs/images.md); the node file's `images:` section adds to them. */
  images?: { file?: string | undefined; unknownImages?: string | undefined };
  /**
   * Runtime handlers RunPodSandbox accepts. Default `['', 'runc', 'runhcs-wcow-process']` and
   * `runhcs-wcow-hypervisor` when the node offers Hyper-V isolation.
   */
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
  /**
   * Listen when the first Exec, Attach or PortForward asks for a URL instead of at open (node
   * mode, where most nodes never stream). Default false: the server listens at open, so a taken
   * address fails the start.
   */
  streamingOnFirstUse?: boolean;
  /** References pulled at open (e.g. the pause image). */
  preloadImages?: string[];
  runtimeName?: string;
  runtimeVersion?: string;
  /** Options of the Windows path (node file, AD mode, credential spec transport, test faults). */
  windows?: WindowsRuntimeOptions;
  /**
   * `--latency-profile`, `--seed`, `--inject-fault` (docs/latency-and-faults.md); the node file's
   * `timing` section fills in what these leave out.
   */
  callConditions?: CallConditionsOptions;
  /**
   * Keep the metadata in the state directory's database (store/metadata-db.ts) and reload it at
   * open; `close` then leaves the state directory as it is. Default false: state in memory only,
   * runtime-owned files removed at open and close.
   */
  durable?: boolean;
  /** With `durable`: the node restarted; reloaded containers are EXITED (255, Unknown), sandboxes NOTREADY. */
  simulateReboot?: boolean;
  /**
   * With `durable`: keep the metadata in this database, shared with the other runtimes of the
   * process, under `scope`, instead of a database in the state directory (node mode: one open
   * file for a thousand nodes instead of three descriptors each).
   */
  sharedMetadata?: { file: MetadataFile; scope: string };
  /**
   * The open log files' budget, shared with the other runtimes of the process (node mode: the
   * descriptors of a process are bounded, whatever the number of nodes). Default: one of its own.
   */
  logFiles?: LogFileHandles;
  /** The process tricks (src/tuning): default the measured ones. */
  tuning?: RuntimeTuning;
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
export class NodeRuntime extends rpcServerClass(RUNTIME_RPCS) implements CriRuntime, IdentityRuntime {
  private closed = false;
  /**
   * The ActiveDirectory service (proto/criwinsim/ad/v1): `ad get|apply` over the CRI socket; the
   * gRPC edge serves it next to the CRI services.
   */
  readonly activeDirectory: ActiveDirectoryApi;

  private constructor(
    private readonly ctx: RuntimeContext,
    private readonly listeners: Set<(ev: ContainerEventResponse) => void>,
    private readonly conditions: CallConditions | undefined,
    private readonly db: MetadataDb | undefined,
    private readonly lock: PidLockFile,
  ) {
    super();
    this.activeDirectory = {
      get: (request) => this.run('Get', ACTIVE_DIRECTORY_RPCS.Get, request) as ReturnType<ActiveDirectoryApi['get']>,
      apply: (request) => this.run('Apply', ACTIVE_DIRECTORY_RPCS.Apply, request) as ReturnType<ActiveDirectoryApi['apply']>,
      startScenario: (request) => this.run('StartScenario', ACTIVE_DIRECTORY_RPCS.StartScenario, request) as ReturnType<ActiveDirectoryApi['startScenario']>,
    };
  }

  /**
   * The simulated Active Directory as it is now, and its one apply path for in-process callers
   * (`runtime.domain.apply(desired, source)`, e.g. a controller watching a domain resource).
   * A change is persisted with the runtime's state when the runtime is durable.
   */
  get domain(): LiveDomain {
    return this.ctx.windows.domain;
  }

  static async open(options: NodeRuntimeOptions): Promise<NodeRuntime> {
    if (options.stateDir === '') throw new RuntimeError('InvalidArgument', 'stateDir must not be empty');
    const settings: RuntimeSettings = {
      stateDir: resolve(options.stateDir),
      runtimeName: options.runtimeName ?? 'cri-winsim',
      runtimeVersion: options.runtimeVersion ?? '0.1.0',
      runtimeHandlers: options.runtimeHandlers ?? [],
      defaultSandboxOs: options.defaultSandboxOs ?? 'linux',
      pullDelayMs: options.pullDelayMs ?? 5,
      cgroupDriver: options.cgroupDriver ?? 'systemd',
      windows: options.windows ?? {},
    };
    const podCidr = loopbackPodCidr(options.podCidr ?? DEFAULT_POD_CIDR, 'podCidr');
    const streamingAddress = options.streamingAddress ?? '127.0.0.1:0';
    parseStreamingAddress(streamingAddress);
    // The runtime flavor and the node file are checked before anything is created or reset.
    const flavorChoice = chooseRuntimeFlavor(settings.windows);
    const preparedWindows = await WindowsRuntime.prepare(settings.windows, flavorChoice);
    const logger = options.logger ?? silentLogger();
    const node = preparedWindows.node;
    // containerd's handlers on a Windows node (and runc for the Linux sandboxes critest makes).
    if (options.runtimeHandlers === undefined) {
      settings.runtimeHandlers = ['', 'runc', PROCESS_HANDLER, ...(node.isolation.includes('hyperv') ? [HYPERV_HANDLER] : [])];
    }
    // The images file is checked before anything is created, like the node file.
    const unknownImages = options.images?.unknownImages === undefined ? undefined : parseUnknownImageRule(options.images.unknownImages);
    const imageSections: ImagesSection[] = [];
    if (options.images?.file !== undefined && options.images.file !== '') imageSections.push(await loadImagesFile(options.images.file));
    if (node.file.images !== undefined) imageSections.push(node.file.images);
    const imageWorld = new ImageWorld({ sections: imageSections, unknownImages, hostBuild: node.osBuild, ...(options.registry === undefined ? {} : { catalogue: options.registry }) });
    // Before anything is opened: a bad `timing` section in the node file fails here. The image
    // size lookup reads the image store only when a PullImage is delayed.
    const images = new ImageStore();
    const conditions = new CallConditions(withNodeFileTiming(options.callConditions ?? {}, node.file.timing, node.source), node.name, (image) => {
      try {
        const reference = normaliseImageReference(image);
        return images.resolve(reference) !== undefined ? 0 : imageWorld.sizeOf(reference);
      } catch {
        return undefined;
      }
    });
    if (conditions.active) {
      logger.info({ latencyProfile: conditions.profile.name, seed: conditions.seed, faults: conditions.faultSpecs() }, 'simulating call latency and faults');
    }
    await mkdir(settings.stateDir, { recursive: true, mode: 0o700 });
    // Before anything in the directory is reset or opened: another live runtime may be using it.
    const lock = await lockStateDir(settings.stateDir);
    try {
      const durable = options.durable === true;
      // Without durability state is in memory: runtime-owned logs of an earlier instance belong to
      // nothing now, and a database a durable run left goes too (a later durable start must not
      // bring back records whose logs and credential specs this run removes).
      if (!durable) {
        const leftovers = ['pods', 'containers', METADATA_DB_FILE, `${METADATA_DB_FILE}-wal`, `${METADATA_DB_FILE}-shm`];
        await Promise.all(leftovers.map((d) => rm(join(settings.stateDir, d), { recursive: true, force: true })));
      }
      const commands = options.commands ?? new CommandRegistry();
      registerBuiltinCommands(commands, imageFile);
      let hostPid = 1000;
      const listeners = new Set<(ev: ContainerEventResponse) => void>();
      const metadataLogger = logger.child({ subsystem: 'metadata' });
      const shared = options.sharedMetadata;
      const db = !durable ? undefined : shared === undefined ? MetadataDb.open(settings.stateDir, metadataLogger) : MetadataDb.openShared(shared.file, shared.scope, settings.stateDir, metadataLogger);
      // Leftover credential specs of an earlier instance are swept before anything serves.
      // `subsystem`, not `component`: the caller's logger may bind `component` already, and pino
      // would print the key twice.
      const tuning = tuningParts<ContainerConfig__Output, (typeof RECORD_CONFIG_FIELDS)[number]>(options.tuning ?? MEASURED_TUNING, RECORD_CONFIG_FIELDS);
      const load = tuning.fileCalls;
      const random = new RandomSource();
      const windows = await WindowsRuntime.open(preparedWindows, settings.stateDir, commands, logger.child({ subsystem: 'windows' }), load, random, !durable);
      // Chosen once: the handlers see only this (ctx.flavor), with the Windows path it stages through.
      const flavor = openRuntimeFlavor(flavorChoice, windows);
      let streaming: RuntimeStreaming;
      try {
        const streamingLogger = logger.child({ subsystem: 'streaming' });
        streaming = options.streamingOnFirstUse === true ? new StreamingOnFirstUse(streamingAddress, streamingLogger) : await StreamingServer.listen(streamingAddress, streamingLogger);
      } catch (err) {
        db?.close();
        await windows.close();
        throw new RuntimeError('InvalidArgument', `streaming address ${streamingAddress}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      const ctx: RuntimeContext = {
        settings,
        logger,
        clock: options.clock ?? systemClock,
        sandboxes: new SandboxStore(tuning.strings),
        containers: new ContainerStore(containerSpecsFor(flavor), tuning.strings, tuning.containerConfigs),
        images,
        registry: imageWorld,
        commands,
        network: { podIps: new PodIpPool(podCidr), updatedPodCidr: '', kubeletPodCidr: '', onPodCidrChange: undefined, forwards: new SandboxSockets(), hostPorts: new HostPorts() },
        streaming,
        windows,
        flavor,
        load,
        random,
        logFiles: options.logFiles ?? new LogFileHandles(undefined, load.tidyUp),
        onLogError: (err, path) => logger.warn({ err, logPath: path }, 'writing the container log failed'),
        onContainerExit: (container, exit) => handleContainerExit(ctx, container, exit),
        committed: () => db?.committed() ?? Promise.resolve(),
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
      if (db !== undefined) {
        try {
          const report = await recoverState(ctx, db, options.simulateReboot === true);
          hostPid = Math.max(hostPid, report.maxHostPid);
          // The sweep keeps the credential specs the reloaded containers that never started still
          // name (a started one never reads its spec again: one killed before its removal leaves
          // it behind; after a simulated reboot a never-started container is EXITED and keeps it).
          const swept = await windows.handoff.sweep([...ctx.containers.all()].filter((c) => c.status.startedAtNanos === 0n).map((c) => c.securityOptions));
          const sweptLogDirectories = await sweepRuntimeLogDirectories(ctx);
          logger.info(
            { images: report.images, domainGeneration: report.domainGeneration, sandboxes: report.sandboxes, containers: report.containers, resumed: report.resumed, hostPorts: report.hostPorts, hostPortFailures: report.hostPortFailures, skipped: report.skipped.length, sweptCredentialSpecs: swept.length, sweptLogDirectories, podCidr: ctx.network.podIps.range, reboot: options.simulateReboot === true },
            'runtime state recovered',
          );
          if (report.podCidr !== undefined && report.podCidr !== podCidr.text) {
            logger.info({ podCidr: report.podCidr, flag: podCidr.text }, 'the pod CIDR UpdateRuntimeConfig set before the restart is kept over the configured one');
          }
          persistChanges(ctx, db);
        } catch (err) {
          db.close();
          await streaming.close();
          await windows.close([...ctx.containers.all()].map((c) => c.securityOptions));
          throw err;
        }
      }
      const runtime = new NodeRuntime(ctx, listeners, conditions.active ? conditions : undefined, db, lock);
      // After recovery: a scenario changes the domain the runtime came back with.
      const scenario = preparedWindows.scenario;
      if (scenario !== undefined) windows.startScenario(scenario.document, scenario.source, scenario.seed);
      for (const ref of options.preloadImages ?? []) {
        await pullImage({ ...ctx, settings: { ...settings, pullDelayMs: 0 } }, {
          image: { image: ref, annotations: {}, user_specified_image: ref, runtime_handler: '', image_ref: '' },
          auth: null,
          sandbox_config: null,
        });
      }
      // Records read and nothing changed since: no connection until the first change (an idle
      // node of a thousand holds none).
      db?.release();
      logger.info({ stateDir: settings.stateDir }, 'runtime ready');
      return runtime;
    } catch (err) {
      await lock.release();
      throw err;
    }
  }

  /** Stops every simulated process, flushes and closes the logs, removes runtime-owned files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.conditions?.close();
    // A durable runtime commits and closes its store first: stopping the simulated processes
    // below is the runtime going away, not the containers exiting (containerd's shims live on).
    this.db?.close();
    const containers = [...this.ctx.containers.all()];
    await Promise.all(containers.map((c) => forceStop(this.ctx, c)));
    await Promise.all(containers.map((c) => c.live.logWriter?.close()));
    this.listeners.clear();
    await this.ctx.streaming.close();
    this.ctx.network.hostPorts.releaseAll();
    const { stateDir } = this.ctx.settings;
    if (this.db === undefined) await Promise.all(['pods', 'containers'].map((d) => rm(join(stateDir, d), { recursive: true, force: true })));
    await this.ctx.windows.close(this.db === undefined ? [] : containers.map((c) => c.securityOptions));
    this.ctx.load.tidyUp.now();
    // Last: until here the state directory is still being written.
    await this.lock.release();
    this.ctx.logger.info('runtime closed');
  }

  /**
   * Credential specs left behind that no container operation will remove (0 is the only good
   * value): the files or registry values no live container refers to. For the metrics' gauge.
   */
  credentialSpecLeaks(): Promise<number> {
    return this.ctx.windows.countLeaks(liveSecurityOptions(this.ctx));
  }

  /** Makes what the first calls would make on first use (the credential spec schema), now. */
  prepareFirstCalls(): void {
    prepareCredentialSpecValidation();
  }

  /** The stores and settings, for tests and for the Windows path's own modules. */
  get context(): RuntimeContext {
    return this.ctx;
  }

  protected async serve(rpc: string, handler: AnyRpcHandler, request: unknown, deadlineMs?: number): Promise<unknown> {
    if (this.closed) throw new RuntimeError('Unavailable', `runtime is closed: ${rpc} refused`);
    // Latency and faults asked for (--latency-profile, --inject-fault): before the handler, so a
    // failed call has done nothing.
    if (this.conditions !== undefined) {
      await this.conditions.apply(rpc, request, deadlineMs);
    }
    return this.run(rpc, handler, request);
  }

  /** Runs a handler: refused once closed; answers once its changes are committed (durable). */
  private async run(rpc: string, handler: AnyRpcHandler | ((ctx: RuntimeContext, request: never) => unknown), request: unknown): Promise<unknown> {
    if (this.closed) throw new RuntimeError('Unavailable', `runtime is closed: ${rpc} refused`);
    this.ctx.load.enter();
    try {
      const response = await handler(this.ctx, request as never);
      // Group commit: the answer waits for the transaction of this turn's changes (metadata-db.ts).
      const committed = this.db?.committed();
      if (committed !== undefined) {
        try {
          await committed;
        } catch (err) {
          // The change is made in memory and will be written with the next commit; the caller
          // learns that it is not durable yet (our text).
          const full = (err as { code?: unknown }).code === 'SQLITE_FULL';
          throw new RuntimeError(full ? 'ResourceExhausted' : 'Internal', `${rpc}: the metadata store could not commit the change: ${(err as Error).message}`, { cause: err });
        }
      }
      return response;
    } catch (err) {
      if (err instanceof RuntimeError) throw err;
      this.ctx.logger.error({ err, rpc }, 'unexpected runtime failure');
      throw new RuntimeError('Internal', `${rpc}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    } finally {
      this.ctx.load.leave();
    }
  }

  /** The streaming server's base URL (http://127.0.0.1:port); '' until it listens (`streamingOnFirstUse`). */
  get streamingUrl(): string {
    return this.ctx.streaming.url;
  }

  /** Identity.ExplainContainer (cri-winsim's own service on the CRI socket: identity-explain.ts). */
  explainContainer(request: ExplainContainerRequest__Output, deadlineMs?: number): Promise<ExplainContainerResponse> {
    return this.serve('ExplainContainer', explainContainer, request, deadlineMs) as Promise<ExplainContainerResponse>;
  }

  subscribeContainerEvents(listener: (ev: ContainerEventResponse) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
