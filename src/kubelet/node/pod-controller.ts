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
 * read through the API, as the node, under the Node authorizer.
 */
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import { unaryCall, type CriClient } from '../../cri/proto.js';
import { gmsaConfigMapAnnotations, gmsaConfigMapKey } from '../../apiserver/admission.js';
import { deleteNodePod, listNodePods, type NodePod } from '../node-pods.js';
import { computePodStatus, type PodStatusView, type ProbeStatus } from '../pod-status.js';
import type { PodRecord } from '../pod-records.js';
import type { ImagePulls, PodEvent, PodWorkerOptions } from '../pod-worker-options.js';
import { PodSyncEngine, recordOfSync } from '../sync/pod-sync.js';
import { watchContainerExits } from '../sync/container-exits.js';
import { apiPodStatus } from './api-pod-status.js';
import { ApiError, isNotFound, type ApiRequester } from './api-client.js';
import type { EventRecorder } from './event-recorder.js';
import { errorText } from './node-controller.js';
import type { PodHandler } from './pod-informer.js';
import { activePods, admitPodOnNode, type AdmissionNode } from '../kubelet-admission.js';
import { runInContainer } from '../container-exec.js';
import { apiPodObjects } from '../pod-objects.js';
import { ProbeManager, probedPod } from '../prober.js';
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
  syncing: boolean;
  dirty: boolean;
  record: PodRecord;
  backoffTimer?: NodeJS.Timeout;
  lastStatus: string;
  readonly transitions: Map<string, { status: string; at: string }>;
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

  constructor(
    private readonly api: ApiRequester,
    private readonly cri: CriClient,
    private readonly recorder: EventRecorder,
    private readonly logger: Logger,
    private readonly options: PodControllerOptions,
  ) {
    this.ownWheel = options.wheel === undefined ? new TimerWheel() : undefined;
    this.engine = new PodSyncEngine(cri, { ...options, gracePeriodSeconds: 0 });
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
        syncing: false,
        dirty: false,
        record: { pod, startTime: new Date().toISOString(), sandboxCreated: false, containers: {}, events: [] },
        lastStatus: '',
        transitions: new Map(),
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

  private async sync(state: PodState): Promise<void> {
    if (state.deleted) {
      clearTimeout(state.backoffTimer);
      this.engine.forget(state.uid);
      this.probes.removePod(state.uid);
      this.pods.delete(state.uid);
      this.recorder.forget(state.uid);
      await this.removeFromRuntime(state.uid, 'deleted from the API server');
      return;
    }
    if (state.rejected) return;
    const pod = state.pod;
    if (pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null) {
      await this.terminate(state);
      return;
    }
    let nodePod = await this.readNodePod(state.uid);
    const events: PodEvent[] = [];
    // A pod that already ran to its end (before a restart of this kubelet) is not run again.
    const phase = pod.status?.phase;
    if (!state.started && nodePod === undefined && (phase === 'Succeeded' || phase === 'Failed')) {
      state.rejected = phase === 'Failed' && pod.status?.reason !== undefined;
      state.started = true;
      return;
    }
    if (state.started && nodePod === undefined && (phase === 'Succeeded' || phase === 'Failed') && state.lastStatus === '') return;
    // Nor one whose sandbox a node reboot left not ready.
    if (!state.started && nodePod !== undefined && !nodePod.sandboxReady && (phase === 'Succeeded' || phase === 'Failed')) {
      state.started = true;
      return;
    }
    if (!state.started && nodePod === undefined && !this.adoptable.has(state.uid)) {
      const rejection = this.admit(pod);
      if (rejection !== undefined) {
        state.rejected = true;
        this.recorder.record(pod, [{ type: 'Warning', reason: rejection.reason, message: rejection.message }]);
        await this.patchStatus(state, { phase: 'Failed', reason: rejection.reason, message: `Pod was rejected: ${rejection.message}` });
        this.logger.info({ pod: podKey(pod), reason: rejection.reason }, 'pod rejected by node admission');
        return;
      }
    }
    if (this.adoptable.delete(state.uid) && nodePod !== undefined) {
      this.logger.info({ pod: podKey(pod), sandbox: nodePod.sandboxId }, 'adopted pod from the runtime');
    }
    state.started = true;
    const workerOptions = await this.workerOptions(pod);
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
    const view = computePodStatus(pod, nodePod, state.record, this.probeStatus(state.uid), [this.options.nodeIp]);
    this.observeForProbes(state, view, nodePod);
    await this.patchStatus(state, apiPodStatus(view, state.transitions, this.options.nodeIp));
    this.armBackoffTimer(state);
  }

  /** lifecycle/predicate.go against the node's other active pods (kubelet-admission.ts). */
  private admit(pod: V1Pod): { reason: string; message: string } | undefined {
    const others = activePods([...this.pods.values()].filter((s) => s.started && !s.rejected && !s.deleted && s.uid !== pod.metadata?.uid).map((s) => s.pod));
    return admitPodOnNode({ pod, otherPods: others }, this.options.node);
  }

  /**
   * The worker's options for this pod: the ConfigMaps its environment names, and the KEP's
   * ConfigMap credential spec, each read through the API as the node. A string is the error
   * that keeps the containers from being configured.
   */
  private async workerOptions(pod: V1Pod): Promise<PodWorkerOptions | string> {
    const namespace = pod.metadata?.namespace ?? 'default';
    const names = new Set<string>();
    for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
      for (const from of c.envFrom ?? []) if (from.configMapRef?.name) names.add(from.configMapRef.name);
      for (const env of c.env ?? []) if (env.valueFrom?.configMapKeyRef?.name) names.add(env.valueFrom.configMapKeyRef.name);
    }
    const configMaps: V1ConfigMap[] = [];
    for (const name of names) {
      try {
        configMaps.push(await this.api.get<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps/${name}`));
      } catch (err) {
        if (!isNotFound(err)) throw err; // a missing one is the worker's "configmap not found"
      }
    }
    const annotation = gmsaConfigMapAnnotations.map((a) => pod.metadata?.annotations?.[a]).find((v) => v !== undefined && v !== '');
    if (annotation !== undefined && pod.spec?.securityContext?.windowsOptions?.gmsaCredentialSpec === undefined) {
      try {
        const configMap = await this.api.get<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps/${annotation}`);
        const spec = configMap.data?.[gmsaConfigMapKey];
        if (spec === undefined || spec === '') return `GMSA ConfigMap ${JSON.stringify(annotation)} in namespace ${JSON.stringify(namespace)} does not have a ${gmsaConfigMapKey} key`;
        pod.spec!.securityContext = { ...pod.spec!.securityContext, windowsOptions: { ...pod.spec!.securityContext?.windowsOptions, gmsaCredentialSpec: spec } };
      } catch (err) {
        if (err instanceof ApiError) return `cannot read GMSA ConfigMap ${namespace}/${annotation}: ${err.statusMessage}`;
        throw err;
      }
    }
    return {
      podLogsRoot: this.options.podLogsRoot,
      nodeName: this.options.nodeName,
      nodeCpuCount: this.options.nodeCpuCount,
      configMaps,
      // RuntimeClasses and pull secrets through the API as the node (the Node authorizer lets a
      // node read the secrets its pods name).
      ...apiPodObjects((path) => this.api.get(path), isNotFound),
      callTimeoutMs: this.options.callTimeoutMs,
      ...(this.options.imagePulls === undefined ? {} : { imagePulls: this.options.imagePulls }),
    };
  }

  private async readNodePod(uid: string): Promise<NodePod | undefined> {
    return (await listNodePods(this.cri, { uid, callTimeoutMs: this.options.callTimeoutMs }))[0];
  }

  // ---- probes ----

  private probeStatus(uid: string): ProbeStatus | undefined {
    if (!this.probes.probes(uid)) return undefined;
    return { started: (name, id) => this.probes.isStarted(uid, name, id), ready: (name, id) => this.probes.isReady(uid, name, id) };
  }

  /** Hands the probe workers the containers as this sync saw them (workers exist only for probed containers). */
  private observeForProbes(state: PodState, view: PodStatusView, nodePod: NodePod | undefined): void {
    if (!this.probes.probes(state.uid)) return;
    this.probes.setPodStatus(state.uid, probedPod(view, nodePod));
  }

  // ---- restarts and back-off ----

  /** The next sync of a pod follows the end of its earliest back-off. */
  private armBackoffTimer(state: PodState): void {
    clearTimeout(state.backoffTimer);
    const pending = this.engine.nextBackoffDelay(state.uid);
    if (pending === undefined || this.stopped) return;
    state.backoffTimer = setTimeout(() => this.enqueue(state.uid), pending + 5);
  }

  // ---- status ----

  /** PATCH pods/status (strategic merge, with metadata.uid as the status manager sends it) when it changed. */
  private async patchStatus(state: PodState, status: Record<string, unknown>): Promise<void> {
    const { conditions, ...rest } = status as { conditions?: { lastTransitionTime?: string }[] };
    const fingerprint = JSON.stringify({ ...rest, conditions: conditions?.map(({ lastTransitionTime: _t, ...c }) => c) });
    if (fingerprint === state.lastStatus) return;
    const m = state.pod.metadata!;
    try {
      await this.api.request('PATCH', `/api/v1/namespaces/${m.namespace}/pods/${m.name}/status`, { metadata: { uid: m.uid }, status }, 'application/strategic-merge-patch+json');
      state.lastStatus = fingerprint;
    } catch (err) {
      if (isNotFound(err) || (err instanceof ApiError && err.status === 409)) return; // gone, or a new pod of that name
      this.logger.warn({ pod: podKey(state.pod), err: errorText(err) }, 'Failed to update status for pod');
      // Try again later: nothing else would send it.
      if (!this.stopped) setTimeout(() => this.enqueue(state.uid), 2_000).unref();
    }
  }

  // ---- deletion ----

  /** killPod with the deletion's grace period, the final status, then the status manager's DELETE. */
  private async terminate(state: PodState): Promise<void> {
    const pod = state.pod;
    const m = pod.metadata!;
    if (!state.terminated) {
      const grace = m.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
      const nodePod = await this.readNodePod(state.uid);
      const call = { timeoutMs: this.options.callTimeoutMs + grace * 1000 };
      if (nodePod !== undefined) {
        const running = nodePod.containers.filter((c) => c.state === 'Running');
        this.recorder.record(pod, running.map((c) => ({ type: 'Normal' as const, reason: 'Killing', message: `Stopping container ${c.name}`, container: c.name })));
        await Promise.all(running.map((c) => unaryCall(this.cri.runtime, 'StopContainer', { container_id: c.id, timeout: String(grace) }, call).catch(ignoreNotFound)));
        for (const id of nodePod.sandboxIds) await unaryCall(this.cri.runtime, 'StopPodSandbox', { pod_sandbox_id: id }, call).catch(ignoreNotFound);
      }
      clearTimeout(state.backoffTimer);
      this.engine.forget(state.uid);
      this.probes.removePod(state.uid);
      const stopped = await this.readNodePod(state.uid);
      // A deleted pod's containers are not restarted: its phase is terminal.
      const final = { ...pod, spec: { ...pod.spec!, restartPolicy: 'Never' } } as V1Pod;
      const records = Object.fromEntries(Object.entries(state.record.containers).filter(([, r]) => r.reason === undefined || r.reason === 'CreateContainerConfigError'));
      const view = computePodStatus(final, stopped, { ...state.record, containers: records }, undefined, [this.options.nodeIp]);
      const phase = view.phase === 'Succeeded' || view.phase === 'Failed' ? view.phase : view.containerStatuses.every((c) => c.state.terminated?.exitCode === 0) && view.containerStatuses.length > 0 ? 'Succeeded' : 'Failed';
      await this.patchStatus(state, apiPodStatus({ ...view, phase }, state.transitions, this.options.nodeIp));
      state.terminated = true;
    }
    try {
      await this.api.request('DELETE', `/api/v1/namespaces/${m.namespace}/pods/${m.name}`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: m.uid } });
      this.logger.info({ pod: podKey(pod) }, 'pod terminated and deleted');
    } catch (err) {
      if (isNotFound(err) || (err instanceof ApiError && err.status === 409)) return;
      this.logger.warn({ pod: podKey(pod), err: errorText(err) }, 'failed to delete the terminated pod; will retry');
      if (!this.stopped) setTimeout(() => this.enqueue(state.uid), 2_000).unref();
    }
  }

  private async removeFromRuntime(uid: string, why: string): Promise<void> {
    const nodePod = await this.readNodePod(uid);
    if (nodePod === undefined) return;
    await deleteNodePod(this.cri, nodePod, { gracePeriodSeconds: 0, callTimeoutMs: this.options.callTimeoutMs });
    this.logger.info({ pod: `${nodePod.namespace}/${nodePod.name}`, uid, why }, 'pod removed from the runtime');
  }
}

/** The part of a pod's spec that may change after creation (container images). */
const imagesOf = (pod: V1Pod): string => JSON.stringify([...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.image));

const podKey = (pod: V1Pod): string => `${pod.metadata?.namespace}/${pod.metadata?.name}`;

function ignoreNotFound(err: unknown): void {
  if ((err as { code?: number }).code !== 5) throw err;
}
