/**
 * The static-pod sync loop (`kubelet --pod-manifest-path DIR`): every pass reads the pod files of
 * the directory, starts the admitted pods the node does not run yet, restarts exited containers
 * per restartPolicy with the kubelet's back-off (10 s doubling to 5 min: CrashLoopBackOff, and
 * ImagePullBackOff for pulls), and removes the kubelet's pods whose file is gone or changed (a
 * changed file gives a new pod UID, as a static pod's UID is a hash of its content).
 *
 * run() is event-driven, not a poll: a pass follows a change in the directory (fs.watch, with a
 * debounce so an editor's write-rename-chmod burst gives one pass), a container exit reported by
 * the runtime's GetContainerEvents stream, or the end of a back-off; a slow resync (the kubelet's
 * --sync-frequency, 1 min) covers events that were missed.
 *
 * While run() runs, containers with probes are probed (prober.ts): a changed result or a probe
 * event gives a pass; a failed liveness or startup probe kills the container, which the pass
 * restarts per restartPolicy; started and ready are written to the pod's record, so `kubelet get`
 * in another process shows them.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/proto.js';
import { readAlphaCredentialSpecs, type GmsaDesign } from '../apiserver/admission.js';
import type { ClusterSource } from '../apiserver/cluster.js';
import { loadPodFiles, type ManifestSource, type PodManifestOptions } from '../apiserver/manifests.js';
import { snapshotPodObjects } from './pod-objects.js';
import { listNodePods, nodePodStatus, type NodePod } from './node-pods.js';
import type { PodEvent, PodWorkerOptions } from './pod-worker-options.js';
import { mergeEvents, recordFirstSync, type PodRecordStore, type ProbeSnapshot } from './pod-records.js';
import { latestAttempts, shouldRestart } from './sync/pod-actions.js';
import { PodSyncEngine, recordOfSync, type PodSyncEngineOptions, type PodSyncResult } from './sync/pod-sync.js';
import { watchContainerExits } from './sync/container-exits.js';
import { computePodStatus, nanosToTime, type ProbeStatus } from './pod-status.js';
import type { UserInfo } from '../apiserver/rbac.js';
import { activePods, admitPodOnNode, standaloneNode, type AdmissionNode } from './kubelet-admission.js';
import { runInContainer } from './container-exec.js';
import { ProbeManager } from './prober.js';
import { TimerWheel } from './node/timer-wheel.js';
import { GarbageCollector, type GarbageCollectorOptions } from './gc/garbage-collector.js';

/** The engine's options: back-off (10 s to 5 min), clock, and the grace of pods removed for a new sandbox. */
export interface StaticPodOptions extends Omit<PodWorkerOptions, 'configMaps' | 'runtimeClasses' | 'pullSecrets'>, PodSyncEngineOptions {
  readonly manifestDir: string;
  readonly cluster: ClusterSource;
  readonly user: UserInfo;
  /** The cluster's GMSA design (`--gmsa-design`); the shipped webhook by default. */
  readonly design?: GmsaDesign;
  readonly manifests?: PodManifestOptions;
  /** run(): the slow resync that covers missed events (the kubelet's --sync-frequency, 1 min). */
  readonly intervalMs?: number;
  /** run(): how long a burst of directory changes must be quiet before the pass (default 200 ms). */
  readonly debounceMs?: number;
  /** Where pod specs, waiting reasons and events are kept for `kubelet get` and `describe`. */
  readonly records?: PodRecordStore;
  /** The Node the kubelet's admission reads; default: this node's name with node mode's default capacity. */
  readonly node?: AdmissionNode;
  /** run(): container and image garbage collection, its node events logged by `onNodeEvent`. */
  readonly garbageCollection?: GarbageCollectorOptions;
}

export interface StaticPodRow {
  readonly namespace: string;
  readonly name: string;
  readonly ready: string;
  readonly status: string;
  readonly restarts: number;
  /** When the pod's sandbox was created (RFC 3339), for the AGE column. */
  readonly startTime?: string;
}

export interface SyncReport {
  readonly started: readonly string[];
  readonly restarted: readonly string[];
  readonly deleted: readonly string[];
  /** Pods that are not run: broken files and admission refusals, one message each. */
  readonly refused: readonly string[];
  readonly pods: readonly StaticPodRow[];
  readonly events: readonly (PodEvent & { readonly pod: string })[];
}

const manifestExtensions = ['.yaml', '.yml', '.json'];
const maxManifestFiles = 1000;

export class StaticPodSyncLoop {
  /** The kubelet's pod sync: actions, their execution, the restart back-off. */
  private readonly engine: PodSyncEngine;
  /** The pods as admission returned them (credential specs inlined), by UID: restarts use these. */
  private readonly admittedPods = new Map<string, V1Pod>();
  /** The prober, while run() runs; a single pass (syncOnce alone) probes nothing. */
  private probes: ProbeManager | undefined;
  /** Probe events not yet in the records, and not yet in a pass's report. */
  private readonly probeEvents: { uid: string; event: PodEvent }[] = [];
  private readonly probeReport: { pod: string; event: PodEvent }[] = [];
  private probeWrites: Promise<void> = Promise.resolve();
  private passing = false;

  constructor(
    private readonly cri: CriClient,
    private readonly options: StaticPodOptions,
  ) {
    this.engine = new PodSyncEngine(cri, options);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** The pod files of the directory itself (not its subdirectories), as the kubelet reads them. */
  private async manifestFiles(): Promise<string[]> {
    const entries = await readdir(this.options.manifestDir, { withFileTypes: true });
    const files = entries
      .filter((e) => e.isFile() && !e.name.startsWith('.') && manifestExtensions.some((ext) => e.name.endsWith(ext)))
      .map((e) => join(this.options.manifestDir, e.name))
      .sort();
    if (files.length > maxManifestFiles) throw new Error(`${this.options.manifestDir}: more than ${maxManifestFiles} pod files`);
    return files;
  }

  /** One pass: converge the node on the directory. */
  async syncOnce(): Promise<SyncReport> {
    this.passing = true;
    try {
      return await this.pass();
    } finally {
      this.passing = false;
      if (this.probeEvents.length > 0) this.probeWrites = this.probeWrites.then(() => this.flushProbeEvents());
    }
  }

  private async flushProbeEvents(): Promise<void> {
    const byPod = new Map<string, PodEvent[]>();
    for (const { uid, event } of this.probeEvents.splice(0)) byPod.set(uid, [...(byPod.get(uid) ?? []), event]);
    for (const [uid, events] of byPod) await this.recordEvents(uid, events);
  }

  private async pass(): Promise<SyncReport> {
    const cluster = await this.options.cluster.load();
    // The kubelet's file source decodes without strict field validation: the file runs as written.
    const { pods: loaded, errors } = await loadPodFiles(await this.manifestFiles(), { ...this.options.manifests, fieldValidation: 'Ignore' });
    const report = { started: [] as string[], restarted: [] as string[], deleted: [] as string[], refused: errors.map((e) => e.message), pods: [] as StaticPodRow[], events: [] as (PodEvent & { pod: string })[] };
    const workerOptions: PodWorkerOptions = { ...this.options, ...snapshotPodObjects(cluster) };

    const onNode = new Map((await listNodePods(this.cri)).map((p) => [p.uid, p]));
    const desired = new Set(loaded.map((l) => l.pod.metadata!.uid!));
    await this.probeWrites;
    await this.flushProbeEvents();
    for (const { pod, event } of this.probeReport.splice(0)) report.events.push({ ...event, pod });

    // Pods whose file went away or changed: kill and remove them first.
    for (const pod of onNode.values()) {
      if (desired.has(pod.uid)) continue;
      this.probes?.removePod(pod.uid);
      await this.engine.removePod(pod, this.options.gracePeriodSeconds ?? 30);
      this.admittedPods.delete(pod.uid);
      await this.options.records?.remove(pod.uid);
      report.deleted.push(`${pod.namespace}/${pod.name}`);
    }

    for (const { pod, source } of loaded) {
      const uid = pod.metadata!.uid!;
      const key = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
      const running = onNode.get(uid);
      // A pod the runtime still has (this loop or the runtime restarted) is adopted by its UID
      // label, with the file's pod as the spec it was started with.
      let admitted = this.admittedPods.get(uid);
      if (admitted === undefined) {
        const result = this.admit(pod, desired);
        if (!result.allowed && running === undefined) {
          report.refused.push(`${key}: ${result.message}`);
          continue;
        }
        admitted = result.allowed ? result.pod : pod;
        this.admittedPods.set(uid, admitted);
      }
      // The 1.14 kubelet read the GMSA annotations itself, static pods' too.
      const runnable = this.options.design === 'alpha-1.14' ? readAlphaCredentialSpecs(admitted) : admitted;
      const sync = await this.engine.sync(runnable, running, workerOptions, this.probes === undefined ? {} : { probes: this.probes });
      report.events.push(...sync.events.map((e) => ({ ...e, pod: key })));
      if (sync.created !== undefined) report.started.push(key);
      else if (sync.started.some((s) => s.outcome.state === 'started')) report.restarted.push(key);
      await this.record(admitted, source, sync);
      if (sync.nodePod === undefined) continue;
      const probes = await this.observeForProbes(admitted, sync.nodePod);
      report.pods.push(this.row(admitted, sync.nodePod, probes));
    }
    return report;
  }

  /**
   * The kubelet's own checks (kubelet-admission.ts) against the static pods it admitted before.
   * A static pod runs as its file is written (pkg/kubelet/config/file.go): no API admission
   * plugin and no webhook sees it, so a gmsaCredentialSpecName is never inlined and the pod runs
   * without a credential spec. A file's pod is bound to this node (config/common.go sets
   * spec.nodeName) and its taints are not checked.
   */
  private admit(pod: V1Pod, desired: ReadonlySet<string>): { allowed: true; pod: V1Pod } | { allowed: false; message: string } {
    const node = this.options.node ?? standaloneNode(this.options.nodeName ?? 'winnode1');
    const uid = pod.metadata?.uid;
    const others = activePods([...this.admittedPods].filter(([u]) => u !== uid && desired.has(u)).map(([, p]) => p));
    const bound = { ...pod, spec: { ...pod.spec!, nodeName: node.name } };
    const rejection = admitPodOnNode({ pod: bound, otherPods: others, staticPod: true }, node);
    return rejection === undefined ? { allowed: true, pod } : { allowed: false, message: `${rejection.reason}: ${rejection.message}` };
  }

  /** Keeps what a sync did in the pod's record: a new sandbox's first record, or the starts, events and back-offs. */
  private async record(pod: V1Pod, source: ManifestSource, sync: PodSyncResult): Promise<void> {
    const records = this.options.records;
    const at = new Date(this.now());
    if (records === undefined) return;
    if (sync.created !== undefined) await records.save(recordOfSync(recordFirstSync(pod, source, sync.created, at), sync));
    else if (sync.started.length > 0 || sync.events.length > 0 || Object.keys(sync.waiting).length > 0) {
      await records.update(pod.metadata!.uid!, (r) => ({ ...recordOfSync(r, sync), events: mergeEvents(r.events, sync.events, at) }));
    }
  }

  private async recordEvents(uid: string, events: readonly PodEvent[]): Promise<void> {
    if (events.length === 0) return;
    const at = new Date(this.now());
    await this.options.records?.update(uid, (r) => ({ ...r, events: mergeEvents(r.events, events, at) })).catch(() => undefined);
  }

  /** Hands the prober the pod's containers; records started and ready when the pod is probed. */
  private async observeForProbes(pod: V1Pod, nodePod: NodePod): Promise<ProbeStatus | undefined> {
    const probes = this.probes;
    if (probes === undefined) return undefined;
    const uid = nodePod.uid;
    probes.addPod(pod);
    const status = probes.statusOf(uid);
    if (status === undefined) return undefined;
    const view = computePodStatus(pod, nodePod, undefined, status);
    probes.observe(uid, view, nodePod);
    const latest = latestAttempts(nodePod);
    const snapshot: Record<string, ProbeSnapshot> = {};
    for (const s of view.containerStatuses) {
      const c = latest.get(s.name);
      if (c !== undefined) snapshot[s.name] = { containerId: c.id, started: s.started, ready: s.ready };
    }
    await this.options.records?.update(uid, (r) => (JSON.stringify(r.probes) === JSON.stringify(snapshot) ? r : { ...r, probes: snapshot })).catch(() => undefined);
    return status;
  }

  private row(pod: V1Pod, nodePod: NodePod, probes?: ProbeStatus): StaticPodRow {
    const counted = nodePodStatus(nodePod, {
      initContainers: (pod.spec?.initContainers ?? []).map((c) => c.name),
      containers: (pod.spec?.containers ?? []).map((c) => c.name),
    });
    const { status } = counted;
    // READY counts the containers the prober calls ready when the pod has probes.
    const ready = probes === undefined ? counted.ready : (() => {
      const view = computePodStatus(pod, nodePod, undefined, probes);
      return `${view.containerStatuses.filter((s) => s.ready).length}/${view.containerStatuses.length}`;
    })();
    const latest = latestAttempts(nodePod);
    const restarts = [...latest.values()].reduce((sum, c) => sum + c.attempt, 0);
    // A container held back by back-off shows the back-off reason, as kubectl does.
    let shown = status;
    const initNames = new Set((pod.spec?.initContainers ?? []).map((c) => c.name));
    for (const container of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].reverse()) {
      const backoff = this.engine.backoffOf(pod, container.name);
      const current = latest.get(container.name);
      const waiting = current === undefined || (current.state === 'Exited' && shouldRestart(pod, current.exitCode ?? 0) && !(initNames.has(container.name) && current.exitCode === 0));
      if (backoff?.holding === true && waiting) shown = initNames.has(container.name) ? `Init:${backoff.reason}` : backoff.reason;
      // A container a failed start left created waits with that start's reason (the kubelet's
      // reason cache), not ContainerCreating.
      else if (current?.state === 'Created' && backoff?.failure !== undefined) shown = initNames.has(container.name) ? `Init:${backoff.failure}` : backoff.failure;
    }
    const startTime = nanosToTime(nodePod.createdAt);
    return { namespace: nodePod.namespace, name: nodePod.name, ready, status: shown, restarts, ...(startTime === undefined ? {} : { startTime }) };
  }

  /** Milliseconds until the earliest back-off ends, or undefined when nothing waits. */
  nextBackoffDelay(): number | undefined {
    return this.engine.nextBackoffDelay();
  }

  /**
   * Runs passes until the signal aborts: one at once, then one after each trigger (directory
   * change, container exit, back-off end, slow resync). Triggers during a pass give one more
   * pass after it, never overlapping ones. A failed pass is reported and the loop goes on.
   */
  async run(signal: AbortSignal, onPass: (report: SyncReport | Error) => void): Promise<void> {
    if (signal.aborted) return;
    const resyncMs = this.options.intervalMs ?? 60_000;
    const debounceMs = this.options.debounceMs ?? 200;
    let wake: (() => void) | undefined;
    let dirty = true;
    const trigger = (): void => {
      dirty = true;
      wake?.();
    };
    let debounce: NodeJS.Timeout | undefined;
    const debounced = (): void => {
      clearTimeout(debounce);
      debounce = setTimeout(trigger, debounceMs);
    };

    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(this.options.manifestDir, { persistent: false }, debounced);
      watcher.on('error', (err) => onPass(new Error(`watching ${this.options.manifestDir}: ${err.message}`)));
    } catch (err) {
      throw new Error(`cannot watch ${this.options.manifestDir}: ${(err as Error).message}`, { cause: err });
    }
    const events = watchContainerExits(this.cri, debounced, onPass);
    const gc = this.options.garbageCollection === undefined ? undefined : new GarbageCollector(this.cri, { callTimeoutMs: this.options.callTimeoutMs ?? 30_000, ...this.options.garbageCollection });
    gc?.start();
    const wheel = new TimerWheel();
    this.probes = new ProbeManager({
      scheduler: wheel,
      exec: runInContainer(this.cri, this.options.callTimeoutMs ?? 30_000),
      onResult: debounced,
      // Probe events go to the record (between passes, never beside a pass's own writes) and into
      // the next pass's report; they do not ask for a pass (a pass may run a readiness probe).
      onEvent: (pod, event) => {
        this.probeEvents.push({ uid: pod.metadata?.uid ?? '', event });
        this.probeReport.push({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, event });
        if (!this.passing) this.probeWrites = this.probeWrites.then(() => this.flushProbeEvents());
      },
      ...(this.options.now === undefined ? {} : { now: this.options.now }),
    });
    const onAbort = (): void => wake?.();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (!signal.aborted) {
        if (dirty) {
          dirty = false;
          try {
            onPass(await this.syncOnce());
          } catch (err) {
            onPass(err instanceof Error ? err : new Error(String(err)));
          }
          continue;
        }
        // Sleep until a trigger, the end of the earliest back-off, or the resync.
        const backoff = this.nextBackoffDelay();
        const sleepMs = Math.min(resyncMs, backoff === undefined ? resyncMs : backoff + 1);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            dirty = true;
            resolve();
          }, sleepMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(debounce);
      watcher.close();
      events.cancel();
      await gc?.stop();
      this.probes.stop();
      this.probes = undefined;
      wheel.stop();
    }
  }
}
