import type { Logger } from '../log.js';
import type { FileCalls } from '../tuning/file-calls.js';
import type { Clock } from './clock.js';
import type { ContainerEventResponse } from '../generated/runtime/v1/ContainerEventResponse.js';
import type { RuntimeFlavor } from './flavors/flavor.js';
import type { RandomSource } from './ids.js';
import type { ImageWorld } from './images/image-world.js';
import type { LogFileHandles } from './logging/cri-log-writer.js';
import type { ProcessExit } from '../emulator/simulated-process.js';
import type { CommandRegistry } from '../emulator/command-registry.js';
import type { ContainerRecord, ContainerStore } from './store/container-store.js';
import type { ImageStore } from './store/image-store.js';
import type { SandboxStore } from './store/sandbox-store.js';
import type { PodIpPool } from './network/pod-ip-pool.js';
import type { SandboxSockets } from './network/sandbox-sockets.js';
import type { HostPorts } from './network/host-ports.js';
import type { RuntimeStreaming } from './streaming/streaming-on-first-use.js';
import type { WindowsRuntime, WindowsRuntimeOptions } from './windows/windows-runtime.js';

/** Settings of a runtime instance after defaults are applied. */
export interface RuntimeSettings {
  stateDir: string;
  runtimeName: string;
  runtimeVersion: string;
  /** Runtime handlers RunPodSandbox accepts ('' is the default one). */
  runtimeHandlers: string[];
  /** OS of a sandbox whose config has no `windows` section. */
  defaultSandboxOs: 'linux' | 'windows';
  /** Simulated registry latency of a pull, milliseconds. */
  pullDelayMs: number;
  cgroupDriver: 'systemd' | 'cgroupfs';
  /** Options of the Windows path (node file, AD mode, credential spec transport…). */
  windows: WindowsRuntimeOptions;
}

/** The node's pod network: pod IPs from the pod CIDR (changed through UpdateRuntimeConfig). */
export interface NetworkSettings {
  readonly podIps: PodIpPool;
  /** The loopback pod CIDR UpdateRuntimeConfig set ('' while the pool uses `--pod-cidr`). */
  updatedPodCidr: string;
  /** A pod CIDR the kubelet sent that is not loopback: recorded, not used (docs/streaming.md). */
  kubeletPodCidr: string;
  /** Told when UpdateRuntimeConfig changed either of the two above (a durable runtime stores them). */
  onPodCidrChange: (() => void) | undefined;
  /** Port-forward connections per sandbox, ended at StopPodSandbox. */
  readonly forwards: SandboxSockets;
  /** Host ports bound for sandboxes' port mappings, released at StopPodSandbox. */
  readonly hostPorts: HostPorts;
}

/**
 * Everything the RPC handlers work on. Handlers are functions of (context, request) and keep no
 * state of their own; the stores own all state. Everything a runtime changes hangs off its
 * context: two runtimes in one process share nothing but immutable tables.
 */
export interface RuntimeContext {
  readonly settings: RuntimeSettings;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly sandboxes: SandboxStore;
  readonly containers: ContainerStore;
  readonly images: ImageStore;
  /** The images a pull can find: the user's images, the catalogue, the unknown-image rule. */
  readonly registry: ImageWorld;
  readonly commands: CommandRegistry;
  readonly network: NetworkSettings;
  /** The streaming server: Exec, Attach and PortForward URLs and their sessions. */
  readonly streaming: RuntimeStreaming;
  /** The Windows path: simulated node and AD, identity mode, credential spec hand-off. */
  readonly windows: WindowsRuntime;
  /**
   * Which real runtime this one reproduces on the Windows path (`--runtime-flavor`), chosen once
   * when the runtime opens: its spec options, credential spec hand-off and texts (flavors/).
   */
  readonly flavor: RuntimeFlavor;
  /** The runtime's file-call policy (it counts the calls in flight), and the tidy-up after replies. */
  readonly load: FileCalls;
  /** Random ids (sandboxes, containers, credential spec names). */
  readonly random: RandomSource;
  /** The containers' CRI log files: the open descriptors and the records' timestamps. */
  readonly logFiles: LogFileHandles;
  /** Told when writing a container log failed (one handler for the runtime's writers). */
  readonly onLogError: (err: Error, path: string) => void;
  /** Told when a container's init process exited (one handler for the runtime's containers). */
  readonly onContainerExit: (container: ContainerRecord, exit: ProcessExit) => Promise<void>;
  /** Settles once every change made so far is durable (at once for a runtime without a store). */
  committed(): Promise<void>;
  /** Simulated host pids for sandbox and container init processes. */
  nextHostPid(): number;
  /** Publishes a GetContainerEvents event. */
  publish(event: ContainerEventResponse): void;
  /** Whether anyone listens for events (building one costs a status per container of the pod). */
  hasEventListeners(): boolean;
}
