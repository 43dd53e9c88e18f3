/**
 * A pod's API status as the kubelet computes it (pkg/kubelet kubelet_pods.go generateAPIPodStatus,
 * getPhase) from what the runtime reports and what the kubelet remembers (pod-records.ts), and the
 * `kubectl get pods` columns derived from it (kubectl printers printPod). Pure functions; times are
 * RFC 3339 strings, as the API serialises them.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { NodeContainer, NodePod } from './node-pods.js';
import type { ContainerRecord, PodRecord } from './pod-records.js';

export interface ContainerStateView {
  readonly waiting?: { readonly reason: string; readonly message?: string };
  readonly running?: { readonly startedAt?: string };
  readonly terminated?: {
    readonly exitCode: number;
    readonly reason: string;
    readonly message?: string;
    readonly startedAt?: string;
    readonly finishedAt?: string;
    readonly containerID?: string;
  };
}

export interface ContainerStatusView {
  readonly name: string;
  readonly state: ContainerStateView;
  readonly lastState: ContainerStateView;
  readonly ready: boolean;
  readonly restartCount: number;
  readonly image: string;
  readonly imageID: string;
  readonly containerID?: string;
  readonly started: boolean;
}

export interface PodConditionView {
  readonly type: 'PodReadyToStartContainers' | 'Initialized' | 'Ready' | 'ContainersReady' | 'PodScheduled';
  readonly status: 'True' | 'False';
  readonly reason?: string;
  readonly message?: string;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface PodStatusView {
  readonly phase: PodPhase;
  readonly conditions: readonly PodConditionView[];
  readonly podIP?: string;
  readonly startTime?: string;
  readonly initContainerStatuses?: readonly ContainerStatusView[];
  readonly containerStatuses: readonly ContainerStatusView[];
}

/** The scheme prefix of container IDs in pod status (containerd writes `containerd://`). */
export const containerIdScheme = 'cri-winsim://';

/** CRI nanoseconds to metav1.Time's RFC 3339 (second precision); undefined for 0. */
export function nanosToTime(nanos: string | undefined): string | undefined {
  if (nanos === undefined || nanos === '' || nanos === '0') return undefined;
  const ms = Number(BigInt(nanos) / 1_000_000n);
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const terminatedState = (c: NodeContainer): ContainerStateView['terminated'] & object => {
  const exitCode = c.exitCode ?? 0;
  const startedAt = nanosToTime(c.startedAt);
  const finishedAt = nanosToTime(c.finishedAt);
  return {
    exitCode,
    reason: c.reason || (exitCode === 0 ? 'Completed' : 'Error'),
    ...(c.message ? { message: c.message } : {}),
    ...(startedAt === undefined ? {} : { startedAt }),
    ...(finishedAt === undefined ? {} : { finishedAt }),
    containerID: `${containerIdScheme}${c.id}`,
  };
};

/** Whether the kubelet's recorded reason describes the container's current attempt. */
function recordApplies(record: ContainerRecord | undefined, latest: NodeContainer | undefined): record is ContainerRecord & { reason: string } {
  if (record?.reason === undefined) return false;
  if (latest?.state === 'Running') return false;
  if (record.containerId !== undefined) return record.containerId === latest?.id;
  return latest === undefined || record.attempt > latest.attempt;
}

/**
 * What the prober knows of a pod's running containers (prober_manager.go UpdatePodStatus): started
 * per the startup probe, ready per the readiness probe. Without it, a running container is both.
 */
export interface ProbeStatus {
  started(container: string, containerId: string): boolean;
  ready(container: string, containerId: string): boolean;
}

function containerStatus(
  container: V1Container,
  attempts: readonly NodeContainer[],
  record: ContainerRecord | undefined,
  notStartedReason: string,
  probes?: ProbeStatus,
): ContainerStatusView {
  const sorted = [...attempts].sort((a, b) => b.attempt - a.attempt);
  const latest = sorted[0];
  const previous = sorted[1];
  const image = latest?.image || container.image || '';
  const imageID = latest?.imageRef ?? '';
  const restartCount = Math.max(latest?.attempt ?? 0, record?.reason !== undefined && recordApplies(record, latest) ? record.attempt : 0);
  const base = { name: container.name, image, imageID, restartCount };
  const lastOf = (c: NodeContainer | undefined): ContainerStateView => (c?.state === 'Exited' ? { terminated: terminatedState(c) } : {});

  if (recordApplies(record, latest)) {
    return {
      ...base,
      state: { waiting: { reason: record.reason, ...(record.message === undefined ? {} : { message: record.message }) } },
      // A failed start leaves the runtime's container exited (StartError): that is the last state.
      lastState: lastOf(latest?.state === 'Exited' ? latest : previous),
      ready: false,
      started: false,
      ...(latest === undefined ? {} : { containerID: `${containerIdScheme}${latest.id}` }),
    };
  }
  if (latest === undefined) {
    return { ...base, state: { waiting: { reason: notStartedReason } }, lastState: {}, ready: false, started: false };
  }
  const containerID = `${containerIdScheme}${latest.id}`;
  switch (latest.state) {
    case 'Running': {
      const startedAt = nanosToTime(latest.startedAt);
      const started = probes?.started(container.name, latest.id) ?? true;
      const ready = started && (probes?.ready(container.name, latest.id) ?? true);
      return { ...base, containerID, state: { running: startedAt === undefined ? {} : { startedAt } }, lastState: lastOf(previous), ready, started };
    }
    case 'Exited':
      return { ...base, containerID, state: { terminated: terminatedState(latest) }, lastState: lastOf(previous), ready: false, started: false };
    case 'Created':
      return { ...base, containerID, state: { waiting: { reason: 'ContainerCreating' } }, lastState: lastOf(previous), ready: false, started: false };
    default:
      return { ...base, containerID, state: { waiting: { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated' } }, lastState: lastOf(previous), ready: false, started: false };
  }
}

/** getPhase: Pending until every init container succeeded and no container waits; then by the containers' states and restartPolicy. */
export function podPhase(pod: V1Pod, init: readonly ContainerStatusView[], regular: readonly ContainerStatusView[]): PodPhase {
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  let pendingInitialization = 0;
  let failedInitialization = 0;
  for (const s of init) {
    if (s.state.terminated !== undefined) {
      if (s.state.terminated.exitCode !== 0) failedInitialization++;
    } else if (s.state.waiting !== undefined && s.lastState.terminated !== undefined && s.lastState.terminated.exitCode !== 0) failedInitialization++;
    else pendingInitialization++;
  }
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const s of regular) {
    if (s.state.running !== undefined) running++;
    else if (s.state.terminated !== undefined) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state.waiting !== undefined && s.lastState.terminated !== undefined) stopped++;
    else waiting++;
  }
  if (failedInitialization > 0 && restartPolicy === 'Never') return 'Failed';
  if (pendingInitialization > 0 || failedInitialization > 0 || waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped === regular.length && regular.length > 0) {
    if (restartPolicy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    return restartPolicy === 'Never' ? 'Failed' : 'Running';
  }
  return 'Pending';
}

const namesOf = (statuses: readonly ContainerStatusView[]): string => `[${statuses.map((s) => s.name).join(' ')}]`;

/**
 * The pod's IP: the newest ready sandbox's, as the runtime reports it (convertStatusToAPIStatus);
 * a hostNetwork pod, for which the runtime reports none, inherits the node's IP when the kubelet
 * knows its node (generateAPIPodStatus does that only `if kl.kubeClient != nil`: a standalone
 * kubelet, like `kubelet run` and the static-pod loop, leaves it unset).
 */
export function podIpOf(pod: V1Pod, nodePod: NodePod | undefined, hostIps: readonly string[] | undefined): string | undefined {
  if (nodePod?.podIp) return nodePod.podIp;
  if (pod.spec?.hostNetwork === true && hostIps !== undefined && hostIps.length > 0) return hostIps[0];
  return undefined;
}

/**
 * generateAPIPodStatus: the runtime's containers, the kubelet's records and, when given, the
 * prober's results. `hostIps`: the node's addresses, given by a kubelet that has an API server
 * and a Node (node mode).
 */
export function computePodStatus(pod: V1Pod, nodePod: NodePod | undefined, record: PodRecord | undefined, probes?: ProbeStatus, hostIps?: readonly string[]): PodStatusView {
  const byName = new Map<string, NodeContainer[]>();
  for (const c of nodePod?.containers ?? []) byName.set(c.name, [...(byName.get(c.name) ?? []), c]);
  const initContainers = pod.spec?.initContainers ?? [];
  const init = initContainers.map((c) => containerStatus(c, byName.get(c.name) ?? [], record?.containers[c.name], 'PodInitializing'));
  const initialized = init.every((s) => s.state.terminated?.exitCode === 0);
  const regular = (pod.spec?.containers ?? []).map((c) =>
    containerStatus(c, byName.get(c.name) ?? [], record?.containers[c.name], initialized ? 'ContainerCreating' : 'PodInitializing', probes),
  );
  const phase = podPhase(pod, init, regular);

  const condition = (type: PodConditionView['type'], ok: boolean, reason?: string, message?: string): PodConditionView =>
    ok ? { type, status: 'True' } : { type, status: 'False', ...(reason === undefined ? {} : { reason }), ...(message === undefined ? {} : { message }) };
  const unready = regular.filter((s) => !s.ready);
  const incomplete = init.filter((s) => s.state.terminated?.exitCode !== 0);
  const completed = phase === 'Succeeded' || phase === 'Failed';
  const readyReason = completed ? 'PodCompleted' : 'ContainersNotReady';
  const readyMessage = completed ? undefined : `containers with unready status: ${namesOf(unready)}`;
  const conditions = [
    condition('PodReadyToStartContainers', nodePod?.sandboxReady === true),
    condition('Initialized', initialized, completed ? 'PodCompleted' : 'ContainersNotInitialized', completed ? undefined : `containers with incomplete status: ${namesOf(incomplete)}`),
    condition('Ready', unready.length === 0 && regular.length > 0, readyReason, readyMessage),
    condition('ContainersReady', unready.length === 0 && regular.length > 0, readyReason, readyMessage),
    condition('PodScheduled', true),
  ];
  const startTime = record?.startTime.replace(/\.\d{3}Z$/, 'Z') ?? nanosToTime(nodePod?.createdAt);
  const podIp = podIpOf(pod, nodePod, hostIps);
  return {
    phase,
    conditions,
    ...(podIp === undefined ? {} : { podIP: podIp }),
    ...(startTime === undefined ? {} : { startTime }),
    ...(init.length === 0 ? {} : { initContainerStatuses: init }),
    containerStatuses: regular,
  };
}

export interface PodRow {
  readonly namespace: string;
  readonly name: string;
  readonly ready: string;
  readonly status: string;
  readonly restarts: number;
  /** The newest container restart, for kubectl's `N (5m ago)`; RFC 3339. */
  readonly lastRestart?: string;
  readonly podIP: string;
}

/** printPod: READY, STATUS (the reason precedence kubectl uses) and RESTARTS of one pod. */
export function podRow(pod: V1Pod, status: PodStatusView): PodRow {
  const namespace = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  const init = status.initContainerStatuses ?? [];
  const regular = status.containerStatuses;
  let restarts = 0;
  let reason: string = status.phase;
  let initializing = false;
  for (const [i, s] of init.entries()) {
    restarts += s.restartCount;
    if (s.state.terminated?.exitCode === 0) continue;
    initializing = true;
    if (s.state.terminated !== undefined) reason = `Init:${s.state.terminated.reason || `ExitCode:${s.state.terminated.exitCode}`}`;
    else if (s.state.waiting !== undefined && s.state.waiting.reason !== '' && s.state.waiting.reason !== 'PodInitializing') reason = `Init:${s.state.waiting.reason}`;
    else reason = `Init:${i}/${init.length}`;
    break;
  }
  let readyContainers = 0;
  if (!initializing) {
    restarts = init.reduce((sum, s) => sum + s.restartCount, 0);
    let hasRunning = false;
    // kubectl walks the containers from the last to the first: the first one with a reason wins.
    for (const s of [...regular].reverse()) {
      restarts += s.restartCount;
      if (s.state.waiting !== undefined && s.state.waiting.reason !== '') reason = s.state.waiting.reason;
      else if (s.state.terminated !== undefined) reason = s.state.terminated.reason || `ExitCode:${s.state.terminated.exitCode}`;
      else if (s.ready && s.state.running !== undefined) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed' && hasRunning) reason = status.conditions.some((c) => c.type === 'Ready' && c.status === 'True') ? 'Running' : 'NotReady';
  }
  const lastRestart = [...init, ...regular]
    .filter((s) => s.restartCount > 0)
    .map((s) => s.lastState.terminated?.finishedAt)
    .filter((t): t is string => t !== undefined)
    .sort()
    .pop();
  return {
    namespace,
    name,
    ready: `${readyContainers}/${regular.length}`,
    status: reason,
    restarts,
    ...(lastRestart === undefined ? {} : { lastRestart }),
    podIP: status.podIP ?? '',
  };
}

/** Waiting reasons that are progress, not failure. */
const progressReasons: ReadonlySet<string> = new Set(['ContainerCreating', 'PodInitializing']);

/**
 * Whether the pod failed, for `kubelet run`'s exit status: phase Failed, a container waiting
 * for a reason other than progress (ErrImagePull, CreateContainerError, RunContainerError,
 * CrashLoopBackOff…), a container that exited non-zero, or no sandbox.
 */
export function podFailed(status: PodStatusView, record?: PodRecord): boolean {
  if (status.phase === 'Failed') return true;
  if (record?.sandboxError !== undefined && record.sandboxCreated === false) return true;
  return [...(status.initContainerStatuses ?? []), ...status.containerStatuses].some(
    (s) => (s.state.waiting !== undefined && !progressReasons.has(s.state.waiting.reason)) || (s.state.terminated !== undefined && s.state.terminated.exitCode !== 0),
  );
}

/** Whether a pod is done changing on its own: every container running, or the pod ran to completion, or failed. */
export function podSettled(status: PodStatusView, record?: PodRecord): boolean {
  if (podFailed(status, record)) return true;
  if (status.phase === 'Succeeded') return true;
  const init = status.initContainerStatuses ?? [];
  if (!init.every((s) => s.state.terminated?.exitCode === 0)) return false;
  return status.containerStatuses.every((s) => s.state.running !== undefined || s.state.terminated !== undefined);
}

/** duration.HumanDuration, as kubectl's AGE column prints it. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24);
    return days % 365 === 0 ? `${Math.floor(days / 365)}y` : `${Math.floor(days / 365)}y${days % 365}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}
