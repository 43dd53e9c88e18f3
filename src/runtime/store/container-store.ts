import type { ContainerConfig__Output } from '../../generated/runtime/v1/ContainerConfig.js';
import type { ContainerStdin } from '../process/container-stdin.js';
import type { ContainerMetadata__Output } from '../../generated/runtime/v1/ContainerMetadata.js';
import type { ImageSpec__Output } from '../../generated/runtime/v1/ImageSpec.js';
import type { Container } from '../../generated/runtime/v1/Container.js';
import type { ContainerResources } from '../../generated/runtime/v1/ContainerResources.js';
import type { ImageConfig } from '../images/catalogue.js';
import type { CriLogWriter } from '../logging/cri-log-writer.js';
import type { OciSeccomp } from '../oci/linux-security.js';
import type { OciSpec } from '../oci/spec.js';
import type { ContainerFiles } from '../process/container-files.js';
import { ProcessTable } from '../process/process-table.js';
import type { ExitObserver, ProcessExit, SimulatedProcess } from '../process/simulated-process.js';
import { intern, internValues } from './intern.js';
import { BoundedCache } from './bounded-cache.js';
import { NameRegistry, RecordStore } from './record-store.js';
import type { SandboxRecord } from './sandbox-store.js';
import type { ContainerIdentity } from '../windows/container-identity.js';
import { WINDOWS_IDENTITY_KEY } from '../windows/identity-command-registration.js';

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
 * What is derived from a container's inputs on demand rather than stored with it: its full CRI
 * config and its OCI spec. One shared instance per runtime; it may cache recent results.
 */
export interface ContainerDerivation {
  config(record: ContainerRecord): ContainerConfig__Output;
  spec(record: ContainerRecord): OciSpec;
  /** Keeps a config the caller already has as the record's derived one (CreateContainer's, decoded). */
  remember(record: ContainerRecord, config: ContainerConfig__Output): void;
  /** The container's private files (made on first use: most containers never need them). */
  files(record: ContainerRecord): ContainerFiles;
  /** Drops what it cached for the record (its spec inputs changed, or it was removed). */
  forget(record: ContainerRecord): void;
  /** Applies a change of the spec's inputs to the cached spec, if there is one (else the next derive has it). */
  amend(record: ContainerRecord, change: (spec: OciSpec) => void): void;
}

/**
 * Gives a started Windows container's identity again: decided by the mock HCS at start, derived
 * (and cached for the latest containers) rather than stored with every container.
 */
export interface IdentitySource {
  identityOf(record: ContainerRecord): ContainerIdentity;
  forget(record: ContainerRecord): void;
}

export interface ContainerRecordInit {
  id: string;
  sandbox: SandboxRecord;
  name: string;
  config: ContainerConfig__Output;
  imageName: string;
  imageId: string;
  imageRef: string;
  imageConfig: ImageConfig;
  os: 'linux' | 'windows';
  createdAtNanos: bigint;
  logPath: string;
  runtimeOwnedLog: boolean;
  args: readonly string[];
  seccomp: OciSeccomp | undefined;
  securityOptions: readonly string[];
  user: string;
  resources: ContainerResources | null;
  processes: ProcessTable;
  sharesPodPid: boolean;
  derive: ContainerDerivation;
}

/**
 * A container. It keeps what lists, status and the process need as fields, and its inputs; the
 * full CRI config (`config`) and the OCI spec (`ociSpec`) are derived when asked for (and cached
 * for the latest containers), so tens of thousands of idle containers do not each hold a
 * copy of both.
 */
export class ContainerRecord {
  readonly id: string;
  /** The sandbox it was created in (the OCI spec's hostname, sysctls and files come from it). */
  readonly sandbox: SandboxRecord;
  /** The reserved name: `<name>_<pod name>_<namespace>_<pod uid>_<attempt>`. */
  readonly name: string;
  readonly metadata: ContainerMetadata__Output | null;
  /** The config's image spec (annotations, user_specified_image). */
  readonly imageSpec: ImageSpec__Output | null;
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
  /** The process argv (config command/args over the image ENTRYPOINT/CMD). */
  readonly args: readonly string[];
  /** The seccomp profile resolved at create (Linux). */
  readonly seccomp: OciSeccomp | undefined;
  /** Docker-style security options (`credentialspec=file://…`), set by the dockershim layer. */
  readonly securityOptions: readonly string[];
  /** The credential spec HCS read and validated at start (windows.credentialSpec of the spec). */
  credentialSpec: string | undefined;
  /** Where the identity the mock HCS decided at start comes from (Windows, once started). */
  private identitySource: IdentitySource | undefined;
  /** The effective user name commands print (`root`, `1002`, `ContainerUser`). */
  user: string;
  /** The resources of the config, as UpdateContainerResources last set them. */
  resources: ContainerResources | null;
  /** The PID namespace the container's processes live in (its own, or the pod's) and its private files. */
  readonly processes: ProcessTable;
  /** Whether it joined the pod's PID namespace (namespace_options.pid POD on Linux). */
  readonly sharesPodPid: boolean;
  readonly live: ContainerLive;
  status: ContainerStatusData;
  /** The config's keys, in order (shared between containers). */
  readonly configKeys: readonly string[];
  /** The config's values for those keys as a JSON array, null for labels, annotations, metadata, image. */
  readonly configValues: string;
  private readonly derive: ContainerDerivation;
  private filesMade: ContainerFiles | undefined;

  constructor(init: ContainerRecordInit) {
    const { labels, annotations, metadata, image } = init.config;
    this.id = init.id;
    this.sandbox = init.sandbox;
    this.name = init.name;
    if (metadata !== null) metadata.name = intern(metadata.name);
    this.metadata = metadata;
    this.imageSpec = sharedImageSpec(image);
    this.labels = internValues(labels, init.sandbox.labels);
    this.annotations = internValues(annotations);
    this.imageName = intern(init.imageName);
    this.imageId = init.imageId;
    this.imageRef = init.imageRef;
    this.imageConfig = init.imageConfig;
    this.os = init.os;
    this.createdAtNanos = init.createdAtNanos;
    this.logPath = init.logPath;
    this.runtimeOwnedLog = init.runtimeOwnedLog;
    this.args = init.args.map(intern);
    this.seccomp = init.seccomp;
    this.securityOptions = init.securityOptions;
    this.credentialSpec = undefined;
    this.identitySource = undefined;
    this.user = init.user;
    this.resources = init.resources;
    this.processes = init.processes;
    this.sharesPodPid = init.sharesPodPid;
    this.filesMade = undefined;
    this.live = newContainerLive();
    this.status = initialContainerStatus();
    // The config's values in key order (null for the fields kept above); the key list is shared
    // by every config with the same keys, so the derived config has the request's key order.
    const keys = Object.keys(init.config).filter((k) => init.config[k as keyof ContainerConfig__Output] !== undefined);
    this.configKeys = sharedKeyList(keys);
    this.configValues = JSON.stringify(keys.map((k) => (KEPT_CONFIG_FIELDS.has(k) ? null : init.config[k as keyof ContainerConfig__Output])));
    this.derive = init.derive;
  }

  get sandboxId(): string {
    return this.sandbox.id;
  }

  /** The CreateContainer config (derived; do not change it). */
  get config(): ContainerConfig__Output {
    return this.derive.config(this);
  }

  /** The OCI spec: composed from the config, image and sandbox, with what start and updates added. */
  get ociSpec(): OciSpec {
    return this.derive.spec(this);
  }

  /** Files private to the container (`/etc/hosts`, what its processes wrote). */
  get files(): ContainerFiles {
    return (this.filesMade ??= this.derive.files(this));
  }

  /** The identity a started Windows container runs with (undefined before its start). */
  get windowsIdentity(): ContainerIdentity | undefined {
    return this.identitySource?.identityOf(this);
  }

  /** The container started with the identity `source` gives. */
  startedWithIdentity(source: IdentitySource): void {
    this.identitySource = source;
  }

  /** Platform state as `crictl inspect` shows it (info.platform): the Windows identity, once started. */
  get platform(): Record<string, unknown> {
    const identity = this.windowsIdentity;
    return identity === undefined ? {} : { [WINDOWS_IDENTITY_KEY]: identity };
  }

  /** Drops whatever was derived and cached for the container (it was removed). */
  released(): void {
    this.derive.forget(this);
    this.identitySource?.forget(this);
  }

  /** Call after changing an input of the spec (resources, credential spec). */
  specChanged(): void {
    this.derive.forget(this);
  }

  /**
   * Call after changing an input of the spec, with the same change as a spec option: a cached
   * spec takes it in place (what a fresh derive would give), without composing the spec again.
   */
  specAmended(change: (spec: OciSpec) => void): void {
    this.derive.amend(this, change);
  }
}

/** Config fields the record keeps as fields of its own, left out of `configValues`. */
const KEPT_CONFIG_FIELDS = new Set(['labels', 'annotations', 'metadata', 'image']);
/** Key lists and image specs shared between containers (bounded; the oldest go first). */
const keyLists = new BoundedCache<string, readonly string[]>(64);
const imageSpecs = new BoundedCache<string, ImageSpec__Output>(1024);

/**
 * One frozen image spec per image for the usual spec without annotations: every container of an
 * image sends the same one, and a copy per container is most of what a small config costs.
 */
function sharedImageSpec(spec: ImageSpec__Output | null): ImageSpec__Output | null {
  if (spec === null || Object.keys(spec.annotations ?? {}).length > 0) return spec;
  const id = [spec.image, spec.user_specified_image, spec.runtime_handler, spec.image_ref].join('\0');
  return imageSpecs.get(id, () => Object.freeze({ ...spec, annotations: Object.freeze({}) }));
}

/** One frozen array per distinct key list (configs decoded from the wire all share one). */
function sharedKeyList(keys: string[]): readonly string[] {
  return keyLists.get(keys.join(','), () => Object.freeze(keys));
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
  return new ContainerLive();
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
