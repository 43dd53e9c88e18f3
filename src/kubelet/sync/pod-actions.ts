/**
 * What one sync of a pod must do, decided from the pod's spec, what the runtime reports of it
 * and the restart back-off: a pure function, as the kubelet's computePodActions is (kubernetes
 * v1.34 pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions,
 * computeInitContainerActions, doBackOff; pkg/kubelet/container/helpers.go
 * ShouldContainerBeRestarted). The executor (pod-sync.ts) carries the actions out.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { NodeContainer, NodePod } from '../node-pods.js';
import type { ContainerKind } from '../pod-worker-options.js';

/** What the sync reads of a container's newest attempt. */
export interface LatestAttempt {
  readonly state: 'Created' | 'Running' | 'Exited' | 'Unknown';
  readonly exitCode?: number;
}

/** restartPolicy: Always restarts any exit, OnFailure a non-zero one, Never none. */
export function shouldRestart(pod: V1Pod, exitCode: number): boolean {
  const policy = pod.spec?.restartPolicy ?? 'Always';
  return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
}

/**
 * ShouldContainerBeRestarted (kubernetes v1.34 pkg/kubelet/container/helpers.go): a container
 * never run is started; a running one is left alone; one left `Created` or `Unknown` is started
 * again (a failed StartContainer that left the container created would otherwise be stuck; for
 * init containers computeInitContainerActions says the same); an exited one per restartPolicy.
 */
export function shouldStartContainer(pod: V1Pod, latest: LatestAttempt | undefined): boolean {
  if (latest === undefined) return true;
  if (latest.state === 'Running') return false;
  if (latest.state === 'Created' || latest.state === 'Unknown') return true;
  return shouldRestart(pod, latest.exitCode ?? 0);
}

/** Each container's newest attempt, by container name. */
export function latestAttempts(pod: NodePod): Map<string, NodeContainer> {
  const latest = new Map<string, NodeContainer>();
  for (const c of pod.containers) if ((latest.get(c.name)?.attempt ?? -1) < c.attempt) latest.set(c.name, c);
  return latest;
}

/** Go's time.Duration String for whole seconds and minutes: 10s, 1m20s, 5m0s. */
export function formatBackoff(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  return `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}

/** An init container with restartPolicy Always: a sidecar (KEP-753), restarted whenever it exits. */
export const isSidecar = (container: V1Container): boolean => container.restartPolicy === 'Always';

/** What the prober says about a pod's containers, as the kill of unhealthy ones reads it. */
export interface ProbeVerdicts {
  probes(podUid: string): boolean;
  failedProbe(containerId: string): 'liveness' | 'startup' | undefined;
}

/** Why a start is held back: the container's restart back-off or the pull back-off of its image. */
export type BackoffReason = 'CrashLoopBackOff' | 'ImagePullBackOff';

/** The back-off as computePodActions reads it: what holds a key back at `now`, if anything. */
export interface RestartBackoff {
  heldBack(key: string, now: number): { readonly delayMs: number; readonly reason: BackoffReason } | undefined;
}

/** The back-off key of a container (doBackOff's GetStableKey, by pod UID and container name). */
export const containerBackoffKey = (pod: V1Pod, container: string): string => `${pod.metadata?.uid ?? ''}/${container}`;
/** The key of the pod worker's back-off after a sync that could not create the sandbox. */
export const sandboxBackoffKey = (pod: V1Pod): string => `${pod.metadata?.uid ?? ''}`;

export interface ContainerAction {
  readonly container: V1Container;
  readonly kind: ContainerKind;
  /** The container's newest attempt, if it has one. */
  readonly current?: NodeContainer;
}

export interface ContainerKill extends ContainerAction {
  readonly current: NodeContainer;
  /** The Killing event's message (killContainer's "message"). */
  readonly message: string;
  readonly gracePeriodSeconds: number;
}

export interface HeldBack extends ContainerAction {
  readonly reason: BackoffReason;
  readonly delayMs: number;
  /**
   * The waiting state the kubelet reports while it holds the container back: CrashLoopBackOff
   * with doBackOff's message for an exited container it would restart, ImagePullBackOff with the
   * image manager's; absent for a container a failed start left created (the pod worker's retry).
   */
  readonly waiting?: { readonly reason: BackoffReason; readonly message: string };
}

export interface PodActions {
  /** Stop and remove the pod's sandboxes and containers first (the sandbox is not ready any more). */
  readonly killPod: boolean;
  /** Create a new sandbox and start the pod's containers in it (the first sync's pass). */
  readonly createSandbox: boolean;
  /** The sandbox could not be created and the pod worker's back-off has not ended. */
  readonly sandboxHeldBack: boolean;
  /** The init container to start next (computeInitContainerActions' NextInitContainerToStart). */
  readonly initContainerToStart?: ContainerAction;
  /** Running containers to stop before the starts (probe failures, changed definitions). */
  readonly containersToKill: readonly ContainerKill[];
  /** Containers to start, after the kills; init containers here are exited sidecars. */
  readonly containersToStart: readonly ContainerAction[];
  /** Containers that would be started but wait for their back-off to end. */
  readonly heldBack: readonly HeldBack[];
}

export interface PodActionsOptions {
  /** The prober's verdicts: failed liveness and startup probes kill the container. */
  readonly probes?: ProbeVerdicts;
  /**
   * Whether exited containers are started again per restartPolicy (default true). `kubelet run`
   * makes one pass (our own rule): it starts containers never run and those whose definition
   * changed, and leaves the others as they are.
   */
  readonly restartExited?: boolean;
}

const podName = (pod: V1Pod): string => `${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`;

/** The pod's termination grace period, what StopContainer is given unless a probe says otherwise. */
const podGrace = (pod: V1Pod): number => pod.spec?.terminationGracePeriodSeconds ?? 30;

export function computePodActions(pod: V1Pod, podStatus: NodePod | undefined, backoff: RestartBackoff, now: number, options: PodActionsOptions = {}): PodActions {
  const none = { killPod: false, createSandbox: false, sandboxHeldBack: false, containersToKill: [], containersToStart: [], heldBack: [] };
  // PodSandboxChanged: no sandbox, or one that is not ready (the node rebooted), gets a new one
  // with all the pod's containers; the old one goes first with its containers (killPodWithSyncResult).
  if (podStatus === undefined || !podStatus.sandboxReady) {
    // A sync that failed to create the sandbox is tried again after the pod worker's back-off.
    if (backoff.heldBack(sandboxBackoffKey(pod), now) !== undefined) return { ...none, sandboxHeldBack: true };
    return { ...none, killPod: podStatus !== undefined, createSandbox: true };
  }
  const latest = latestAttempts(podStatus);
  const heldBack: HeldBack[] = [];
  const containersToStart: ContainerAction[] = [];
  const hold = (action: ContainerAction): boolean => {
    const held = backoff.heldBack(containerBackoffKey(pod, action.container.name), now);
    if (held === undefined) return false;
    heldBack.push({ ...action, ...held, ...waitingOf(pod, action, held) });
    return true;
  };

  const init = initContainerActions(pod, latest, hold, containersToStart);
  if (!init.initialized) return { ...none, ...(init.next === undefined ? {} : { initContainerToStart: init.next }), containersToStart, heldBack };

  const containersToKill: ContainerKill[] = [];
  const restartExited = options.restartExited ?? true;
  for (const container of pod.spec?.containers ?? []) {
    const current = latest.get(container.name);
    const action: ContainerAction = { container, kind: 'regular', ...(current === undefined ? {} : { current }) };
    const kill = current?.state === 'Running' ? killReason(pod, container, current, options.probes) : undefined;
    if (kill !== undefined) {
      // Killed for a new definition or a failed probe: started again at once when it restarts.
      containersToKill.push({ ...action, current: current!, message: kill.restart ? `${kill.message}, will be restarted` : kill.message, gracePeriodSeconds: kill.grace });
      if (kill.restart) containersToStart.push(action);
      continue;
    }
    // A definition changed while the container was not running: its next attempt has the new one.
    if (current !== undefined && current.state !== 'Running' && definitionChanged(container, current)) {
      containersToStart.push(action);
      continue;
    }
    if (!(restartExited ? shouldStartContainer(pod, current) : current === undefined)) continue;
    if (!hold(action)) containersToStart.push(action);
  }
  return { ...none, containersToKill, containersToStart, heldBack };
}

/**
 * computeInitContainerActions: init containers run one at a time, in order, each to a
 * successful exit before the next; a failed one is started again unless the pod never restarts
 * anything. Sidecars are started in their turn and, once started, do not hold the next one back;
 * an exited sidecar is started again whatever the pod's restartPolicy.
 */
function initContainerActions(
  pod: V1Pod,
  latest: ReadonlyMap<string, NodeContainer>,
  hold: (action: ContainerAction) => boolean,
  containersToStart: ContainerAction[],
): { initialized: boolean; next?: ContainerAction } {
  for (const container of pod.spec?.initContainers ?? []) {
    const current = latest.get(container.name);
    const action: ContainerAction = { container, kind: 'init', ...(current === undefined ? {} : { current }) };
    if (isSidecar(container) && current !== undefined) {
      if (current.state !== 'Running' && !hold(action)) containersToStart.push(action);
      continue;
    }
    if (current?.state === 'Exited' && current.exitCode === 0) continue;
    if (current?.state === 'Running') return { initialized: false };
    // An init container that failed in a pod that never restarts: the pod has failed.
    if (current?.state === 'Exited' && (pod.spec?.restartPolicy ?? 'Always') === 'Never') return { initialized: false };
    if (hold(action)) return { initialized: false };
    return { initialized: false, next: action };
  }
  return { initialized: true };
}

/** computePodActions' reasons to kill a running container: a changed definition, then probes. */
function killReason(pod: V1Pod, container: V1Container, current: NodeContainer, probes: ProbeVerdicts | undefined): { message: string; restart: boolean; grace: number } | undefined {
  // A changed definition restarts the container whatever the restartPolicy.
  if (definitionChanged(container, current)) return { message: `Container ${container.name} definition changed`, restart: true, grace: podGrace(pod) };
  const failed = probes?.probes(pod.metadata?.uid ?? '') === true ? probes.failedProbe(current.id) : undefined;
  if (failed === undefined) return undefined;
  // killContainer: the probe's own terminationGracePeriodSeconds, else the pod's.
  const probe = failed === 'liveness' ? container.livenessProbe : container.startupProbe;
  const restart = (pod.spec?.restartPolicy ?? 'Always') !== 'Never';
  return { message: `Container ${container.name} failed ${failed} probe`, restart, grace: probe?.terminationGracePeriodSeconds ?? podGrace(pod) };
}

/**
 * containerChanged: the kubelet compares a hash of the spec it started the container with; an
 * accepted update may change only the image, which the runtime keeps as the user wrote it.
 */
function definitionChanged(container: V1Container, current: NodeContainer): boolean {
  return current.image !== undefined && current.image !== '' && current.image !== (container.image ?? '');
}

/** The waiting state of a held-back container (doBackOff, the image manager's back-off). */
function waitingOf(pod: V1Pod, { container, current }: ContainerAction, held: { delayMs: number; reason: BackoffReason }): Pick<HeldBack, 'waiting'> {
  if (held.reason === 'ImagePullBackOff') return { waiting: { reason: held.reason, message: `Back-off pulling image ${JSON.stringify(container.image ?? '')}` } };
  // doBackOff counts exited containers only.
  if (current?.state !== 'Exited') return {};
  return { waiting: { reason: held.reason, message: `back-off ${formatBackoff(held.delayMs)} restarting failed container=${container.name} pod=${podName(pod)}` } };
}
