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
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type * as grpc from '@grpc/grpc-js';
import type { CriClient } from '../cri/proto.js';
import { readAlphaCredentialSpecs, type GmsaDesign } from '../apiserver/admission.js';
import type { ClusterSource } from '../apiserver/cluster.js';
import { buildPodSandboxConfig } from './cri-config.js';
import { loadPodFiles, type PodManifestOptions } from '../apiserver/manifests.js';
import { snapshotPodObjects } from './pod-objects.js';
import { deleteNodePod, listNodePods, nodePodStatus, type NodeContainer, type NodePod } from './node-pods.js';
import { formatBackoff, killUnhealthyContainers, latestAttempts, runPodOnce, shouldRestart, shouldStartContainer, startContainer, type ContainerKind, type PodEvent, type PodWorkerOptions } from './pod-worker.js';
import { containerRecords, mergeEvents, recordFirstSync, type ContainerRecord, type PodRecordStore, type ProbeSnapshot } from './pod-records.js';
import { computePodStatus, nanosToTime, type ProbeStatus } from './pod-status.js';
import type { UserInfo } from '../apiserver/rbac.js';
import { activePods, admitPodOnNode, standaloneNode, type AdmissionNode } from './kubelet-admission.js';
import { runInContainer } from './container-exec.js';
import { ProbeManager, probedPod } from './prober.js';
import { TimerWheel } from './node/timer-wheel.js';
import { GarbageCollector, type GarbageCollectorOptions } from './gc/garbage-collector.js';

export interface StaticPodOptions extends Omit<PodWorkerOptions, 'configMaps' | 'runtimeClasses' | 'pullSecrets'> {
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
  /** First restart delay (the kubelet's 10 s) and its cap (5 min). */
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  readonly gracePeriodSeconds?: number;
  /** Milliseconds clock, replaceable in tests. */
  readonly now?: () => number;
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

interface Backoff {
  delayMs: number;
  notBefore: number;
  reason: 'CrashLoopBackOff' | 'ImagePullBackOff';
  /** The waiting reason of the failed start that set it (RunContainerError, …), if one did. */
  failure?: string | undefined;
}

export class StaticPodSyncLoop {
  private readonly backoffs = new Map<string, Backoff>();
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
  ) {}

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
    const refused = errors.map((e) => e.message);
    const events: (PodEvent & { pod: string })[] = [];
    const started: string[] = [];
    const restarted: string[] = [];
    const deleted: string[] = [];
    const workerOptions: PodWorkerOptions = { ...this.options, ...snapshotPodObjects(cluster) };
    const key = (pod: V1Pod) => `${pod.metadata!.namespace}/${pod.metadata!.name}`;

    const onNode = new Map((await listNodePods(this.cri)).map((p) => [p.uid, p]));
    const desired = new Set(loaded.map((l) => l.pod.metadata!.uid!));
    await this.probeWrites;
    await this.flushProbeEvents();
    for (const { pod, event } of this.probeReport.splice(0)) events.push({ ...event, pod });

    // Pods whose file went away or changed: kill and remove them first.
    for (const pod of onNode.values()) {
      if (desired.has(pod.uid)) continue;
      this.probes?.removePod(pod.uid);
      await deleteNodePod(this.cri, pod, this.options.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: this.options.gracePeriodSeconds });
      for (const k of this.backoffs.keys()) if (k.startsWith(`${pod.uid}/`)) this.backoffs.delete(k);
      this.admittedPods.delete(pod.uid);
      await this.options.records?.remove(pod.uid);
      deleted.push(`${pod.namespace}/${pod.name}`);
    }

    const admitted: V1Pod[] = [];
    const design = this.options.design;
    // A static pod runs as its file is written (pkg/kubelet/config/file.go): no API admission
    // plugin and no webhook sees it, so a gmsaCredentialSpecName is never inlined and the pod runs
    // without a credential spec. Only the kubelet's own checks apply (kubelet-admission.ts), against
    // the static pods it admitted before; a file's pod is bound to this node (config/common.go
    // sets spec.nodeName) and its taints are not checked.
    const node = this.options.node ?? standaloneNode(this.options.nodeName ?? 'winnode1');
    const admit = (pod: V1Pod): { allowed: true; pod: V1Pod } | { allowed: false; message: string } => {
      const uid = pod.metadata?.uid;
      const others = activePods([...this.admittedPods].filter(([u]) => u !== uid && desired.has(u)).map(([, p]) => p));
      const bound = { ...pod, spec: { ...pod.spec!, nodeName: node.name } };
      const rejection = admitPodOnNode({ pod: bound, otherPods: others, staticPod: true }, node);
      return rejection === undefined ? { allowed: true, pod } : { allowed: false, message: `${rejection.reason}: ${rejection.message}` };
    };
    for (const { pod, source } of loaded) {
      const uid = pod.metadata!.uid!;
      let running = onNode.get(uid);
      // A pod the runtime still has (this loop or the runtime restarted) is adopted by its UID
      // label. One whose sandbox is not ready any more (the node rebooted) gets a new sandbox and
      // its containers again, as the kubelet's computePodActions does (createPodSandbox); the
      // old one is removed with its exited containers.
      if (running !== undefined && !running.sandboxReady) {
        this.probes?.removePod(uid);
        await deleteNodePod(this.cri, running, this.options.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: this.options.gracePeriodSeconds });
        for (const k of this.backoffs.keys()) if (k.startsWith(`${uid}/`)) this.backoffs.delete(k);
        running = undefined;
      }
      if (running === undefined) {
        const result = admit(pod);
        if (!result.allowed) {
          refused.push(`${key(pod)}: ${result.message}`);
          continue;
        }
        // The 1.14 kubelet read the GMSA annotations itself, static pods' too.
        const runnable = design === 'alpha-1.14' ? readAlphaCredentialSpecs(result.pod) : result.pod;
        const outcome = await runPodOnce(this.cri, runnable, workerOptions);
        events.push(...outcome.events.map((e) => ({ ...e, pod: key(pod) })));
        // Containers that failed to start back off; those merely not reached yet do not.
        for (const c of outcome.containers) {
          if (c.state === 'waiting' && c.reason !== 'PodInitializing' && c.reason !== 'ContainerCreating') this.noteFailure(pod, c.name, c.reason);
        }
        started.push(key(pod));
        await this.options.records?.save(recordFirstSync(result.pod, source, outcome, new Date(this.now())));
        this.admittedPods.set(uid, result.pod);
        admitted.push(result.pod);
        continue;
      }
      // A pod found running that this loop did not start (the kubelet restarted): the file's pod
      // is the spec it was started with.
      let admittedPod = this.admittedPods.get(uid);
      if (admittedPod === undefined) {
        const result = admit(pod);
        admittedPod = result.allowed ? result.pod : pod;
        this.admittedPods.set(uid, admittedPod);
      }
      admitted.push(admittedPod);
      const killed = await this.killUnhealthy(admittedPod, running, events);
      if (killed.size > 0) running = (await listNodePods(this.cri, { uid }))[0] ?? running;
      if (await this.restartExited(admittedPod, running, workerOptions, events, killed)) restarted.push(key(pod));
    }

    const after = new Map((await listNodePods(this.cri)).map((p) => [p.uid, p]));
    const rows: StaticPodRow[] = [];
    for (const pod of admitted) {
      const nodePod = after.get(pod.metadata!.uid!);
      if (nodePod === undefined) continue;
      const probes = await this.observeForProbes(pod, nodePod);
      rows.push(this.row(pod, nodePod, probes));
      await this.recordBackoffs(pod, nodePod);
    }
    return { started, restarted, deleted, refused, pods: rows, events };
  }

  private async recordEvents(uid: string, events: readonly PodEvent[]): Promise<void> {
    if (events.length === 0) return;
    const at = new Date(this.now());
    await this.options.records?.update(uid, (r) => ({ ...r, events: mergeEvents(r.events, events, at) })).catch(() => undefined);
  }

  /** killUnhealthyContainers, with the Killing events also kept in the pod's records. */
  private async killUnhealthy(pod: V1Pod, nodePod: NodePod, events: (PodEvent & { pod: string })[]): Promise<Set<string>> {
    if (this.probes === undefined) return new Set();
    const own: PodEvent[] = [];
    const killed = await killUnhealthyContainers(this.cri, pod, nodePod, this.probes, this.options.callTimeoutMs ?? 30_000, own);
    if (own.length === 0) return killed;
    events.push(...own.map((e) => ({ ...e, pod: `${pod.metadata!.namespace}/${pod.metadata!.name}` })));
    await this.recordEvents(nodePod.uid, own);
    return killed;
  }

  /** Hands the prober the pod's containers; records started and ready when the pod is probed. */
  private async observeForProbes(pod: V1Pod, nodePod: NodePod): Promise<ProbeStatus | undefined> {
    const probes = this.probes;
    if (probes === undefined) return undefined;
    const uid = nodePod.uid;
    probes.addPod(pod);
    if (!probes.probes(uid)) return undefined;
    const status: ProbeStatus = { started: (name, id) => probes.isStarted(uid, name, id), ready: (name, id) => probes.isReady(uid, name, id) };
    const view = computePodStatus(pod, nodePod, undefined, status);
    probes.setPodStatus(uid, probedPod(view, nodePod));
    const latest = latestAttempts(nodePod);
    const snapshot: Record<string, ProbeSnapshot> = {};
    for (const s of view.containerStatuses) {
      const c = latest.get(s.name);
      if (c !== undefined) snapshot[s.name] = { containerId: c.id, started: s.started, ready: s.ready };
    }
    await this.options.records?.update(uid, (r) => (JSON.stringify(r.probes) === JSON.stringify(snapshot) ? r : { ...r, probes: snapshot })).catch(() => undefined);
    return status;
  }

  private backoffKey(pod: V1Pod, container: string): string {
    return `${pod.metadata!.uid}/${container}`;
  }

  /**
   * A failed start or an exit: the next attempt waits, twice as long each time up to the cap
   * (doBackOff's backOff.Next). `advance` false: a start that failed and left no exited container
   * (the runtime refused StartContainer before doing anything) has nothing for doBackOff to count;
   * the kubelet's pod worker tries the failed sync again after its fixed back-off period, the
   * initial delay (pod_workers.go completeWork, kubelet.go backOffPeriod 10 s).
   */
  private noteFailure(pod: V1Pod, container: string, reason: string | undefined, advance = true): void {
    const k = this.backoffKey(pod, container);
    const previous = this.backoffs.get(k);
    const initial = this.options.backoffInitialMs ?? 10_000;
    const pull = reason === 'ErrImagePull' || reason === 'ErrImageNeverPull' || reason === 'ImagePullBackOff';
    const delayMs = previous === undefined || !(advance || pull) ? initial : Math.min(previous.delayMs * 2, this.options.backoffMaxMs ?? 300_000);
    this.backoffs.set(k, { delayMs, notBefore: this.now() + delayMs, reason: pull ? 'ImagePullBackOff' : 'CrashLoopBackOff', failure: reason });
  }

  /** computePodActions for a running sandbox: start missing containers, restart exited ones per policy. */
  /** `killed`: containers just stopped for a failed probe, started again whatever their exit code. */
  private async restartExited(pod: V1Pod, nodePod: NodePod, options: PodWorkerOptions, events: (PodEvent & { pod: string })[], killed: ReadonlySet<string> = new Set()): Promise<boolean> {
    let any = false;
    const latest = latestAttempts(nodePod);
    // Init containers first, one at a time: the app containers wait until all of them exited 0.
    for (const container of pod.spec?.initContainers ?? []) {
      const current = latest.get(container.name);
      if (current?.state === 'Exited' && current.exitCode === 0) continue;
      if (current?.state === 'Running') return false;
      // An init container that failed is retried unless the pod never restarts anything; one left
      // created by a failed start is started again (computeInitContainerActions).
      if (current?.state === 'Exited' && (pod.spec?.restartPolicy ?? 'Always') === 'Never') return false;
      const backoff = this.backoffs.get(this.backoffKey(pod, container.name));
      if (backoff !== undefined && this.now() < backoff.notBefore) return false;
      return this.restart(pod, container, 'init', nodePod, current, options, events);
    }
    for (const container of pod.spec?.containers ?? []) {
      const current = latest.get(container.name);
      if (!killed.has(container.name) && !shouldStartContainer(pod, current)) continue;
      const backoff = this.backoffs.get(this.backoffKey(pod, container.name));
      if (!killed.has(container.name) && backoff !== undefined && this.now() < backoff.notBefore) continue;
      any = (await this.restart(pod, container, 'regular', nodePod, current, options, events)) || any;
    }
    return any;
  }

  private async restart(
    pod: V1Pod,
    container: V1Container,
    kind: ContainerKind,
    nodePod: NodePod,
    current: NodeContainer | undefined,
    options: PodWorkerOptions,
    events: (PodEvent & { pod: string })[],
  ): Promise<boolean> {
    const own: PodEvent[] = [];
    if (current?.state === 'Exited') own.push({ type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container', container: container.name });
    const outcome = await startContainer(this.cri, pod, container, kind, {
      sandboxId: nodePod.sandboxId,
      sandboxConfig: buildPodSandboxConfig(pod, { podLogsRoot: options.podLogsRoot }),
      attempt: current === undefined ? 0 : current.attempt + 1,
      options,
      events: own,
    });
    events.push(...own.map((e) => ({ ...e, pod: `${pod.metadata!.namespace}/${pod.metadata!.name}` })));
    const attempt = current === undefined ? 0 : current.attempt + 1;
    const at = new Date(this.now());
    await this.options.records?.update(pod.metadata!.uid!, (r) => ({
      ...r,
      containers: containerRecords(r.containers, [outcome], { [container.name]: attempt }),
      events: mergeEvents(r.events, own, at),
    }));
    // Each restart of an exited container (and each failed start) pushes the next one further out;
    // a first start of an init container that simply follows the previous one does not.
    const exited = current?.state === 'Exited';
    if (exited || outcome.state === 'waiting') this.noteFailure(pod, container.name, outcome.state === 'waiting' ? outcome.reason : undefined, exited);
    return outcome.state === 'started';
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
      const backoff = this.backoffs.get(this.backoffKey(pod, container.name));
      const current = latest.get(container.name);
      const waiting = current === undefined || (current.state === 'Exited' && shouldRestart(pod, current.exitCode ?? 0) && !(initNames.has(container.name) && current.exitCode === 0));
      if (backoff !== undefined && waiting && this.now() < backoff.notBefore) shown = initNames.has(container.name) ? `Init:${backoff.reason}` : backoff.reason;
      // A container a failed start left created waits with that start's reason (the kubelet's
      // reason cache), not ContainerCreating.
      else if (current?.state === 'Created' && backoff?.failure !== undefined) shown = initNames.has(container.name) ? `Init:${backoff.failure}` : backoff.failure;
    }
    const startTime = nanosToTime(nodePod.createdAt);
    return { namespace: nodePod.namespace, name: nodePod.name, ready, status: shown, restarts, ...(startTime === undefined ? {} : { startTime }) };
  }

  /**
   * Containers held back by back-off wait with CrashLoopBackOff or ImagePullBackOff and the
   * kubelet's message; recorded so that `kubelet get` in another process shows them too.
   */
  private async recordBackoffs(pod: V1Pod, nodePod: NodePod): Promise<void> {
    const records = this.options.records;
    if (records === undefined) return;
    const latest = latestAttempts(nodePod);
    const waiting: Record<string, ContainerRecord> = {};
    for (const container of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
      const backoff = this.backoffs.get(this.backoffKey(pod, container.name));
      if (backoff === undefined || this.now() >= backoff.notBefore) continue;
      const current = latest.get(container.name);
      const message = `back-off ${formatBackoff(backoff.delayMs)} restarting failed container=${container.name} pod=${pod.metadata!.name}_${pod.metadata!.namespace}(${pod.metadata!.uid})`;
      if (backoff.reason === 'CrashLoopBackOff' && current?.state === 'Exited') {
        waiting[container.name] = { attempt: current.attempt, containerId: current.id, reason: backoff.reason, message };
      } else if (backoff.reason === 'ImagePullBackOff') {
        waiting[container.name] = { attempt: current === undefined ? 0 : current.attempt + 1, reason: backoff.reason, message: `Back-off pulling image ${JSON.stringify(container.image ?? '')}` };
      }
    }
    if (Object.keys(waiting).length === 0) return;
    await records.update(pod.metadata!.uid!, (r) => ({ ...r, containers: { ...r.containers, ...waiting } }));
  }

  /** Milliseconds until the earliest back-off ends, or undefined when nothing waits. */
  nextBackoffDelay(): number | undefined {
    const now = this.now();
    const pending = [...this.backoffs.values()].map((b) => b.notBefore - now).filter((d) => d > 0);
    return pending.length === 0 ? undefined : Math.min(...pending);
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
    const events = this.subscribeContainerEvents(debounced, onPass);
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

  /** Container exits from the runtime (the evented PLEG); a runtime without the stream leaves the resync. */
  private subscribeContainerEvents(onEvent: () => void, onPass: (report: SyncReport | Error) => void): { cancel(): void } {
    let stream: grpc.ClientReadableStream<unknown> | undefined;
    let cancelled = false;
    try {
      stream = this.cri.runtime.GetContainerEvents({}) as unknown as grpc.ClientReadableStream<unknown>;
    } catch (err) {
      onPass(new Error(`GetContainerEvents: ${(err as Error).message}`));
      return { cancel() {} };
    }
    // Only exits matter: creations and starts are the loop's own doing.
    stream.on('data', (event: { container_event_type?: number }) => {
      if (event.container_event_type === containerStoppedEvent) onEvent();
    });
    stream.on('error', (err: grpc.ServiceError) => {
      // CANCELLED is our own cancel; UNIMPLEMENTED means the runtime has no stream (resync only).
      if (!cancelled && err.code !== 1 && err.code !== 12) onPass(new Error(`GetContainerEvents: ${err.message}`));
    });
    return {
      cancel() {
        cancelled = true;
        stream?.cancel();
      },
    };
  }
}

/** ContainerEventType.CONTAINER_STOPPED_EVENT. */
const containerStoppedEvent = 2;

