import type { ContainerConfig__Output } from '../../generated/runtime/v1/ContainerConfig.js';
import type { ContainerStdin } from '../../emulator/container-stdin.js';
import type { ContainerMetadata__Output } from '../../generated/runtime/v1/ContainerMetadata.js';
import type { ImageSpec__Output } from '../../generated/runtime/v1/ImageSpec.js';
import type { Container } from '../../generated/runtime/v1/Container.js';
import type { ContainerResources } from '../../generated/runtime/v1/ContainerResources.js';
import type { ImageConfig } from '../images/catalogue.js';
import type { CriLogWriter } from '../logging/cri-log-writer.js';
import type { OciSeccomp, OciSpec } from '../oci/spec.js';
import { ContainerFiles } from '../../emulator/container-files.js';
import { ProcessTable } from '../../emulator/process-table.js';
import type { ExitObserver, ProcessExit, SimulatedProcess } from '../../emulator/simulated-process.js';
import { plainCodec, type KeptCodec, type Kept } from '../../tuning/config-codec.js';
import { UNSHARED_STRINGS, type StringTable } from '../../tuning/intern.js';
import { BoundedCache } from '../../bounded-cache.js';
import { NameRegistry, RecordStore } from './record-store.js';
import type { SandboxRecord } from './sandbox-store.js';
import type { CredentialSpecDocument } from '../windows/credential-spec.js';

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

/**
 * What is running for a container (not status: it changes with it): its init process, log
 * writer and exec processes, and the handling of the init process's exit.
 */
export class ContainerLive implements ExitObserver {
  process: SimulatedProcess | undefined = undefined;
  logWriter: CriLogWriter | undefined = undefined;
  /** Exec processes running now, to kill them when the container stops (created with the first). */
  execs: Set<SimulatedProcess> | undefined = undefined;
  /** The main process's standard input (config `stdin: true`), for CRI Attach. */
  stdin: ContainerStdin | undefined = undefined;
  /** CPU time of finished exec processes, nanoseconds. */
  execCpuNanos = 0n;
  /** Files private to the container: the pod's, and what its processes wrote (ContainerStore.filesOf). */
  files: ContainerFiles | undefined = undefined;
  private container: ContainerRecord | undefined = undefined;
  private handleExit: ((container: ContainerRecord, exit: ProcessExit) => Promise<void>) | undefined = undefined;
  private handled: Promise<void> | undefined = undefined;
  private waiters: (() => void)[] | undefined = undefined;

  /**
   * Watches the init process: once it exits, `handleExit` (one function per runtime, not per
   * container) makes the container EXITED with its log flushed.
   */
  watch(process: SimulatedProcess, container: ContainerRecord, handleExit: (container: ContainerRecord, exit: ProcessExit) => Promise<void>): void {
    this.process = process;
    this.container = container;
    this.handleExit = handleExit;
    process.onExit(this);
  }

  processExited(exit: ProcessExit): void {
    const { container, handleExit } = this;
    if (container === undefined || handleExit === undefined) return;
    this.handleExit = undefined;
    this.handled = handleExit(container, exit);
    const waiters = this.waiters;
    this.waiters = undefined;
    for (const wake of waiters ?? []) wake();
  }

  /**
   * Settles once the init process exited and its exit was handled (the container is EXITED with
   * all output in its log); undefined when no process was ever watched.
   */
  exitHandled(): Promise<void> | undefined {
    if (this.handled !== undefined) return this.handled;
    if (this.handleExit === undefined) return undefined;
    return new Promise<void>((resolve) => {
      (this.waiters ??= []).push(() => resolve(this.handled));
    });
  }
}

/**
 * A container's own fields: what CreateContainer decides (never changed after) and what start and
 * UpdateContainerResources change through the store. Written once here: the record
 * (ContainerRecord), what it is made from (ContainerRecordInit) and its stored form
 * (record-codec.ts encodeContainer, recovery.ts) are derived from this list.
 */
export interface ContainerFields {
  /** The reserved name: `<name>_<pod name>_<namespace>_<pod uid>_<attempt>`. */
  name: string;
  metadata: ContainerMetadata__Output | null;
  /** The config's image spec (annotations, user_specified_image). */
  imageSpec: ImageSpec__Output | null;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The image as the request named it, and what it resolved to. */
  imageName: string;
  imageId: string;
  imageRef: string;
  imageConfig: ImageConfig;
  os: 'linux' | 'windows';
  createdAtNanos: bigint;
  /** Absolute path of the CRI log file. */
  logPath: string;
  /** Whether the log file lives in a runtime-owned directory (deleted with the container). */
  runtimeOwnedLog: boolean;
  /** The process argv (config command/args over the image ENTRYPOINT/CMD). */
  args: readonly string[];
  /** The seccomp profile resolved at create (Linux). */
  seccomp: OciSeccomp | undefined;
  /** Docker-style security options (`credentialspec=file://…`), set by the dockershim layer. */
  securityOptions: readonly string[];
  /** Whether it joined the pod's PID namespace (namespace_options.pid POD on Linux). */
  sharesPodPid: boolean;
  /** The resources of the config, as UpdateContainerResources last set them; set through the store. */
  resources: ContainerResources | null;
  /** The effective user name commands print (`root`, `1002`, `ContainerUser`); the start's identity may change it. */
  user: string;
  /** The credential spec HCS read and validated at start (windows.credentialSpec of the spec); set through the store. */
  credentialSpec: CredentialSpecDocument | undefined;
  /** Whether the mock HCS decided a Windows identity at start (it is derived again on demand). */
  windowsIdentityDecided: boolean;
}

/**
 * ContainerFields' names in their stored order (the order of the keys of the JSON that durable
 * state already holds: append, never reorder). The compiler checks that it names every field.
 */
export const CONTAINER_FIELD_NAMES = [
  'name', 'metadata', 'imageSpec', 'labels', 'annotations', 'imageName', 'imageId', 'imageRef',
  'imageConfig', 'os', 'createdAtNanos', 'logPath', 'runtimeOwnedLog', 'args', 'seccomp',
  'securityOptions', 'sharesPodPid', 'resources', 'user', 'credentialSpec', 'windowsIdentityDecided',
] as const satisfies readonly (keyof ContainerFields)[];
const everyFieldNamed: Exclude<keyof ContainerFields, (typeof CONTAINER_FIELD_NAMES)[number]> extends never ? true : never = true;
void everyFieldNamed;

/** The fields start and UpdateContainerResources change (through the store); the others are read-only. */
type ChangingField = 'resources' | 'user' | 'credentialSpec' | 'windowsIdentityDecided';
type RecordFields = Readonly<Omit<ContainerFields, ChangingField>> & Pick<ContainerFields, ChangingField>;

/** What a record is made from besides its sandbox and PID namespace: its id and fields (the start's decisions default to none). */
export type ContainerRecordInit = Omit<ContainerFields, 'credentialSpec' | 'windowsIdentityDecided'> & Partial<Pick<ContainerFields, 'credentialSpec' | 'windowsIdentityDecided'>> & { id: string };

/** A record's ContainerFields, copied from its init in CONTAINER_FIELD_NAMES' order (every record gets the same shape). */
const ContainerFieldsOf = class {
  constructor(init: ContainerRecordInit) {
    const fields = this as unknown as Record<string, unknown>;
    for (const name of CONTAINER_FIELD_NAMES) fields[name] = init[name];
  }
} as unknown as new (init: ContainerRecordInit) => RecordFields;

/**
 * A container, as containerd's container store keeps one: its metadata (what CreateContainer
 * decided, never changed), the inputs that StartContainer and UpdateContainerResources change
 * (through the store, which keeps the OCI spec in step), and its status, which changes through
 * `updateStatus` only. The full CRI config and the OCI spec are the store's (`configOf`,
 * `specOf`): the spec is composed from the config when asked for.
 */
export class ContainerRecord extends ContainerFieldsOf {
  readonly id: string;
  /** The sandbox it was created in (the OCI spec's hostname, sysctls and files come from it). */
  readonly sandbox: SandboxRecord;
  /** The PID namespace the container's processes live in (its own, or the pod's). */
  readonly processes: ProcessTable;
  readonly live: ContainerLive;
  status: ContainerStatusData;

  /** `init` is read, not kept: a stored form or a literal (no spread to make one: the record's shape stays one). */
  constructor(init: ContainerRecordInit, sandbox: SandboxRecord, processes: ProcessTable) {
    super(init);
    this.windowsIdentityDecided ??= false;
    this.id = init.id;
    this.sandbox = sandbox;
    this.processes = processes;
    this.live = new ContainerLive();
    this.status = initialContainerStatus();
  }

  get sandboxId(): string {
    return this.sandbox.id;
  }
}

/** What the store needs of the runtime to give a container's spec and files (container-create.ts). */
export interface ContainerSpecs {
  /** The container's OCI spec from its config and record; throws for a config the spec cannot take. */
  compose(record: ContainerRecord, config: ContainerConfig__Output): OciSpec;
  /** The files a runtime bind-mounts into every container of a pod (/etc/hosts, /etc/resolv.conf …). */
  podFiles(sandbox: SandboxRecord): ReadonlyMap<string, string>;
}

/** Config fields the record keeps as fields of its own. */
export const RECORD_CONFIG_FIELDS = ['labels', 'annotations', 'metadata', 'image'] as const;
/** How the store keeps a container's config (KeptCodec): the record's own fields come from the record. */
export type ContainerConfigCodec = KeptCodec<ContainerConfig__Output, (typeof RECORD_CONFIG_FIELDS)[number]>;
/** How many containers keep their decoded config and composed spec (the latest; a removed one at once). */
const DERIVED_CACHE_SIZE = 256;

const TRANSITIONS: ReadonlyMap<number, ReadonlySet<number>> = new Map<number, ReadonlySet<number>>([
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

export { ProcessTable };

/**
 * Containers, by id, id prefix, state, labels and pod sandbox; names reserved until removal.
 * The list view is the CRI `Container` message. The configs are kept by the codec the store is
 * given (`configCodec`), their strings through its string table; the configs read back and the
 * specs composed for the latest containers are kept at hand.
 */
export class ContainerStore extends RecordStore<ContainerStatusData, ContainerRecord, Container> {
  readonly names = new NameRegistry('container');
  private readonly kept = new Map<string, Kept<ContainerConfig__Output>>();
  private readonly configs = new BoundedCache<ContainerRecord, ContainerConfig__Output>(DERIVED_CACHE_SIZE);
  private readonly specs = new BoundedCache<ContainerRecord, OciSpec>(DERIVED_CACHE_SIZE);
  /** Image specs shared between containers (bounded; the oldest go first). */
  private readonly imageSpecs = new BoundedCache<string, ImageSpec__Output>(1024);
  /** The pod's files, built once per sandbox on first use and shared by its containers. */
  private readonly podFileMaps = new WeakMap<SandboxRecord, ReadonlyMap<string, string>>();
  private readonly podFilesOf = (sandbox: SandboxRecord): ReadonlyMap<string, string> => {
    let files = this.podFileMaps.get(sandbox);
    if (files === undefined) this.podFileMaps.set(sandbox, (files = this.containerSpecs.podFiles(sandbox)));
    return files;
  };

  constructor(
    private readonly containerSpecs: ContainerSpecs,
    private readonly strings: StringTable = UNSHARED_STRINGS,
    private readonly configCodec: ContainerConfigCodec = plainCodec(),
  ) {
    super('container', TRANSITIONS, containerStateName, (record) => record.sandboxId);
  }

  /**
   * A record for a container being created, with the config's labels, annotations, metadata and
   * image spec; the strings many containers repeat become shared copies. Not stored until `add`.
   */
  newRecord(init: Omit<ContainerRecordInit, 'metadata' | 'imageSpec' | 'labels' | 'annotations'>, sandbox: SandboxRecord, processes: ProcessTable, config: ContainerConfig__Output): ContainerRecord {
    const { metadata } = config;
    if (metadata !== null) metadata.name = this.strings.intern(metadata.name);
    return new ContainerRecord({
      ...init,
      metadata,
      imageSpec: this.sharedImageSpec(config.image),
      labels: this.strings.values(config.labels, sandbox.labels),
      annotations: this.strings.values(config.annotations),
      imageName: this.strings.intern(init.imageName),
      args: init.args.map((arg) => this.strings.intern(arg)),
    }, sandbox, processes);
  }

  /**
   * Stores a created container with its config and the spec composed from it
   * (validateContainerConfig): both are kept for the start that usually follows.
   */
  override add(record: ContainerRecord, config?: ContainerConfig__Output, spec?: OciSpec): void {
    if (config === undefined) throw new Error(`container ${record.id}: a container is stored with its config`);
    super.add(record);
    this.kept.set(record.id, this.configCodec.keep(config));
    this.configs.set(record, config);
    if (spec !== undefined) this.specs.set(record, spec);
  }

  override delete(id: string): ContainerRecord | undefined {
    const record = super.delete(id);
    if (record === undefined) return undefined;
    this.kept.delete(id);
    this.configs.delete(record);
    this.specs.delete(record);
    return record;
  }

  /** The CreateContainer config (shared: do not change it). */
  configOf(record: ContainerRecord): ContainerConfig__Output {
    return this.configs.get(record, this.decodeConfig);
  }

  /** The OCI spec: composed from the config, image and sandbox, with what start and updates added (shared: do not change it). */
  specOf(record: ContainerRecord): OciSpec {
    return this.specs.get(record, this.composeSpec);
  }

  /** Files private to the container (`/etc/hosts`, what its processes wrote), made on first use. */
  filesOf(record: ContainerRecord): ContainerFiles {
    return (record.live.files ??= ContainerFiles.forPod(record.sandbox, this.podFilesOf));
  }

  /** UpdateContainerResources: the resources change, and with them the spec. */
  setResources(record: ContainerRecord, resources: ContainerResources | null): void {
    record.resources = resources;
    this.specs.delete(record);
    this.touched(record);
  }

  /**
   * StartContainer: the credential spec HCS accepted goes into the spec (`amend`, the same change
   * as a spec option, takes it into a kept spec in place; the next composition has it anyway).
   */
  setCredentialSpec(record: ContainerRecord, document: CredentialSpecDocument | undefined, amend: (spec: OciSpec) => void): void {
    record.credentialSpec = document;
    const kept = this.specs.peek(record);
    if (kept !== undefined) amend(kept);
    this.touched(record);
  }

  /** Drops the decoded config and spec kept for a record (tests: what a container not among the latest sees). */
  forgetDerived(record: ContainerRecord): void {
    this.configs.delete(record);
    this.specs.delete(record);
  }

  private readonly decodeConfig = (record: ContainerRecord): ContainerConfig__Output => {
    const kept = this.kept.get(record.id);
    if (kept === undefined) throw new Error(`container ${record.id} is not in the store`);
    return this.configCodec.read(kept, { labels: record.labels, annotations: record.annotations, metadata: record.metadata, image: record.imageSpec });
  };

  private readonly composeSpec = (record: ContainerRecord): OciSpec => this.containerSpecs.compose(record, this.configOf(record));

  /**
   * One frozen image spec per image for the usual spec without annotations: every container of an
   * image sends the same one, and a copy per container is most of what a small config costs.
   */
  private sharedImageSpec(spec: ImageSpec__Output | null): ImageSpec__Output | null {
    if (spec === null || Object.keys(spec.annotations ?? {}).length > 0) return spec;
    const id = [spec.image, spec.user_specified_image, spec.runtime_handler, spec.image_ref].join('\0');
    return this.imageSpecs.get(id, () => Object.freeze({ ...spec, annotations: Object.freeze({}) }));
  }
}
