/**
 * The kubelet's own admission of a pod (predicateAdmitHandler, pkg/kubelet/lifecycle/predicate.go,
 * kubernetes v1.34): what every pod meets on the node, whether it came from the API server or from
 * a static pod file. Static pods meet nothing else: no API admission plugin and no webhook sees them.
 *
 * In order: the `kubernetes.io/os` pod label against the node's OS, spec.os.name, then the general
 * filter (scheduler.AdmissionCheck with every failure, then the NoExecute taints): resources
 * (pods, cpu, memory, ephemeral-storage, then the other scalar resources), node affinity and
 * nodeSelector, node name, host ports; the first failure is the rejection. The kubelet then marks
 * the pod Failed with that reason and "Pod was rejected: <message>" (kubelet.go rejectPod).
 *
 * Not reproduced: the critical-pod admission handler, which evicts other pods to make room for a
 * static or system-critical pod refused for resources (we refuse it like any other pod);
 * SupplementalGroupsPolicy=Strict, which a Windows pod cannot set (API validation refuses it).
 */
import type { V1ContainerPort, V1Pod, V1Taint } from '@kubernetes/client-node';
import { matchesRequiredNodeAffinity, untoleratedTaint, type NodeLabelsAndName } from './node-affinity.js';
import { podRequests, type ResourceAmounts } from './resource-requests.js';
import { resourceAmount } from '../apiserver/quantity.js';

export interface KubeletRejection {
  readonly reason: string;
  readonly message: string;
}

/** The Node as the admit handler reads it (the kubelet's getNodeAnyWay). */
export interface AdmissionNode extends NodeLabelsAndName {
  readonly taints: readonly V1Taint[];
  /** status.allocatable: cpu, memory, pods, ephemeral-storage and any extended resource. */
  readonly allocatable: Readonly<Record<string, string>>;
}

export interface AdmissionAttributes {
  readonly pod: V1Pod;
  /** The node's active pods already admitted (attrs.OtherPods), the pod itself excluded. */
  readonly otherPods: readonly V1Pod[];
  /** A pod from a file (types.IsStaticPod): its taints are not checked. */
  readonly staticPod?: boolean;
}

/** The OS this kubelet runs on (runtime.GOOS of a Windows kubelet). */
const nodeOs = 'windows';
const osLabel = 'kubernetes.io/os';

/**
 * rejectPodAdmissionBasedOnOSSelector: the pod's LABEL `kubernetes.io/os` (not its nodeSelector:
 * that is the general filter's NodeAffinity) against the node's, which the kubelet takes to be its
 * own OS whatever the Node says.
 */
function rejectedByOsLabel(pod: V1Pod): boolean {
  const label = pod.metadata?.labels?.[osLabel];
  return label !== undefined && label !== nodeOs;
}

/** rejectPodAdmissionBasedOnOSField: spec.os.name, when set, must be the node's OS. */
function rejectedByOsField(pod: V1Pod): boolean {
  const os = pod.spec?.os;
  return os !== undefined && os !== null && os.name !== nodeOs;
}

/** The OS checks alone (they come before everything else, and preemption cannot help them). */
export function admitPodOs(pod: V1Pod): KubeletRejection | undefined {
  if (rejectedByOsLabel(pod)) return { reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" };
  if (rejectedByOsField(pod)) return { reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  return undefined;
}

/** Reasons of InsufficientResourceError (predicate.go's OutOfCPU … constants; others OutOf<name>). */
const outOfReason = (resource: string): string => `OutOf${resource}`;
const insufficient = (resource: string, requested: number, used: number, capacity: number): KubeletRejection => ({
  reason: outOfReason(resource),
  message: `Node didn't have enough resource: ${resource}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
});
/** PredicateFailureError: the plugin's name is the reason; Error() is the message. */
const predicateFailure = (name: string, description: string): KubeletRejection => ({ reason: name, message: `Predicate ${name} failed: ${description}` });

const nativeScalar = (name: string): boolean => !name.includes('/') || name.includes('kubernetes.io/');
const standard = new Set(['cpu', 'memory', 'ephemeral-storage', 'pods']);

/** noderesources.Fits (fit.go fitsRequest): every shortfall, in the plugin's order. */
function resourceShortfalls(pod: V1Pod, node: AdmissionNode, otherPods: readonly V1Pod[]): KubeletRejection[] {
  const found: KubeletRejection[] = [];
  const allocatable: ResourceAmounts = new Map(Object.entries(node.allocatable).map(([name, value]) => [name, resourceAmount(name, value)]));
  const allowedPods = allocatable.get('pods') ?? 0;
  if (otherPods.length + 1 > allowedPods) found.push(insufficient('pods', 1, otherPods.length, allowedPods));

  const request = podRequests(pod);
  // removeMissingExtendedResources: an extended resource the node does not have is not checked.
  for (const name of [...request.keys()]) if (!nativeScalar(name) && !name.startsWith('requests.') && !allocatable.has(name)) request.delete(name);
  const scalars = [...request.keys()].filter((n) => !standard.has(n)).sort();
  if (['cpu', 'memory', 'ephemeral-storage'].every((n) => (request.get(n) ?? 0) === 0) && scalars.length === 0) return found;

  const used: ResourceAmounts = new Map();
  for (const other of otherPods) for (const [name, value] of podRequests(other)) used.set(name, (used.get(name) ?? 0) + value);
  for (const name of ['cpu', 'memory', 'ephemeral-storage', ...scalars]) {
    const wanted = request.get(name) ?? 0;
    const capacity = allocatable.get(name) ?? 0;
    const inUse = used.get(name) ?? 0;
    if (wanted > 0 && wanted > capacity - inUse) found.push(insufficient(name, wanted, inUse, capacity));
  }
  return found;
}

interface HostPort {
  readonly ip: string;
  readonly protocol: string;
  readonly port: number;
}

/** The host ports a pod's containers (and sidecars) bind, sanitised as HostPortInfo does. */
function hostPorts(pod: V1Pod): HostPort[] {
  const sidecars = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
  const ports: V1ContainerPort[] = [...(pod.spec?.containers ?? []), ...sidecars].flatMap((c) => c.ports ?? []);
  return ports.filter((p) => (p.hostPort ?? 0) > 0).map((p) => ({ ip: p.hostIP || '0.0.0.0', protocol: p.protocol || 'TCP', port: p.hostPort! }));
}

/** HostPortInfo.CheckConflict: the same port and protocol on the same address, or either on 0.0.0.0. */
function portsConflict(wanted: readonly HostPort[], inUse: readonly HostPort[]): boolean {
  return wanted.some((w) => inUse.some((u) => u.port === w.port && u.protocol === w.protocol && (w.ip === '0.0.0.0' || u.ip === '0.0.0.0' || u.ip === w.ip)));
}

/** generalFilter (predicate.go): AdmissionCheck with every failure, then the NoExecute taints. */
function generalFilter(attrs: AdmissionAttributes, node: AdmissionNode): KubeletRejection[] {
  const { pod, otherPods } = attrs;
  const reasons = resourceShortfalls(pod, node, otherPods);
  if (!matchesRequiredNodeAffinity(pod, node)) reasons.push(predicateFailure('NodeAffinity', "node(s) didn't match Pod's node affinity/selector"));
  const nodeName = pod.spec?.nodeName ?? '';
  if (nodeName !== '' && nodeName !== node.name) reasons.push(predicateFailure('NodeName', "node(s) didn't match the requested node name"));
  // The other pods' ports are gathered only for a pod that asks for one (most do not).
  const wanted = hostPorts(pod);
  if (wanted.length > 0 && portsConflict(wanted, otherPods.flatMap(hostPorts))) reasons.push(predicateFailure('NodePorts', "node(s) didn't have free ports for the requested pod ports"));
  // The kubelet only cares about NoExecute taints, and never for a static pod.
  if (attrs.staticPod !== true && untoleratedTaint(node.taints, pod.spec?.tolerations ?? [], (t) => t.effect === 'NoExecute') !== undefined) {
    reasons.push(predicateFailure('TaintToleration', "node(s) had taints that the pod didn't tolerate"));
  }
  return reasons;
}

/**
 * predicateAdmitHandler.Admit on a Windows node: undefined when the pod is admitted, else the
 * first failure's reason and message (the kubelet reports only the first).
 */
export function admitPodOnNode(attrs: AdmissionAttributes, node: AdmissionNode): KubeletRejection | undefined {
  return admitPodOs(attrs.pod) ?? generalFilter(attrs, node)[0];
}

/**
 * Pods that hold their resources on the node (filterOutInactivePods): all but those in a terminal
 * phase; a pod being deleted still holds them until it has terminated.
 */
export function activePods(pods: readonly V1Pod[]): V1Pod[] {
  return pods.filter((p) => p.status?.phase !== 'Failed' && p.status?.phase !== 'Succeeded');
}

/** What a kubelet outside node mode (`kubelet run`, static pods) reports of itself. */
export interface StandaloneNodeCapacity {
  readonly cpu: string;
  readonly memory: string;
  readonly ephemeralStorage: string;
  readonly maxPods: number;
}

/** The capacity node mode reports by default (its --cpu, --memory, --ephemeral-storage, --max-pods). */
export const defaultNodeCapacity: StandaloneNodeCapacity = { cpu: '4', memory: '16Gi', ephemeralStorage: '100Gi', maxPods: 110 };

/**
 * status.allocatable for a capacity: Windows' default hard eviction thresholds taken off
 * (memory.available<500Mi, nodefs.available<10%), as the kubelet's allocatable computation does.
 */
export function nodeAllocatable(capacity: StandaloneNodeCapacity): Record<string, string> {
  const memory = resourceAmount('memory', capacity.memory);
  const storage = resourceAmount('ephemeral-storage', capacity.ephemeralStorage);
  return {
    cpu: capacity.cpu,
    memory: String(Math.max(0, memory - 500 * 2 ** 20)),
    pods: String(capacity.maxPods),
    'ephemeral-storage': String(Math.floor(storage * 0.9)),
  };
}

/** The Node a kubelet without an API server admits against: its own labels, no taints. */
export function standaloneNode(name: string, capacity: StandaloneNodeCapacity = defaultNodeCapacity): AdmissionNode {
  return {
    name,
    labels: { 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': name, 'kubernetes.io/os': nodeOs },
    taints: [],
    allocatable: nodeAllocatable(capacity),
  };
}
