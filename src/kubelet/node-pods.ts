/**
 * The pods a node runs, as the kubelet reads them back from the runtime (ListPodSandbox and
 * ListContainers, grouped by the kubelet's `io.kubernetes.pod.uid` label), their kubectl-style
 * status, and their end: killPod (StopContainer with the grace period, StopPodSandbox) and
 * removal (RemoveContainer, RemovePodSandbox), all through the typed RuntimeService calls.
 */
import type { CriClient } from '../cri/proto.js';
import { isNotFound, runtimeCalls, type RuntimeCalls } from '../cri/runtime-calls.js';
import type { Container__Output } from '../generated/runtime/v1/Container.js';
import type { PodSandbox__Output } from '../generated/runtime/v1/PodSandbox.js';
import { KubernetesContainerNameLabel, KubernetesPodNameLabel, KubernetesPodNamespaceLabel, KubernetesPodUIDLabel } from './cri-config.js';
import { grpcErrorString } from './cri-errors.js';

export type NodeContainerState = 'Created' | 'Running' | 'Exited' | 'Unknown';

export interface NodeContainer {
  readonly id: string;
  readonly name: string;
  readonly attempt: number;
  readonly state: NodeContainerState;
  readonly exitCode?: number;
  readonly reason?: string;
  readonly message?: string;
  /** Nanoseconds since the epoch, as the runtime reports them ('0' when not reached). */
  readonly createdAt?: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
  /** The image as the kubelet asked for it, and the runtime's image id. */
  readonly image?: string;
  readonly imageRef?: string;
}

export interface NodePod {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
  /** The newest sandbox of the pod. */
  readonly sandboxId: string;
  readonly sandboxReady: boolean;
  /** Nanoseconds since the epoch, as the runtime reports it. */
  readonly createdAt: string;
  /** Every sandbox of the pod (older attempts included), newest first. */
  readonly sandboxIds: readonly string[];
  readonly containers: readonly NodeContainer[];
  /** The newest sandbox's IP (PodSandboxStatus), '' when it has none. */
  readonly podIp?: string;
}

const containerStates: readonly NodeContainerState[] = ['Created', 'Running', 'Exited', 'Unknown'];
const maxPods = 10_000;

export interface NodePodsOptions {
  readonly callTimeoutMs?: number;
  /** Only the pod with this UID (a label_selector on the kubelet's pod UID label). */
  readonly uid?: string;
}

/** The kubelet-managed pods on the node; sandboxes without the kubelet's labels are not ours. */
export async function listNodePods(cri: CriClient, options: NodePodsOptions = {}): Promise<NodePod[]> {
  const runtime = runtimeCalls(cri, options.callTimeoutMs ?? 10_000);
  const filter = options.uid === undefined ? undefined : { label_selector: { [KubernetesPodUIDLabel]: options.uid } };
  const sandboxes = (await runtime.listPodSandbox(filter)).filter((s) => s.labels[KubernetesPodUIDLabel] !== undefined);
  if (sandboxes.length > maxPods) throw new Error(`the runtime lists ${sandboxes.length} pod sandboxes, more than ${maxPods}`);
  const containers = await runtime.listContainers(filter);

  const byUid = new Map<string, PodSandbox__Output[]>();
  for (const sandbox of sandboxes) {
    const uid = sandbox.labels[KubernetesPodUIDLabel]!;
    byUid.set(uid, [...(byUid.get(uid) ?? []), sandbox]);
  }
  const pods: NodePod[] = [];
  for (const [uid, group] of byUid) {
    group.sort((a, b) => (BigInt(b.created_at) > BigInt(a.created_at) ? 1 : BigInt(b.created_at) < BigInt(a.created_at) ? -1 : 0));
    const newest = group[0]!;
    const own = containers.filter((c) => c.pod_sandbox_id === newest.id);
    const details: NodeContainer[] = [];
    for (const c of own) {
      const state = containerStates[c.state] ?? 'Unknown';
      // Only ContainerStatus carries start and finish times, the exit code and the reason.
      const status = await runtime.containerStatus(c.id);
      if (status === undefined) continue; // removed between the list and the status call
      details.push({
        id: c.id,
        name: containerName(c),
        attempt: c.metadata?.attempt ?? 0,
        state,
        createdAt: status.created_at,
        startedAt: status.started_at,
        finishedAt: status.finished_at,
        image: c.image?.user_specified_image || c.image?.image || status.image?.image || '',
        imageRef: status.image_ref || c.image_ref,
        ...(state === 'Exited' ? { exitCode: status.exit_code } : {}),
        ...(status.reason ? { reason: status.reason } : {}),
        ...(status.message ? { message: status.message } : {}),
      });
    }
    const podIp = newest.state === 0 ? ((await runtime.podSandboxStatus(newest.id))?.network?.ip ?? '') : '';
    pods.push({
      uid,
      name: newest.labels[KubernetesPodNameLabel] ?? newest.metadata?.name ?? '',
      namespace: newest.labels[KubernetesPodNamespaceLabel] ?? newest.metadata?.namespace ?? '',
      sandboxId: newest.id,
      sandboxReady: newest.state === 0,
      createdAt: newest.created_at,
      sandboxIds: group.map((s) => s.id),
      containers: details,
      podIp,
    });
  }
  return pods.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

/** A container's name as the kubelet labelled it. */
const containerName = (c: Container__Output): string => c.labels[KubernetesContainerNameLabel] ?? c.metadata?.name ?? '';

/**
 * kubectl's READY and STATUS columns for a pod read back from the runtime (printPod's rules,
 * reduced). The runtime cannot tell init containers apart: give the spec's container names to get
 * `Init:` statuses and kubectl's READY total.
 */
export function nodePodStatus(pod: NodePod, spec: { readonly initContainers?: readonly string[]; readonly containers?: readonly string[] } = {}): { ready: string; status: string } {
  const initContainerNames = spec.initContainers ?? [];
  // Only the newest attempt of each container counts.
  const latest = new Map<string, NodeContainer>();
  for (const c of pod.containers) if ((latest.get(c.name)?.attempt ?? -1) < c.attempt) latest.set(c.name, c);
  const containers = [...latest.values()].filter((c) => !initContainerNames.includes(c.name));
  const running = containers.filter((c) => c.state === 'Running').length;
  // With the spec at hand, READY counts against the containers it declares, as kubectl does.
  const ready = `${running}/${spec.containers?.length ?? containers.length}`;

  if (initContainerNames.length > 0) {
    const completed = initContainerNames.filter((n) => latest.get(n)?.state === 'Exited' && latest.get(n)?.exitCode === 0).length;
    if (completed < initContainerNames.length) {
      const failed = initContainerNames.map((n) => latest.get(n)).find((c) => c?.state === 'Exited' && c.exitCode !== 0);
      if (failed !== undefined) return { ready, status: `Init:${failed.reason || 'Error'}` };
      return { ready, status: `Init:${completed}/${initContainerNames.length}` };
    }
  }

  let status = pod.sandboxReady ? 'Running' : 'NotReady';
  // printPod walks the containers from the last to the first: the first one with a reason wins.
  for (const c of [...containers].reverse()) {
    if (c.state === 'Created') status = 'ContainerCreating';
    else if (c.state === 'Exited') status = c.reason || (c.exitCode === 0 ? 'Completed' : 'Error');
    else if (c.state === 'Unknown') status = 'Unknown';
  }
  if (status === 'Completed' && running > 0) status = 'Running';
  if (containers.length === 0 && pod.sandboxReady) status = initContainerNames.length > 0 ? 'PodInitializing' : 'ContainerCreating';
  return { ready, status };
}

export interface DeletePodOptions extends NodePodsOptions {
  /** terminationGracePeriodSeconds: StopContainer's timeout. */
  readonly gracePeriodSeconds?: number;
}

/** What is left of a pod in the runtime: its sandboxes and their containers (stops and removals are idempotent in CRI: read, not assumed). */
async function podObjects(runtime: RuntimeCalls, pod: NodePod): Promise<{ sandboxIds: string[]; containers: Container__Output[] }> {
  const filter = { label_selector: { [KubernetesPodUIDLabel]: pod.uid } };
  const sandboxIds = (await runtime.listPodSandbox(filter)).map((s) => s.id).filter((id) => pod.sandboxIds.includes(id));
  const containers = (await runtime.listContainers(filter)).filter((c) => pod.sandboxIds.includes(c.pod_sandbox_id));
  return { sandboxIds, containers };
}

/**
 * Runs one CRI step on an object of `pod`: false when the object is gone already (NOT_FOUND),
 * otherwise fails with the pod's name, the step and the runtime's error.
 */
async function step(verb: string, pod: NodePod, what: string, run: () => Promise<unknown>): Promise<boolean> {
  try {
    await run();
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw new Error(`failed to ${verb} pod ${pod.namespace}/${pod.name}: ${what}: ${grpcErrorString(err)}`, { cause: err });
  }
}

export interface KillPodOptions extends DeletePodOptions {
  /** Called with the names of the running containers before they are stopped (the Killing events come first). */
  readonly onKilling?: (containers: readonly string[]) => void;
}

/**
 * The kubelet's killPod (kuberuntime_manager.go KillPod, v1.34): StopContainer on every running
 * container of the pod at once, each with the grace period, then StopPodSandbox on each sandbox.
 * Nothing is removed.
 */
export async function killNodePod(cri: CriClient, pod: NodePod, options: KillPodOptions = {}): Promise<void> {
  const grace = options.gracePeriodSeconds ?? 30;
  // A sandbox's stop may wait for its containers: give it the grace period too.
  const runtime = runtimeCalls(cri, (options.callTimeoutMs ?? 10_000) + grace * 1000);
  await killPodObjects(runtime, pod, await podObjects(runtime, pod), grace, 'kill', options.onKilling);
}

async function killPodObjects(runtime: RuntimeCalls, pod: NodePod, objects: { sandboxIds: string[]; containers: Container__Output[] }, grace: number, verb: string, onKilling?: (containers: readonly string[]) => void): Promise<void> {
  const running = objects.containers.filter((c) => c.state === 1);
  onKilling?.(running.map(containerName));
  await Promise.all(running.map((c) => step(verb, pod, `StopContainer ${c.id}`, () => runtime.stopContainer(c.id, grace))));
  for (const id of objects.sandboxIds) await step(verb, pod, `StopPodSandbox ${id}`, () => runtime.stopPodSandbox(id));
}

/**
 * killPod, then RemoveContainer and RemovePodSandbox on everything of the pod; objects already
 * gone are skipped. Returns what was removed. Fails with the pod's name and the runtime's error otherwise.
 */
export async function deleteNodePod(cri: CriClient, pod: NodePod, options: DeletePodOptions = {}): Promise<{ containers: string[]; sandboxes: string[] }> {
  const grace = options.gracePeriodSeconds ?? 30;
  // A stop may take the whole grace period; give the calls that long plus the usual deadline.
  const runtime = runtimeCalls(cri, (options.callTimeoutMs ?? 10_000) + grace * 1000);
  const objects = await podObjects(runtime, pod);
  await killPodObjects(runtime, pod, objects, grace, 'delete');
  const removed = { containers: [] as string[], sandboxes: [] as string[] };
  for (const c of objects.containers) {
    if (await step('delete', pod, `RemoveContainer ${c.id}`, () => runtime.removeContainer(c.id))) removed.containers.push(c.id);
  }
  for (const id of objects.sandboxIds) {
    if (await step('delete', pod, `RemovePodSandbox ${id}`, () => runtime.removePodSandbox(id))) removed.sandboxes.push(id);
  }
  return removed;
}
