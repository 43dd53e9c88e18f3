/**
 * The node's pods as `kubelet get` and `describe` show them: what the runtime runs (ListPodSandbox,
 * ListContainers, ContainerStatus) joined by pod UID with what the kubelet recorded (the admitted
 * spec, waiting reasons, events). A pod the runtime has without a record (its record directory was
 * lost) is shown from the runtime alone; a recorded pod whose sandbox never came up is shown from
 * its record; a record of a sandbox the runtime no longer has (the runtime was reset) is stale and
 * left out.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/proto.js';
import { listNodePods, type NodePod } from './node-pods.js';
import type { PodRecord, PodRecordStore } from './pod-records.js';
import { computePodStatus, podRow, type PodRow, type PodStatusView, type ProbeStatus } from './pod-status.js';

export interface PodView {
  readonly pod: V1Pod;
  readonly nodePod?: NodePod;
  readonly record?: PodRecord;
  readonly status: PodStatusView;
  readonly row: PodRow;
}

/** A spec good enough for status when the kubelet has no record: the containers the runtime knows. */
export function specFromNodePod(nodePod: NodePod): V1Pod {
  const names = [...new Set([...nodePod.containers].sort((a, b) => a.attempt - b.attempt).map((c) => c.name))];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: nodePod.name, namespace: nodePod.namespace, uid: nodePod.uid },
    spec: { containers: names.map((name) => ({ name, image: nodePod.containers.find((c) => c.name === name)?.image ?? '' })) },
  };
}

export function podView(pod: V1Pod, nodePod: NodePod | undefined, record: PodRecord | undefined): PodView {
  const status = computePodStatus(pod, nodePod, record, recordedProbes(record));
  return { pod, ...(nodePod === undefined ? {} : { nodePod }), ...(record === undefined ? {} : { record }), status, row: podRow(pod, status) };
}

export async function readPodViews(cri: CriClient, records: PodRecordStore | undefined, options: { callTimeoutMs?: number } = {}): Promise<PodView[]> {
  const nodePods = await listNodePods(cri, options);
  const recorded = new Map(((await records?.list()) ?? []).map((r) => [r.pod.metadata?.uid ?? '', r]));
  const views: PodView[] = [];
  for (const nodePod of nodePods) {
    const record = recorded.get(nodePod.uid);
    recorded.delete(nodePod.uid);
    views.push(podView(record?.pod ?? specFromNodePod(nodePod), nodePod, record));
  }
  for (const record of recorded.values()) {
    if (record.sandboxCreated) continue; // stale: the runtime lost the pod
    views.push(podView(record.pod, undefined, record));
  }
  return views.sort((a, b) => `${a.row.namespace}/${a.row.name}`.localeCompare(`${b.row.namespace}/${b.row.name}`));
}

/**
 * Finds pods by `NAME` or `NAMESPACE/NAME` (in `namespace` when given). A bare name that matches
 * pods in several namespaces is ambiguous and refused.
 */
export function selectPods(views: readonly PodView[], names: readonly string[], namespace?: string): { found: PodView[]; errors: string[] } {
  const found: PodView[] = [];
  const errors: string[] = [];
  for (const wanted of names) {
    const [ns, name] = wanted.includes('/') ? (wanted.split('/', 2) as [string, string]) : [namespace, wanted];
    const matches = views.filter((v) => v.row.name === name && (ns === undefined || v.row.namespace === ns));
    if (matches.length === 0) errors.push(`Error from server (NotFound): pods ${JSON.stringify(name)} not found`);
    else if (matches.length > 1) errors.push(`error: pod name ${JSON.stringify(name)} is ambiguous: it exists in namespaces ${matches.map((m) => m.row.namespace).join(', ')}; give -n NAMESPACE or NAMESPACE/NAME`);
    else if (!found.includes(matches[0]!)) found.push(matches[0]!);
  }
  return { found, errors };
}

/**
 * What the prober that ran the pod recorded: started and ready of the containers it probed, for
 * the container IDs it saw. A probed container it has not seen yet is neither, as a prober's
 * first result is pending; containers without probes are both.
 */
function recordedProbes(record: PodRecord | undefined): ProbeStatus | undefined {
  const probes = record?.probes;
  if (probes === undefined) return undefined;
  const spec = (name: string) => record!.pod.spec?.containers.find((c) => c.name === name);
  return {
    started: (name, id) => (probes[name]?.containerId === id ? probes[name].started : spec(name)?.startupProbe == null),
    ready: (name, id) => (probes[name]?.containerId === id ? probes[name].ready : spec(name)?.startupProbe == null && spec(name)?.readinessProbe == null),
  };
}
