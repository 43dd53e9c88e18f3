/**
 * The pods a node runs, as the kubelet reads them back from the runtime (ListPodSandbox and
 * ListContainers, grouped by the kubelet's `io.kubernetes.pod.uid` label), their kubectl-style
 * status, and their removal (killPod then removal: StopContainer with the grace period,
 * StopPodSandbox, RemoveContainer, RemovePodSandbox).
 */
import type * as grpc from '@grpc/grpc-js';
import { unaryCall, type CriClient } from '../cri/proto.js';
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
  const call = { timeoutMs: options.callTimeoutMs ?? 10_000 };
  const selector = options.uid === undefined ? {} : { filter: { label_selector: { [KubernetesPodUIDLabel]: options.uid } } };
  const sandboxes = (await unaryCall(cri.runtime, 'ListPodSandbox', selector, call)).items.filter((s) => s.labels[KubernetesPodUIDLabel] !== undefined);
  if (sandboxes.length > maxPods) throw new Error(`the runtime lists ${sandboxes.length} pod sandboxes, more than ${maxPods}`);
  const containers = (await unaryCall(cri.runtime, 'ListContainers', selector, call)).containers;

  const byUid = new Map<string, typeof sandboxes>();
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
      const base = { id: c.id, name: c.labels[KubernetesContainerNameLabel] ?? c.metadata?.name ?? '', attempt: c.metadata?.attempt ?? 0, state };
      // Only ContainerStatus carries start and finish times, the exit code and the reason.
      const status = await containerStatus(cri, c.id, call);
      if (status === undefined) continue; // removed between the list and the status call
      details.push({
        ...base,
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
    const podIp = newest.state === 0 ? await sandboxIp(cri, newest.id, call) : '';
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

async function containerStatus(cri: CriClient, id: string, call: { timeoutMs: number }) {
  try {
    return (await unaryCall(cri.runtime, 'ContainerStatus', { container_id: id, verbose: false }, call)).status ?? undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function sandboxIp(cri: CriClient, id: string, call: { timeoutMs: number }): Promise<string> {
  try {
    return (await unaryCall(cri.runtime, 'PodSandboxStatus', { pod_sandbox_id: id, verbose: false }, call)).status?.network?.ip ?? '';
  } catch (err) {
    if (isNotFound(err)) return '';
    throw err;
  }
}

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

const notFound = 5;
const isNotFound = (err: unknown): boolean => (err as Partial<grpc.ServiceError>).code === notFound;

export interface DeletePodOptions extends NodePodsOptions {
  /** terminationGracePeriodSeconds: StopContainer's timeout. */
  readonly gracePeriodSeconds?: number;
}

/**
 * Stops and removes every sandbox and container of a pod; objects already gone are skipped.
 * Returns what was removed. Fails with the pod's name and the runtime's error otherwise.
 */
export async function deleteNodePod(cri: CriClient, pod: NodePod, options: DeletePodOptions = {}): Promise<{ containers: string[]; sandboxes: string[] }> {
  const grace = options.gracePeriodSeconds ?? 30;
  // A stop may take the whole grace period; give the call that long plus the usual deadline.
  const call = { timeoutMs: (options.callTimeoutMs ?? 10_000) + grace * 1000 };
  const removed = { containers: [] as string[], sandboxes: [] as string[] };
  const step = async (what: string, run: () => Promise<unknown>): Promise<boolean> => {
    try {
      await run();
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw new Error(`failed to delete pod ${pod.namespace}/${pod.name}: ${what}: ${grpcErrorString(err)}`, { cause: err });
    }
  };
  // Stop and remove are idempotent in CRI, so what is left is read from the runtime, not assumed.
  const sandboxIds = (await unaryCall(cri.runtime, 'ListPodSandbox', {}, call)).items.map((s) => s.id).filter((id) => pod.sandboxIds.includes(id));
  const all = (await unaryCall(cri.runtime, 'ListContainers', {}, call)).containers.filter((c) => pod.sandboxIds.includes(c.pod_sandbox_id));
  for (const c of all.filter((c) => c.state === 1)) {
    await step(`StopContainer ${c.id}`, () => unaryCall(cri.runtime, 'StopContainer', { container_id: c.id, timeout: String(grace) }, call));
  }
  for (const id of sandboxIds) await step(`StopPodSandbox ${id}`, () => unaryCall(cri.runtime, 'StopPodSandbox', { pod_sandbox_id: id }, call));
  for (const c of all) {
    if (await step(`RemoveContainer ${c.id}`, () => unaryCall(cri.runtime, 'RemoveContainer', { container_id: c.id }, call))) removed.containers.push(c.id);
  }
  for (const id of sandboxIds) {
    if (await step(`RemovePodSandbox ${id}`, () => unaryCall(cri.runtime, 'RemovePodSandbox', { pod_sandbox_id: id }, call))) removed.sandboxes.push(id);
  }
  return removed;
}
