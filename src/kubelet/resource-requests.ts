/**
 * What a pod asks of a node, as the kubelet's admission counts it: the scheduler framework's
 * computePodResourceRequest over k8s.io/component-helpers/resource PodRequests (kubernetes v1.34):
 * the sum of the containers' requests, sidecars (init containers with restartPolicy Always) added
 * to it, each other init container's request (plus the sidecars started before it) as a floor,
 * pod-level requests for cpu and memory in place of the containers' when set, and the RuntimeClass
 * overhead on top. A request left out where a limit is set takes the limit (API defaulting,
 * SetDefaults_Pod), so a file the API server never defaulted counts the same.
 * CPU is counted in millicores, everything else in whole units (bytes for memory and storage),
 * both rounded up as resource.Quantity's MilliValue and Value do.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { resourceAmount } from '../apiserver/quantity.js';


export type ResourceAmounts = Map<string, number>;

function amounts(list: Record<string, string | number> | undefined): ResourceAmounts {
  const out: ResourceAmounts = new Map();
  for (const [name, value] of Object.entries(list ?? {})) out.set(name, resourceAmount(name, value));
  return out;
}

const add = (into: ResourceAmounts, from: ResourceAmounts): void => {
  for (const [name, value] of from) into.set(name, (into.get(name) ?? 0) + value);
};
const max = (into: ResourceAmounts, from: ResourceAmounts): void => {
  for (const [name, value] of from) into.set(name, Math.max(into.get(name) ?? 0, value));
};

/** A container's requests, each missing one defaulted from its limit (SetDefaults_Pod). */
export function containerRequests(container: V1Container): ResourceAmounts {
  const requests = amounts(container.resources?.requests as Record<string, string> | undefined);
  for (const [name, value] of amounts(container.resources?.limits as Record<string, string> | undefined)) {
    if (!requests.has(name)) requests.set(name, value);
  }
  return requests;
}

/** The resources a pod may request at pod level (IsSupportedPodLevelResource). */
const podLevelResources: readonly string[] = ['cpu', 'memory'];

/** PodRequests (component-helpers/resource, v1.34) with the pod's overhead. */
export function podRequests(pod: V1Pod): ResourceAmounts {
  const spec = pod.spec;
  const requests: ResourceAmounts = new Map();
  for (const c of spec?.containers ?? []) add(requests, containerRequests(c));
  const sidecars: ResourceAmounts = new Map();
  const initFloor: ResourceAmounts = new Map();
  for (const c of spec?.initContainers ?? []) {
    const own = containerRequests(c);
    if (c.restartPolicy === 'Always') {
      // A sidecar runs beside the regular containers: it adds to them, and to every later init container.
      add(requests, own);
      add(sidecars, own);
      max(initFloor, sidecars);
    } else {
      const withSidecars: ResourceAmounts = new Map(own);
      add(withSidecars, sidecars);
      max(initFloor, withSidecars);
    }
  }
  max(requests, initFloor);
  const podLevel = (spec as { resources?: { requests?: Record<string, string> } } | undefined)?.resources?.requests;
  for (const [name, value] of amounts(podLevel)) if (podLevelResources.includes(name)) requests.set(name, value);
  add(requests, amounts(spec?.overhead as Record<string, string> | undefined));
  return requests;
}
