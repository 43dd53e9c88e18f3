import type { PodSandbox } from '../../generated/runtime/v1/PodSandbox.js';
import type { PodSandboxConfig__Output } from '../../generated/runtime/v1/PodSandboxConfig.js';
import type { OciSpec } from '../oci/spec.js';
import type { ProcessTable } from '../../emulator/process-table.js';
import { UNSHARED_STRINGS, type StringTable } from '../../tuning/intern.js';
import { NameRegistry, RecordStore } from './record-store.js';

/** runtime.v1.PodSandboxState */
export const SandboxState = { READY: 0, NOTREADY: 1 } as const;
export type SandboxStateValue = (typeof SandboxState)[keyof typeof SandboxState];

export interface SandboxStatusData {
  state: SandboxStateValue;
  /** When the sandbox stopped (0n while ready). */
  stoppedAtNanos: bigint;
}

export interface SandboxRecord {
  readonly id: string;
  /** The reserved name: `<name>_<namespace>_<uid>_<attempt>`. */
  readonly name: string;
  readonly config: PodSandboxConfig__Output;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly runtimeHandler: string;
  readonly os: 'linux' | 'windows';
  readonly createdAtNanos: bigint;
  readonly hostname: string;
  readonly ip: string;
  /** Simulated pid of the sandbox (pause) process. */
  readonly pid: number;
  /** Where container logs go: the config's log_directory, or a runtime-owned directory. */
  readonly logDirectory: string;
  readonly ociSpec: OciSpec;
  /** Free-form platform state (the Windows path keeps its sandbox data here). */
  readonly platform: Record<string, unknown>;
  /** The pod's PID namespace; the pause process is PID 1. */
  readonly processes: ProcessTable;
  /** Resources from UpdatePodSandboxResources. */
  resources: { overhead: unknown; resources: unknown } | undefined;
  status: SandboxStatusData;
}

const TRANSITIONS: ReadonlyMap<number, ReadonlySet<number>> = new Map<number, ReadonlySet<number>>([
  [SandboxState.READY, new Set([SandboxState.NOTREADY])],
  [SandboxState.NOTREADY, new Set()],
]);

export const sandboxStateName = (state: number): string => (state === SandboxState.READY ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY');

/**
 * Pod sandboxes, by id, id prefix, state and labels; names reserved until removal.
 * The list view is the CRI `PodSandbox` message. A record's label and annotation values become
 * strings of the store's string table as it is stored.
 */
export class SandboxStore extends RecordStore<SandboxStatusData, SandboxRecord, PodSandbox> {
  readonly names = new NameRegistry('pod sandbox');

  constructor(private readonly strings: StringTable = UNSHARED_STRINGS) {
    super('pod sandbox', TRANSITIONS, sandboxStateName);
  }

  override add(record: SandboxRecord): void {
    this.strings.values(record.labels);
    this.strings.values(record.annotations);
    super.add(record);
  }
}
