/**
 * The one pod sync of the kubelet: computePodActions (pod-actions.ts) decides, this carries the
 * actions out through the CRI client in SyncPod's order (kubernetes v1.34
 * pkg/kubelet/kuberuntime/kuberuntime_manager.go SyncPod): kill the pod when its sandbox changed,
 * kill the containers to kill (event Killing), create the sandbox with the first sync's pass
 * (pod-worker.ts runPodOnce), start the next init container, start the containers to start.
 * Every failed start and every restart of an exited container moves the container's back-off on
 * (doBackOff's backOff.Next); the sync ends by reading the pod back and reporting what the
 * back-off holds (waiting CrashLoopBackOff/ImagePullBackOff, event BackOff).
 *
 * The static-pod loop, node mode and `kubelet run` each own one engine; they differ only in where
 * pods come from and where the result goes. The engine keeps the back-off and nothing else.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../../cri/proto.js';
import { ignoreNotFound, runtimeCalls } from '../../cri/runtime-calls.js';
import type { PodSandboxConfig } from '../../generated/runtime/v1/PodSandboxConfig.js';
import { buildPodSandboxConfig } from '../cri-config.js';
import { deleteNodePod, killNodePod, listNodePods, type NodePod } from '../node-pods.js';
import { containerRecords, type ContainerRecord, type PodRecord } from '../pod-records.js';
import { runPodOnce, startContainer } from '../pod-worker.js';
import { type ContainerOutcome, type PodEvent, type PodOutcome, type PodWorkerOptions } from '../pod-worker-options.js';
import { ContainerBackoff } from './backoff.js';
import { computePodActions, containerBackoffKey, sandboxBackoffKey, type BackoffReason, type ContainerAction, type PodActions, type PodActionsOptions } from './pod-actions.js';

export interface PodSyncEngineOptions {
  /** Deadline of each CRI call (default 30 s). */
  readonly callTimeoutMs?: number;
  /** The back-off's first delay and cap (default the kubelet's 10 s and 5 min). */
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** StopContainer's grace when a pod whose sandbox is not ready any more is removed (default 30 s). */
  readonly gracePeriodSeconds?: number;
  /** Milliseconds clock, replaceable in tests. */
  readonly now?: () => number;
}

/** How one sync runs: the decision's options, and whether the pod is read back after it. */
export interface PodSyncOptions extends PodActionsOptions {
  /**
   * Read the pod back from the runtime after a sync that changed it (default true): the result's
   * `nodePod` and what the back-off holds come from it. `kubelet run`'s single pass reports what
   * its calls answered and asks for no read-back (our own rule: one pass, no status loop after).
   */
  readonly readBack?: boolean;
}

export interface StartedContainer {
  readonly outcome: ContainerOutcome;
  /** The attempt (restart count) the start was made as. */
  readonly attempt: number;
}

export interface PodSyncResult {
  readonly actions: PodActions;
  /** The first sync's pass, when this sync created the pod's sandbox. */
  readonly created?: PodOutcome;
  /** Containers started in the pod's running sandbox. */
  readonly started: readonly StartedContainer[];
  /** Killing, Pulled, Created, Started, Failed… in the order they happened, then BackOff. */
  readonly events: readonly PodEvent[];
  /**
   * The pod as the runtime reports it after the sync; undefined when it has no sandbox, or when
   * the sync changed it and `readBack` was false.
   */
  readonly nodePod: NodePod | undefined;
  /** The containers the back-off holds, with their waiting reason and message, by name. */
  readonly waiting: Readonly<Record<string, ContainerRecord>>;
}

/** Waiting reasons of containers merely not reached yet: no failure to back off from. */
const notReached: ReadonlySet<string> = new Set(['PodInitializing', 'ContainerCreating']);

export class PodSyncEngine {
  /** The restart back-off: the engine's only state. */
  private readonly backoff: ContainerBackoff;

  constructor(
    private readonly cri: CriClient,
    private readonly options: PodSyncEngineOptions = {},
  ) {
    this.backoff = new ContainerBackoff(options.backoffInitialMs, options.backoffMaxMs);
  }

  now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** The back-off of one container, for a status column: its reason, the failed start's, whether it holds. */
  backoffOf(pod: V1Pod, container: string): { reason: BackoffReason; failure?: string | undefined; holding: boolean } | undefined {
    return this.backoff.causeOf(containerBackoffKey(pod, container), this.now());
  }

  /** Milliseconds until the earliest back-off (of the pod with `uid`, or of any) ends; undefined when none holds. */
  nextBackoffDelay(uid?: string): number | undefined {
    return this.backoff.nextDelay(this.now(), uid);
  }

  /** Drops the back-off of a pod that is gone. */
  forget(uid: string): void {
    this.backoff.forget(uid);
  }

  /** The pod with `uid` as the runtime has it; undefined when it has no sandbox of it. */
  async readPod(uid: string): Promise<NodePod | undefined> {
    return (await listNodePods(this.cri, { uid, callTimeoutMs: this.callTimeoutMs() }))[0];
  }

  /**
   * The end of a pod being deleted: killPod with the deletion's grace period (node-pods.ts
   * killNodePod), its containers not restarted after. Its objects stay for the final status.
   */
  async killPod(nodePod: NodePod, gracePeriodSeconds: number, onKilling?: (containers: readonly string[]) => void): Promise<void> {
    this.forget(nodePod.uid);
    await killNodePod(this.cri, nodePod, { gracePeriodSeconds, callTimeoutMs: this.callTimeoutMs(), ...(onKilling === undefined ? {} : { onKilling }) });
  }

  /** Stops and removes everything the runtime has of a pod that is gone, and drops its back-off. */
  async removePod(nodePod: NodePod, gracePeriodSeconds: number): Promise<void> {
    this.forget(nodePod.uid);
    await deleteNodePod(this.cri, nodePod, { gracePeriodSeconds, callTimeoutMs: this.callTimeoutMs() });
  }

  private callTimeoutMs(): number {
    return this.options.callTimeoutMs ?? 30_000;
  }

  /** One sync of `pod`, whose runtime state is `nodePod` (undefined: the runtime has none). */
  async sync(pod: V1Pod, nodePod: NodePod | undefined, worker: PodWorkerOptions, request: PodSyncOptions = {}): Promise<PodSyncResult> {
    this.backoff.gc(this.now());
    const actions = computePodActions(pod, nodePod, this.backoff, this.now(), request);
    const events: PodEvent[] = [];
    const started: StartedContainer[] = [];
    let created: PodOutcome | undefined;
    const callTimeoutMs = this.callTimeoutMs();
    // The new sandbox starts every container afresh.
    if (actions.killPod && nodePod !== undefined) await this.removePod(nodePod, this.options.gracePeriodSeconds ?? 30);
    if (actions.createSandbox) {
      created = await runPodOnce(this.cri, pod, worker);
      events.push(...created.events);
      if (created.sandboxError !== undefined) this.backoff.noteFailure(sandboxBackoffKey(pod), 'ContainerCreating', this.now());
      // Containers that failed to start back off; those merely not reached yet do not.
      for (const c of created.containers) if (c.state === 'waiting' && !notReached.has(c.reason ?? '')) this.backoff.noteFailure(containerBackoffKey(pod, c.name), c.reason, this.now());
    }
    const killed = new Set<string>();
    for (const kill of actions.containersToKill) {
      events.push({ type: 'Normal', reason: 'Killing', message: kill.message, container: kill.container.name });
      await runtimeCalls(this.cri, callTimeoutMs).stopContainer(kill.current.id, kill.gracePeriodSeconds).catch(ignoreNotFound);
      killed.add(kill.container.name);
    }
    if (nodePod !== undefined && !actions.createSandbox) {
      let sandboxConfig: PodSandboxConfig | undefined;
      const toStart = [...(actions.initContainerToStart === undefined ? [] : [actions.initContainerToStart]), ...actions.containersToStart];
      for (const action of toStart) {
        sandboxConfig ??= buildPodSandboxConfig(pod, { podLogsRoot: worker.podLogsRoot });
        started.push(await this.start(pod, action, nodePod.sandboxId, sandboxConfig, worker, events, killed.has(action.container.name)));
      }
    }
    const changed = actions.createSandbox || actions.killPod || started.length > 0 || killed.size > 0;
    const after = !changed ? nodePod : request.readBack === false ? undefined : await this.readPod(pod.metadata?.uid ?? '');
    const held = this.holding(pod, after, request);
    return { actions, ...(created === undefined ? {} : { created }), started, events: [...events, ...held.events], nodePod: after, waiting: held.waiting };
  }

  private async start(pod: V1Pod, { container, kind, current }: ContainerAction, sandboxId: string, sandboxConfig: PodSandboxConfig, worker: PodWorkerOptions, events: PodEvent[], killed: boolean): Promise<StartedContainer> {
    const attempt = current === undefined ? 0 : current.attempt + 1;
    const outcome = await startContainer(this.cri, pod, container, kind, { sandboxId, sandboxConfig, attempt, options: worker, events });
    // Each restart of an exited (or just killed) container pushes the next one further out, and
    // so does each failed start; a start that left no exited container is retried after the pod
    // worker's fixed period instead (pod_workers.go completeWork, backOffPeriod).
    const exited = killed || current?.state === 'Exited';
    if (exited || outcome.state === 'waiting') this.backoff.noteFailure(containerBackoffKey(pod, container.name), outcome.state === 'waiting' ? outcome.reason : undefined, this.now(), exited);
    return { outcome, attempt };
  }

  /** What the back-off holds after the sync: waiting records, and doBackOff's BackOff event for crash loops. */
  private holding(pod: V1Pod, nodePod: NodePod | undefined, request: PodActionsOptions): { waiting: Record<string, ContainerRecord>; events: PodEvent[] } {
    const waiting: Record<string, ContainerRecord> = {};
    const events: PodEvent[] = [];
    if (nodePod === undefined) return { waiting, events };
    const m = pod.metadata!;
    for (const held of computePodActions(pod, nodePod, this.backoff, this.now(), request).heldBack) {
      if (held.waiting === undefined) continue;
      const name = held.container.name;
      if (held.waiting.reason === 'ImagePullBackOff') {
        waiting[name] = { attempt: held.current === undefined ? 0 : held.current.attempt + 1, ...held.waiting };
        continue;
      }
      waiting[name] = { attempt: held.current!.attempt, containerId: held.current!.id, ...held.waiting };
      events.push({ type: 'Warning', reason: 'BackOff', message: `Back-off restarting failed container ${name} in pod ${m.name}_${m.namespace}(${m.uid})`, container: name });
    }
    return { waiting, events };
  }
}

/** The pod's record after a sync: the new sandbox's containers or the started ones, then the held ones. */
export function recordOfSync(record: PodRecord, sync: PodSyncResult): PodRecord {
  if (sync.created !== undefined) {
    const { sandboxError: _previous, ...rest } = record;
    return {
      ...rest,
      sandboxCreated: sync.created.sandboxId !== undefined,
      ...(sync.created.sandboxError === undefined ? {} : { sandboxError: sync.created.sandboxError }),
      containers: { ...containerRecords({}, sync.created.containers), ...sync.waiting },
    };
  }
  const attempts = Object.fromEntries(sync.started.map((s) => [s.outcome.name, s.attempt]));
  return { ...record, containers: { ...containerRecords(record.containers, sync.started.map((s) => s.outcome), attempts), ...sync.waiting } };
}
