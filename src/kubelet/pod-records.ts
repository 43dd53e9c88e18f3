/**
 * What the kubelet knows about its pods beyond what the runtime can tell: the admitted pod spec
 * (the runtime sees only CRI configs), the reason a container never started (ErrImagePull,
 * CreateContainerError, RunContainerError… — a container that was never created has no runtime
 * status at all) and the pod's events. A real kubelet keeps these in memory and reports them to
 * the API server; this one keeps them under its root directory (`<root>/pods/<uid>/pod.json`,
 * like the kubelet's own per-pod directories), so `get` and `describe` run as separate commands.
 * The admitted spec holds the inlined credential spec: the directory is 0700 and the file 0600.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { ManifestSource } from '../apiserver/manifests.js';
import type { ContainerOutcome, PodEvent, PodOutcome } from './pod-worker-options.js';
import type { ContainerIdentityRecord } from './security-context.js';
import type { GmsaAdmissionRecord } from '../apiserver/gmsa-admission-record.js';

/** The kubelet's last word on one container: why it is waiting, for the attempt it tried. */
export interface ContainerRecord {
  readonly attempt: number;
  /** The runtime's id when CreateContainer got that far. */
  readonly containerId?: string;
  readonly reason?: string;
  readonly message?: string;
  /** What the kubelet sent for the container's Windows identity (security-context.ts). */
  readonly identity?: ContainerIdentityRecord;
}

/** An event as `kubectl describe` lists it: repeats are counted, not duplicated. */
export interface RecordedEvent extends PodEvent {
  readonly count: number;
  /** RFC 3339. */
  readonly firstTimestamp: string;
  readonly lastTimestamp: string;
}

export interface PodRecord {
  readonly pod: V1Pod;
  /**
   * The pod as its file gave it when it was last run (kubectl's last-applied configuration):
   * `kubelet run` of a changed file compares against it and updates the pod (pod-update.ts).
   */
  readonly applied?: V1Pod;
  readonly source?: ManifestSource;
  /** When the kubelet first synced the pod (RFC 3339): the pod's start time. */
  readonly startTime: string;
  /** Whether RunPodSandbox succeeded once: a record of a pod with a sandbox that the runtime no longer has is stale. */
  readonly sandboxCreated: boolean;
  /** Why RunPodSandbox failed on the last try. */
  readonly sandboxError?: { readonly reason: string; readonly message: string };
  readonly containers: Readonly<Record<string, ContainerRecord>>;
  readonly events: readonly RecordedEvent[];
  /**
   * The prober's last word on the pod's probed containers (the static-pod loop's prober), by
   * container name: started and ready for that container ID. Absent: no prober ran.
   */
  readonly probes?: Readonly<Record<string, ProbeSnapshot>>;
  /** What the API server's GMSA admission did to the pod (admission.ts), when it went through this kubelet's cluster. */
  readonly gmsaAdmission?: GmsaAdmissionRecord;
  /**
   * The identity operations inside the pod's containers already reported as events (the runtime's
   * sequence number of the last one), so each failure is posted once.
   */
  readonly identityEventsSeen?: string;
}

export interface ProbeSnapshot {
  readonly containerId: string;
  readonly started: boolean;
  readonly ready: boolean;
}

/** Events kept per pod (the API server's default TTL drops old ones; a cap keeps the file small). */
export const maxEventsPerPod = 200;
const maxRecords = 10_000;
const uidPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;

/** Merges new events into the recorded ones: same type, reason, message and container counts up. */
export function mergeEvents(recorded: readonly RecordedEvent[], events: readonly PodEvent[], at: Date): RecordedEvent[] {
  const out = [...recorded];
  const now = at.toISOString();
  for (const e of events) {
    const i = out.findIndex((r) => r.type === e.type && r.reason === e.reason && r.message === e.message && r.container === e.container);
    if (i === -1) out.push({ ...e, count: 1, firstTimestamp: now, lastTimestamp: now });
    else out[i] = { ...out[i]!, count: out[i]!.count + 1, lastTimestamp: now };
  }
  return out.slice(-maxEventsPerPod);
}

/** The container records one start attempt leaves: a reason for those left waiting, none for the others. */
export function containerRecords(previous: Readonly<Record<string, ContainerRecord>>, outcomes: readonly ContainerOutcome[], attempts: Readonly<Record<string, number>> = {}): Record<string, ContainerRecord> {
  const next: Record<string, ContainerRecord> = { ...previous };
  for (const c of outcomes) {
    const attempt = attempts[c.name] ?? 0;
    const identity = c.identity === undefined ? {} : { identity: c.identity };
    if (c.state === 'waiting' && c.reason !== undefined) {
      next[c.name] = { attempt, reason: c.reason, ...(c.containerId === undefined ? {} : { containerId: c.containerId }), ...(c.message === undefined ? {} : { message: c.message }), ...identity };
    } else {
      next[c.name] = { attempt, ...(c.containerId === undefined ? {} : { containerId: c.containerId }), ...identity };
    }
  }
  return next;
}

/** The record of a pod after its first sync. */
export function recordFirstSync(pod: V1Pod, source: ManifestSource | undefined, outcome: PodOutcome, at = new Date(), applied?: V1Pod, gmsaAdmission?: GmsaAdmissionRecord): PodRecord {
  return {
    pod,
    ...(gmsaAdmission === undefined ? {} : { gmsaAdmission }),
    ...(applied === undefined ? {} : { applied }),
    ...(source === undefined ? {} : { source }),
    startTime: at.toISOString(),
    sandboxCreated: outcome.sandboxId !== undefined,
    ...(outcome.sandboxError === undefined ? {} : { sandboxError: outcome.sandboxError }),
    containers: containerRecords({}, outcome.containers),
    events: mergeEvents([], outcome.events, at),
  };
}

export class PodRecordStore {
  readonly directory: string;

  constructor(readonly rootDir: string) {
    this.directory = join(rootDir, 'pods');
  }

  private file(uid: string): string {
    if (!uidPattern.test(uid)) throw new Error(`pod UID ${JSON.stringify(uid)} cannot name a record`);
    return join(this.directory, uid, 'pod.json');
  }

  /** Writes the record whole (temporary file, then rename), so a reader never sees half of it. */
  async save(record: PodRecord): Promise<void> {
    const uid = record.pod.metadata?.uid ?? '';
    const file = this.file(uid);
    await mkdir(join(this.directory, uid), { recursive: true, mode: 0o700 });
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
    await rename(temporary, file);
  }

  async load(uid: string): Promise<PodRecord | undefined> {
    try {
      return JSON.parse(await readFile(this.file(uid), 'utf8')) as PodRecord;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`pod record ${this.file(uid)}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Every record; unreadable ones are reported, not skipped silently. */
  async list(): Promise<PodRecord[]> {
    let uids: string[];
    try {
      uids = (await readdir(this.directory, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    if (uids.length > maxRecords) throw new Error(`${this.directory}: more than ${maxRecords} pod records`);
    const records: PodRecord[] = [];
    for (const uid of uids) {
      const record = await this.load(uid);
      if (record !== undefined) records.push(record);
    }
    return records;
  }

  async remove(uid: string): Promise<void> {
    this.file(uid); // refuses a UID that is not a plain name
    await rm(join(this.directory, uid), { recursive: true, force: true });
  }

  /** Applies a change to a pod's record, if it has one. */
  async update(uid: string, change: (record: PodRecord) => PodRecord): Promise<void> {
    const record = await this.load(uid);
    if (record !== undefined) await this.save(change(record));
  }
}
