/**
 * The pod side of a simulated node (virtual-kubelet's PodController): the pods the API server
 * binds to the node (from the shared PodInformer) are run through the same pod worker as
 * `kubelet run`, and reported back as the kubelet reports them (pkg/kubelet, v1.34):
 *
 * - admission on the node (lifecycle/predicate.go, kubelet-admission.ts): the OS label and field,
 *   then resources, node affinity, node name, host ports and NoExecute taints; a rejected pod is
 *   Failed with the reason, "Pod was rejected: <message>", and a Warning event;
 * - status through the pods/status subresource (strategic-merge PATCH carrying metadata.uid):
 *   phase, the conditions PodReadyToStartContainers/Initialized/ContainersReady/Ready,
 *   podIP(s), hostIP(s), container statuses; PATCHed only when it changed;
 * - restartPolicy with the kubelet's back-off (10 s doubling to 5 min: CrashLoopBackOff);
 * - liveness, readiness and startup probes (prober.ts) on the process's timer wheel: readiness
 *   sets `ready` and the Ready conditions, startup `started`; a failed liveness or startup probe
 *   kills the container (event Killing), which is then restarted per restartPolicy;
 * - graceful deletion: deletionTimestamp → StopContainer with the grace period → final status →
 *   DELETE with gracePeriodSeconds 0 and a UID precondition (status_manager.go); pods that vanish
 *   from the API are stopped and removed from the runtime;
 * - after a restart, the runtime's pods are adopted by the kubelet's UID label, never run twice.
 *
 * Pods from the API were admitted by the API server and its webhooks: no emulated GMSA admission
 * here. The KEP's ConfigMap design is the kubelet's share: the ConfigMap its annotation names is
 * read through the API, as the node, under the Node authorizer (api-worker-options.ts).
 *
 * The shape: the informer is the source of pods (onPod, onPodDeleted, onRelist feed a per-pod work
 * queue); each sync decides whether the pod runs here (admitted), then the one pod sync engine
 * (../sync/pod-sync.ts) reads the pod from the runtime, carries out its actions, kills and removes
 * it; the API server is the status sink (api-pod-status.ts: pods/status PATCH, the final DELETE).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import type { CriClient } from '../../cri/proto.js';
import { listNodePods, type NodePod } from '../node-pods.js';
import { computePodStatus } from '../pod-status.js';
import type { PodRecord } from '../pod-records.js';
import type { ImagePulls, PodEvent } from '../pod-worker-options.js';
import { PodSyncEngine, recordOfSync } from '../sync/pod-sync.js';
import { watchContainerExits } from '../sync/container-exits.js';
import { ApiPodStatusSink, podKey } from './api-pod-status.js';
import type { ApiRequester } from './api-client.js';
import { apiWorkerOptions } from './api-worker-options.js';
import type { EventRecorder } from './event-recorder.js';
import { errorText } from './node-controller.js';
import type { PodHandler } from './pod-informer.js';
import { activePods, admitPodOnNode, type AdmissionNode } from '../kubelet-admission.js';
import { runInContainer } from '../container-exec.js';
import { ProbeManager } from '../prober.js';
import { TimerWheel } from './timer-wheel.js';
import { IdentityEventWatcher } from './identity-event-watcher.js';

/** Bounds the pod syncs running at once across every node of a process. */
export class SyncLimiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

export interface PodControllerOptions {
  readonly nodeName: string;
  readonly nodeIp: string;
  /** The Node as admission reads it (labels, taints, allocatable). */
  readonly node: AdmissionNode;
  readonly nodeCpuCount: number;
  readonly podLogsRoot: string;
  readonly callTimeoutMs: number;
  readonly limiter: SyncLimiter;
  readonly imagePulls?: ImagePulls;
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** The process's timer wheel, on which probe workers wait; default: one of the controller's own. */
  readonly wheel?: TimerWheel;
}

interface PodState {
  pod: V1Pod;
  readonly uid: string;
  /** Gone from the API: stop and remove it. */
  deleted: boolean;
  rejected: boolean;
  /** The first sync ran (or the pod was adopted from the runtime). */
  started: boolean;
  /** Containers stopped for a deletion and the final status sent. */
  terminated: boolean;
  /**
   * The final DELETE was answered: later events of the pod (its own status PATCH, a finalizer's
   * update) send no second one, as the status manager forgets a pod's status once it deleted it.
   */
  deleteAnswered: boolean;
  syncing: boolean;
  dirty: boolean;
  record: PodRecord;
  backoffTimer?: NodeJS.Timeout;
}


export class PodController implements PodHandler {
  private readonly pods = new Map<string, PodState>();
  /** Pods the runtime had at start-up, by UID: adopted when the API lists them, removed when not. */
  private adoptable = new Set<string>();
  private events: { cancel(): void } | undefined;
  /** The kubelet's pod sync: actions, their execution, the restart back-off. */
  private readonly engine: PodSyncEngine;
  private stopped = false;
  private readonly probes: ProbeManager;
  private readonly ownWheel: TimerWheel | undefined;
  /** Posts the failures of identity operations inside the pods' containers as events. */
  private readonly identityEvents: IdentityEventWatcher;
  /** Where the pods' status goes: the API server. */
  private readonly status: ApiPodStatusSink;

  constructor(
    private readonly api: ApiRequester,
    private readonly cri: CriClient,
    private readonly recorder: EventRecorder,
    private readonly logger: Logger,
    private readonly options: PodControllerOptions,
  ) {
    this.ownWheel = options.wheel === undefined ? new TimerWheel() : undefined;
    this.engine = new PodSyncEngine(cri, { ...options, gracePeriodSeconds: 0 });
    this.status = new ApiPodStatusSink(api, logger, { nodeIp: options.nodeIp, retry: (uid) => this.enqueueLater(uid) });
    this.probes = new ProbeManager({
      scheduler: options.wheel ?? this.ownWheel!,
      exec: runInContainer(cri, options.callTimeoutMs),
      onResult: (uid) => this.enqueue(uid),
      onEvent: (pod, event) => this.recorder.record(pod, [event]),
    });
    const live = () => [...this.pods.values()].filter((s) => !s.deleted && !s.rejected && s.started);
    this.identityEvents = new IdentityEventWatcher(cri.endpoint, options.wheel ?? this.ownWheel!, recorder, live, options.callTimeoutMs, logger);
  }

  /** Reads what the runtime still runs (to adopt it) and follows container exits. */
  async start(): Promise<void> {
    const existing = await listNodePods(this.cri, { callTimeoutMs: this.options.callTimeoutMs });
    this.adoptable = new Set(existing.map((p) => p.uid));
    if (existing.length > 0) this.logger.info({ node: this.options.nodeName, pods: existing.length }, 'pods found in the runtime; adopting those the API server still binds here');
    this.followContainerEvents();
    this.identityEvents.start();
  }

  stop(): void {
    this.stopped = true;
    this.events?.cancel();
    for (const state of this.pods.values()) clearTimeout(state.backoffTimer);
    this.probes.stop();
    this.identityEvents.stop();
    this.ownWheel?.stop();
  }

  /** The record of a pod of the node by namespace and name (cri-winsim explain). */
  podRecord(namespace: string, name: string): PodRecord | undefined {
    for (const s of this.pods.values()) {
      if (!s.deleted && s.pod.metadata?.namespace === namespace && s.pod.metadata?.name === name) return { ...s.record, pod: s.pod };
    }
    return undefined;
  }

  /** The pods the node runs, for the kubelet server's /pods. */
  runningPods(): V1Pod[] {
    return [...this.pods.values()].filter((s) => !s.deleted && !s.rejected).map((s) => s.pod);
  }

  private followContainerEvents(): void {
    if (this.stopped) return;
    this.events = watchContainerExits(
      this.cri,
      (uid) => {
        if (uid !== undefined && this.pods.has(uid)) this.enqueue(uid);
      },
      (err) => this.logger.warn({ err: err.message }, 'container exits are seen at the next sync only'),
    );
  }

  // ---- informer events ----

  onPod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const state = this.pods.get(uid);
    if (state === undefined) {
      this.pods.set(uid, {
        pod,
        uid,
        deleted: false,
        rejected: false,
        started: false,
        terminated: false,
        deleteAnswered: false,
        syncing: false,
        dirty: false,
        record: { pod, startTime: new Date().toISOString(), sandboxCreated: false, containers: {}, events: [] },
      });
    } else {
      // A status written by us comes back as an update: only a spec or deletion change needs a sync.
      const changed = state.pod.metadata?.deletionTimestamp !== pod.metadata?.deletionTimestamp || imagesOf(state.pod) !== imagesOf(pod);
      state.pod = pod;
      if (!changed) return;
    }
    this.enqueue(uid);
  }

  onPodDeleted(pod: V1Pod): void {
    const state = this.pods.get(pod.metadata?.uid ?? '');
    if (state === undefined) return;
    state.deleted = true;
    this.enqueue(state.uid);
  }

  onRelist(pods: readonly V1Pod[]): void {
    const listed = new Set(pods.map((p) => p.metadata?.uid ?? ''));
    for (const state of this.pods.values()) {
      if (!listed.has(state.uid)) {
        state.deleted = true;
        this.enqueue(state.uid);
      }
    }
    for (const pod of pods) this.onPod(pod);
    // What the runtime had that the API server no longer binds here: orphans.
    for (const uid of this.adoptable) {
      if (listed.has(uid)) continue;
      this.adoptable.delete(uid);
      void this.options.limiter.run(() => this.removeFromRuntime(uid, 'orphaned'));
    }
  }

  // ---- the per-pod work queue ----

  private enqueue(uid: string): void {
    const state = this.pods.get(uid);
    if (state === undefined || this.stopped) return;
    if (state.syncing) {
      state.dirty = true;
      return;
    }
    state.syncing = true;
    void this.options.limiter
      .run(() => this.sync(state))
      .catch((err: unknown) => this.logger.error({ pod: podKey(state.pod), err: errorText(err) }, 'Error syncing pod, skipping'))
      .finally(() => {
        state.syncing = false;
        if (state.dirty) {
          state.dirty = false;
          this.enqueue(uid);
        }
      });
  }

  /** A sync in a while: what failed to reach the API server is sent again by it. */
  private enqueueLater(uid: string): void {
    if (!this.stopped) setTimeout(() => this.enqueue(uid), 2_000).unref();
  }

  private async sync(state: PodState): Promise<void> {
    if (state.deleted) {
      this.drop(state);
      await this.removeFromRuntime(state.uid, 'deleted from the API server');
      return;
    }
    if (state.rejected) return;
    const pod = state.pod;
    if (pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null) {
      await this.terminate(state);
      return;
    }
    let nodePod = await this.engine.readPod(state.uid);
    if (!(await this.admitted(state, nodePod))) return;
    state.started = true;
    const events: PodEvent[] = [];
    const workerOptions = await apiWorkerOptions(this.api, pod, this.options);
    if (typeof workerOptions === 'string') {
      // The kubelet's share of the KEP's ConfigMap design failed: no container can be configured.
      for (const c of pod.spec?.containers ?? []) state.record = { ...state.record, containers: { ...state.record.containers, [c.name]: { attempt: 0, reason: 'CreateContainerConfigError', message: workerOptions } } };
      events.push({ type: 'Warning', reason: 'Failed', message: `Error: ${workerOptions}` });
    } else {
      const sync = await this.engine.sync(pod, nodePod, workerOptions, { probes: this.probes });
      // A sandbox that is not ready any more (the node rebooted: a --simulate-reboot start) was replaced.
      if (sync.actions.killPod) this.logger.info({ pod: podKey(pod), sandbox: nodePod?.sandboxId }, 'pod sandbox not ready: creating a new one');
      events.push(...sync.events);
      state.record = recordOfSync(state.record, sync);
      nodePod = sync.nodePod;
    }
    this.recorder.record(pod, events);
    // The probe workers exist before the first status (the kubelet's AddPod comes before the pod's
    // first sync): without them a probed container would be reported ready until the next sync.
    this.probes.addPod(state.pod);
    const view = computePodStatus(pod, nodePod, state.record, this.probes.statusOf(state.uid), [this.options.nodeIp]);
    this.probes.observe(state.uid, view, nodePod);
    await this.status.report(pod, view);
    this.armBackoffTimer(state);
  }

  /**
   * Whether the pod is to run here: not one that already ran to its end (before a restart of this
   * kubelet) or whose sandbox a node reboot left not ready, and one node admission accepts
   * (lifecycle/predicate.go: a rejected pod is Failed, with a Warning event). Pods the runtime
   * already had are adopted, not admitted again.
   */
  private async admitted(state: PodState, nodePod: NodePod | undefined): Promise<boolean> {
    const pod = state.pod;
    const phase = pod.status?.phase;
    const ended = phase === 'Succeeded' || phase === 'Failed';
    if (!state.started && nodePod === undefined && ended) {
      state.rejected = phase === 'Failed' && pod.status?.reason !== undefined;
      state.started = true;
      return false;
    }
    if (state.started && nodePod === undefined && ended && !this.status.reported(state.uid)) return false;
    if (!state.started && nodePod !== undefined && !nodePod.sandboxReady && ended) {
      state.started = true;
      return false;
    }
    if (!state.started && nodePod === undefined && !this.adoptable.has(state.uid)) {
      const others = activePods([...this.pods.values()].filter((s) => s.started && !s.rejected && !s.deleted && s.uid !== state.uid).map((s) => s.pod));
      const rejection = admitPodOnNode({ pod, otherPods: others }, this.options.node);
      if (rejection !== undefined) {
        state.rejected = true;
        this.recorder.record(pod, [{ type: 'Warning', reason: rejection.reason, message: rejection.message }]);
        await this.status.reject(pod, rejection);
        this.logger.info({ pod: podKey(pod), reason: rejection.reason }, 'pod rejected by node admission');
        return false;
      }
    }
    if (this.adoptable.delete(state.uid) && nodePod !== undefined) {
      this.logger.info({ pod: podKey(pod), sandbox: nodePod.sandboxId }, 'adopted pod from the runtime');
    }
    return true;
  }

  // ---- restarts and back-off ----

  /** The next sync of a pod follows the end of its earliest back-off. */
  private armBackoffTimer(state: PodState): void {
    clearTimeout(state.backoffTimer);
    const pending = this.engine.nextBackoffDelay(state.uid);
    if (pending === undefined || this.stopped) return;
    state.backoffTimer = setTimeout(() => this.enqueue(state.uid), pending + 5);
  }

  // ---- the end of a pod ----

  /** A pod is not synced any more: no back-off timer, probes, events or status of it. */
  private drop(state: PodState): void {
    clearTimeout(state.backoffTimer);
    this.engine.forget(state.uid);
    this.probes.removePod(state.uid);
    this.pods.delete(state.uid);
    this.recorder.forget(state.uid);
    this.status.forget(state.uid);
  }

  /**
   * A pod with a deletionTimestamp: killPod with the deletion's grace period (event Killing for
   * each running container), the final status with a terminal phase, then the status manager's
   * DELETE (status_manager.go).
   */
  private async terminate(state: PodState): Promise<void> {
    const pod = state.pod;
    if (!state.terminated) {
      const grace = pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
      const nodePod = await this.engine.readPod(state.uid);
      const killing = (names: readonly string[]) => this.recorder.record(pod, names.map((name) => ({ type: 'Normal' as const, reason: 'Killing', message: `Stopping container ${name}`, container: name })));
      if (nodePod !== undefined) await this.engine.killPod(nodePod, grace, killing);
      clearTimeout(state.backoffTimer);
      this.engine.forget(state.uid);
      this.probes.removePod(state.uid);
      const stopped = await this.engine.readPod(state.uid);
      // A deleted pod's containers are not restarted: its phase is terminal.
      const final = { ...pod, spec: { ...pod.spec!, restartPolicy: 'Never' } } as V1Pod;
      const records = Object.fromEntries(Object.entries(state.record.containers).filter(([, r]) => r.reason === undefined || r.reason === 'CreateContainerConfigError'));
      const view = computePodStatus(final, stopped, { ...state.record, containers: records }, undefined, [this.options.nodeIp]);
      const phase = view.phase === 'Succeeded' || view.phase === 'Failed' ? view.phase : view.containerStatuses.every((c) => c.state.terminated?.exitCode === 0) && view.containerStatuses.length > 0 ? 'Succeeded' : 'Failed';
      await this.status.report(pod, { ...view, phase });
      state.terminated = true;
    }
    if (!state.deleteAnswered) state.deleteAnswered = await this.status.delete(pod);
  }

  /** Stops and removes what the runtime has of a pod that is gone from the API server (or orphaned). */
  private async removeFromRuntime(uid: string, why: string): Promise<void> {
    const nodePod = await this.engine.readPod(uid);
    if (nodePod === undefined) return;
    await this.engine.removePod(nodePod, 0);
    this.logger.info({ pod: `${nodePod.namespace}/${nodePod.name}`, uid, why }, 'pod removed from the runtime');
  }
}

/** The part of a pod's spec that may change after creation (container images). */
const imagesOf = (pod: V1Pod): string => JSON.stringify([...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.image));


