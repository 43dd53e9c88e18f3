/**
 * The kubelet's probe manager and workers (pkg/kubelet/prober prober_manager.go, worker.go,
 * prober.go, results; kubernetes v1.34.12): one worker per container and probe type, created only
 * for containers that have that probe, each probing every periodSeconds on a shared scheduler (the
 * node's timer wheel: no timer per worker while it waits). A worker publishes a result once
 * successThreshold successes or failureThreshold failures follow each other; the results are kept
 * by container ID, so a restarted container starts over from the probe type's initial value:
 * readiness failure (not ready until probed), liveness success, startup unknown (not started).
 *
 * The manager never blocks a pod sync: syncs read its results (started, ready, failed liveness)
 * and hand it the pod's container states; a changed result asks for a sync (onResult), which
 * recomputes the status and, for a failed liveness or startup probe, kills the container.
 */
import type { V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import type { PodEvent } from './pod-worker-options.js';
import type { NodePod } from './node-pods.js';
import type { PodPhase, PodStatusView, ProbeStatus } from './pod-status.js';
import { effectiveProbe, runProbe, type EffectiveProbe, type ExecInContainer, type ProbeOutcome, type ProbeTarget, type ProbeType } from './probes.js';

export interface ScheduledTask {
  cancel(): void;
}

/** Runs a function once after a delay; the node's TimerWheel is one. */
export interface Scheduler {
  schedule(fn: () => void, delayMs: number): ScheduledTask;
}

/** results.Result. */
export type Result = 'success' | 'failure' | 'unknown';

/** A container as the last sync saw it: what a worker needs of the pod status. */
export interface ProbedContainer {
  readonly name: string;
  /** The runtime's container ID of the newest attempt; absent before the first CreateContainer. */
  readonly containerId?: string;
  readonly state: 'running' | 'terminated' | 'waiting';
  /** When the newest attempt started running (ms since the epoch). */
  readonly startedAtMs?: number;
}

export interface ProbedPod {
  readonly phase: PodPhase;
  readonly podIp: string;
  readonly containers: readonly ProbedContainer[];
}

/** The containers of a pod as a sync saw them: the newest attempt of each, by the runtime. */
export function probedPod(view: PodStatusView, nodePod: NodePod | undefined): ProbedPod {
  const latest = new Map<string, NodePod['containers'][number]>();
  for (const c of nodePod?.containers ?? []) if ((latest.get(c.name)?.attempt ?? -1) < c.attempt) latest.set(c.name, c);
  const containers = view.containerStatuses.map((s): ProbedContainer => {
    const c = latest.get(s.name);
    const startedAtMs = c?.startedAt === undefined || c.startedAt === '' || c.startedAt === '0' ? undefined : Number(BigInt(c.startedAt) / 1_000_000n);
    return {
      name: s.name,
      ...(c === undefined ? {} : { containerId: c.id }),
      state: c?.state === 'Running' ? 'running' : c?.state === 'Exited' ? 'terminated' : 'waiting',
      ...(startedAtMs === undefined ? {} : { startedAtMs }),
    };
  });
  return { phase: view.phase, podIp: nodePod?.podIp ?? '', containers };
}

export interface ProberOptions {
  readonly scheduler: Scheduler;
  /** Runs a probe command in a container (CRI ExecSync). */
  readonly exec: ExecInContainer;
  /** A published result changed: the pod needs a sync. */
  readonly onResult: (podUid: string) => void;
  /** Unhealthy and ProbeWarning events, as the prober records them. */
  readonly onEvent: (pod: V1Pod, event: PodEvent) => void;
  /** Milliseconds clock, replaceable in tests. */
  readonly now?: () => number;
  /** The start-up jitter's source, replaceable in tests. */
  readonly random?: () => number;
  /**
   * Whether isReady runs a pending readiness probe at once (default true). Off for callers that
   * poll the status (`kubelet run --wait-ready`), which would otherwise probe at their pace.
   */
  readonly triggerReadiness?: boolean;
  /** The probe types that get workers (default all three). */
  readonly types?: readonly ProbeType[];
  /** One run of a probe, replaceable in tests. */
  readonly runProbe?: (probe: EffectiveProbe, target: ProbeTarget, exec: ExecInContainer) => Promise<ProbeOutcome>;
}

const probeTypes: readonly ProbeType[] = ['Startup', 'Readiness', 'Liveness'];
const initialValue: Record<ProbeType, Result> = { Readiness: 'failure', Liveness: 'success', Startup: 'unknown' };
/** prober.go maxProbeRetries: a probe that errors is run again this many times in all. */
const maxProbeRetries = 3;

function probeOf(container: V1Container, type: ProbeType): V1Probe | undefined {
  const spec = type === 'Readiness' ? container.readinessProbe : type === 'Liveness' ? container.livenessProbe : container.startupProbe;
  return spec ?? undefined;
}

export class ProbeManager {
  /** Workers by pod UID, then `container/type`. */
  private readonly workers = new Map<string, Map<string, ProbeWorker>>();
  private readonly pods = new Map<string, ProbedPod>();
  private readonly results: Record<ProbeType, Map<string, Result>> = { Readiness: new Map(), Liveness: new Map(), Startup: new Map() };
  readonly startedAt: number;

  constructor(readonly options: ProberOptions) {
    this.startedAt = this.now();
  }

  now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** AddPod: workers for the probes of the pod's regular containers (once per pod). */
  addPod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (this.workers.has(uid)) {
      for (const w of this.workers.get(uid)!.values()) w.pod = pod;
      return;
    }
    const workers = new Map<string, ProbeWorker>();
    for (const container of pod.spec?.containers ?? []) {
      for (const type of this.options.types ?? probeTypes) {
        const spec = probeOf(container, type);
        if (spec !== undefined) workers.set(`${container.name}/${type}`, new ProbeWorker(this, pod, container, type, effectiveProbe(spec)));
      }
    }
    if (workers.size === 0) return;
    this.workers.set(uid, workers);
    for (const w of workers.values()) w.start();
  }

  /** RemovePod: the pod is gone or terminating; its workers stop and its results go. */
  removePod(uid: string): void {
    const workers = this.workers.get(uid);
    this.workers.delete(uid);
    this.pods.delete(uid);
    for (const w of workers?.values() ?? []) w.stop();
  }

  stop(): void {
    for (const uid of [...this.workers.keys()]) this.removePod(uid);
  }

  /** The pod's containers as the last sync saw them (the status manager's copy the workers read). */
  setPodStatus(uid: string, pod: ProbedPod): void {
    if (this.workers.has(uid)) this.pods.set(uid, pod);
  }

  /** Hands the workers the pod's containers as a sync saw them (the status manager's copy); only probed pods keep one. */
  observe(uid: string, view: PodStatusView, nodePod: NodePod | undefined): void {
    this.setPodStatus(uid, probedPod(view, nodePod));
  }

  /** The pod's started and ready as its probes have them, for its status; undefined when it has no probe worker. */
  statusOf(uid: string): ProbeStatus | undefined {
    if (!this.probes(uid)) return undefined;
    return { started: (name, id) => this.isStarted(uid, name, id), ready: (name, id) => this.isReady(uid, name, id) };
  }

  podStatus(uid: string): ProbedPod | undefined {
    return this.pods.get(uid);
  }

  /** Whether the pod has probe workers at all (most have none). */
  probes(uid: string): boolean {
    return this.workers.has(uid);
  }

  private hasWorker(uid: string, container: string, type: ProbeType): boolean {
    return this.workers.get(uid)?.has(`${container}/${type}`) === true;
  }

  /** isContainerStarted: a running container is started once its startup probe succeeded, or at once without one. */
  isStarted(uid: string, container: string, containerId: string): boolean {
    const result = this.results.Startup.get(containerId);
    if (result !== undefined) return result === 'success';
    return !this.hasWorker(uid, container, 'Startup');
  }

  /**
   * UpdatePodStatus: a started running container is ready when its readiness probe succeeded, or
   * without one. A readiness probe that has not succeeded yet is asked to run at once, as
   * UpdatePodStatus triggers it (so a new container is not kept unready for a whole period).
   */
  isReady(uid: string, container: string, containerId: string): boolean {
    if (!this.isStarted(uid, container, containerId)) return false;
    if (this.results.Readiness.get(containerId) === 'success') return true;
    const worker = this.workers.get(uid)?.get(`${container}/Readiness`);
    if (this.options.triggerReadiness !== false) worker?.trigger();
    return worker === undefined;
  }

  /** computePodActions: a running container whose liveness or startup probe failed is killed. */
  failedProbe(containerId: string): 'liveness' | 'startup' | undefined {
    if (this.results.Liveness.get(containerId) === 'failure') return 'liveness';
    if (this.results.Startup.get(containerId) === 'failure') return 'startup';
    return undefined;
  }

  /** results.Manager Set: an update is sent only when the result changes. */
  setResult(type: ProbeType, containerId: string, result: Result, uid: string): void {
    const previous = this.results[type].get(containerId);
    this.results[type].set(containerId, result);
    if (previous !== result) this.options.onResult(uid);
  }

  removeResult(type: ProbeType, containerId: string): void {
    this.results[type].delete(containerId);
  }

  /** prober.probe: runs the probe (again on error, up to 3 times), records the events, maps the result. */
  async probe(type: ProbeType, pod: V1Pod, target: ProbeTarget, probe: EffectiveProbe): Promise<{ result: Result; error?: Error }> {
    const run = this.options.runProbe ?? runProbe;
    let outcome: ProbeOutcome = { result: 'unknown', output: '' };
    for (let i = 0; i < maxProbeRetries; i++) {
      outcome = await run(probe, target, this.options.exec);
      if (outcome.error === undefined) break;
    }
    const event = (reason: string, message: string): void => this.options.onEvent(pod, { type: 'Warning', reason, message, container: target.container.name });
    if (outcome.error !== undefined) {
      event('Unhealthy', `${type} probe errored and resulted in ${outcome.result} state: ${outcome.error.message}`);
      return { result: 'failure', error: outcome.error };
    }
    switch (outcome.result) {
      case 'success':
        return { result: 'success' };
      case 'warning':
        event('ProbeWarning', `${type} probe warning: ${outcome.output}`);
        return { result: 'success' };
      case 'failure':
        event('Unhealthy', `${type} probe failed: ${outcome.output}`);
        return { result: 'failure' };
      default:
        return { result: 'failure' };
    }
  }
}

/** One probe of one container (worker.go): a loop of doProbe every periodSeconds until stopped. */
class ProbeWorker {
  private containerId: string | undefined;
  private lastResult: Result | undefined;
  private resultRun = 0;
  /** After a failed liveness probe, or any startup result: no more probing until the container changes. */
  private onHold = false;
  private task: ScheduledTask | undefined;
  private stopped = false;
  /** Whether the first probe ran (before it, the start-up jitter is not cut short). */
  private ticked = false;
  private probing = false;
  /** A manual trigger (worker.go manualTriggerCh, one buffered): the next probe runs at once. */
  private triggered = false;
  private readonly uid: string;

  constructor(
    private readonly manager: ProbeManager,
    public pod: V1Pod,
    private readonly container: V1Container,
    private readonly type: ProbeType,
    private readonly probe: EffectiveProbe,
  ) {
    this.uid = pod.metadata?.uid ?? '';
  }

  start(): void {
    const period = this.probe.periodSeconds * 1000;
    // Workers created in the kubelet's first period spread out over it (worker.go run).
    const sinceStart = this.manager.now() - this.manager.startedAt;
    const jitter = period > sinceStart ? (this.manager.options.random ?? Math.random)() * period : 0;
    this.task = this.manager.options.scheduler.schedule(() => void this.tick(), jitter);
  }

  /** Runs the probe at once, or right after the one under way (or the first, after the start-up jitter). */
  trigger(): void {
    if (this.stopped) return;
    if (!this.ticked || this.probing) {
      this.triggered = true;
      return;
    }
    this.task?.cancel();
    this.task = this.manager.options.scheduler.schedule(() => void this.tick(), 0);
  }

  stop(): void {
    this.stopped = true;
    this.task?.cancel();
    if (this.containerId !== undefined) this.manager.removeResult(this.type, this.containerId);
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const began = this.manager.now();
    this.probing = true;
    // worker.go eats a panicking probe and goes on.
    const keepGoing = await this.doProbe().catch(() => true);
    this.probing = false;
    this.ticked = true;
    if (this.stopped) return;
    if (!keepGoing) {
      this.stop();
      return;
    }
    // A ticker: the next probe one period after this one began (at once if it took longer, or
    // when triggered meanwhile).
    const delay = this.triggered ? 0 : Math.max(0, began + this.probe.periodSeconds * 1000 - this.manager.now());
    this.triggered = false;
    this.task = this.manager.options.scheduler.schedule(() => void this.tick(), delay);
  }

  /** worker.go doProbe: false when the worker should stop. */
  private async doProbe(): Promise<boolean> {
    const status = this.manager.podStatus(this.uid);
    if (status === undefined) return true;
    if (status.phase === 'Failed' || status.phase === 'Succeeded') return false;
    const c = status.containers.find((s) => s.name === this.container.name);
    if (c?.containerId === undefined) return true; // wait for more information
    if (this.containerId !== c.containerId) {
      if (this.containerId !== undefined) this.manager.removeResult(this.type, this.containerId);
      this.containerId = c.containerId;
      this.manager.setResult(this.type, c.containerId, initialValue[this.type], this.uid);
      this.onHold = false;
    }
    if (this.onHold) return true;
    if (c.state !== 'running') {
      this.manager.setResult(this.type, c.containerId, 'failure', this.uid);
      return c.state !== 'terminated' || (this.pod.spec?.restartPolicy ?? 'Always') !== 'Never';
    }
    const deleting = this.pod.metadata?.deletionTimestamp != null;
    if (deleting && (this.type === 'Liveness' || this.type === 'Startup')) {
      this.manager.setResult(this.type, c.containerId, 'success', this.uid);
      return false;
    }
    if (Math.floor((this.manager.now() - (c.startedAtMs ?? 0)) / 1000) < this.probe.initialDelaySeconds) return true;
    const started = this.manager.isStarted(this.uid, this.container.name, c.containerId);
    if (started ? this.type === 'Startup' : this.type !== 'Startup') return true;

    const containerId = c.containerId;
    const { result, error } = await this.manager.probe(this.type, this.pod, { container: this.container, containerId, podIp: status.podIp }, this.probe);
    if (error !== undefined || this.stopped || this.containerId !== containerId) return true;

    if (this.lastResult === result) this.resultRun++;
    else {
      this.lastResult = result;
      this.resultRun = 1;
    }
    if ((result === 'failure' && this.resultRun < this.probe.failureThreshold) || (result === 'success' && this.resultRun < this.probe.successThreshold)) return true;
    this.manager.setResult(this.type, containerId, result, this.uid);
    if ((this.type === 'Liveness' && result === 'failure') || this.type === 'Startup') {
      this.onHold = true;
      this.resultRun = 0;
    }
    return true;
  }
}
