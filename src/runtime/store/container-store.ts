import type { ContainerConfig__Output } from '../../generated/runtime/v1/ContainerConfig.js';
import type { Container } from '../../generated/runtime/v1/Container.js';
import type { ContainerResources } from '../../generated/runtime/v1/ContainerResources.js';
import type { ImageConfig } from '../images/catalogue.js';
import type { CriLogWriter } from '../logging/cri-log-writer.js';
import type { OciSpec } from '../oci/spec.js';
import type { ContainerFiles } from '../process/container-files.js';
import { ProcessTable } from '../process/process-table.js';
import type { SimulatedProcess } from '../process/simulated-process.js';
import { NameRegistry, RecordStore } from './record-store.js';

/** runtime.v1.ContainerState */
export const ContainerState = { CREATED: 0, RUNNING: 1, EXITED: 2, UNKNOWN: 3 } as const;
export type ContainerStateValue = (typeof ContainerState)[keyof typeof ContainerState];

const NAMES = ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'];
export const containerStateName = (state: number): string => NAMES[state] ?? `state ${state}`;

export interface ContainerStatusData {
  state: ContainerStateValue;
  startedAtNanos: bigint;
  finishedAtNanos: bigint;
  exitCode: number;
  reason: string;
  message: string;
  /** Simulated host pid of the init process while running (0 otherwise). */
  pid: number;
  /** Set while StartContainer runs, so a concurrent start or remove is refused. */
  starting: boolean;
  /** Set once RemoveContainer began; the container is not started again. */
  removing: boolean;
}

/** Handles of what is running for a container (not status: they change with it). */
export interface ContainerLive {
  process?: SimulatedProcess;
  logWriter?: CriLogWriter;
  /** Exec processes running now, to kill them when the container stops (created with the first). */
  execs?: Set<SimulatedProcess>;
  /** CPU time of finished exec processes, nanoseconds. */
  execCpuNanos: bigint;
  /** Settles once the init process exited and the container is EXITED with its log flushed. */
  exitHandled?: Promise<void>;
}

export interface ContainerRecord {
  readonly id: string;
  readonly sandboxId: string;
  /** The reserved name: `<name>_<pod name>_<namespace>_<pod uid>_<attempt>`. */
  readonly name: string;
  readonly config: ContainerConfig__Output;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  /** The image as the request named it, and what it resolved to. */
  readonly imageName: string;
  readonly imageId: string;
  readonly imageRef: string;
  readonly imageConfig: ImageConfig;
  readonly os: 'linux' | 'windows';
  readonly createdAtNanos: bigint;
  /** Absolute path of the CRI log file. */
  readonly logPath: string;
  /** Whether the log file lives in a runtime-owned directory (deleted with the container). */
  readonly runtimeOwnedLog: boolean;
  /** The OCI spec composed at create; the Windows path adds its options before it is stored. */
  ociSpec: OciSpec;
  /** Docker-style security options (`credentialspec=file://…`), set by the dockershim layer. */
  securityOptions: string[];
  /** Free-form platform state of the Windows path (credential spec file, identity, …). */
  platform: Record<string, unknown>;
  /** The effective user name commands print (`root`, `1002`, `ContainerUser`). */
  user: string;
  resources: ContainerResources | null;
  /** The PID namespace the container's processes live in (its own, or the pod's) and its private files. */
  readonly processes: ProcessTable;
  /** Whether it joined the pod's PID namespace (namespace_options.pid POD on Linux). */
  readonly sharesPodPid: boolean;
  readonly files: ContainerFiles;
  readonly live: ContainerLive;
  status: ContainerStatusData;
}

const TRANSITIONS = new Map<number, Set<number>>([
  [ContainerState.CREATED, new Set([ContainerState.RUNNING, ContainerState.EXITED, ContainerState.UNKNOWN])],
  [ContainerState.RUNNING, new Set([ContainerState.EXITED, ContainerState.UNKNOWN])],
  [ContainerState.UNKNOWN, new Set([ContainerState.EXITED])],
  [ContainerState.EXITED, new Set()],
]);

export function initialContainerStatus(): ContainerStatusData {
  return {
    state: ContainerState.CREATED,
    startedAtNanos: 0n,
    finishedAtNanos: 0n,
    exitCode: 0,
    reason: '',
    message: '',
    pid: 0,
    starting: false,
    removing: false,
  };
}

export function newContainerLive(): ContainerLive {
  return { execCpuNanos: 0n };
}

export { ProcessTable };

/**
 * Containers, by id, id prefix, state, labels and pod sandbox; names reserved until removal.
 * The list view is the CRI `Container` message.
 */
export class ContainerStore extends RecordStore<ContainerStatusData, ContainerRecord, Container> {
  readonly names = new NameRegistry('container');

  constructor() {
    super('container', TRANSITIONS, containerStateName, (record) => record.sandboxId);
  }
}
