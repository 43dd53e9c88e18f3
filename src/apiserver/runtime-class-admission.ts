/**
 * The API server's RuntimeClass admission plugin on a pod CREATE (kubernetes v1.34
 * plugin/pkg/admission/runtimeclass/admission.go), as `kubelet run` emulates the API server: a pod
 * naming a RuntimeClass that does not exist is forbidden; the RuntimeClass's `overhead.podFixed`
 * becomes the pod's `spec.overhead` (which the kubelet's admission then counts), and a pod that
 * brings a different overhead of its own is forbidden. The plugin's merge of the RuntimeClass's
 * `scheduling` (nodeSelector, tolerations) is not reproduced.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { findRuntimeClass, type ClusterSnapshot } from './cluster.js';
import { resourceAmount } from './quantity.js';

/** Semantic equality of two resource lists: the same names with the same amounts (1 = 1000m). */
function sameResources(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...names].every((n) => a[n] !== undefined && b[n] !== undefined && resourceAmount(n, a[n]) === resourceAmount(n, b[n]));
}

/** Admit: the pod as the plugin leaves it, or `forbidden` with the plugin's error text. */
export function admitRuntimeClass(pod: V1Pod, cluster: ClusterSnapshot): { pod: V1Pod } | { forbidden: string } {
  const name = pod.spec?.runtimeClassName;
  if (name === undefined || name === null || name === '') return { pod };
  const runtimeClass = findRuntimeClass(cluster, name);
  if (runtimeClass === undefined) return { forbidden: `pod rejected: RuntimeClass ${JSON.stringify(name)} not found` };
  const fixed = runtimeClass.overhead?.podFixed;
  if (fixed === undefined) return { pod };
  const own = (pod.spec?.overhead ?? {}) as Record<string, string>;
  if (Object.keys(own).length > 0 && !sameResources(fixed, own)) return { forbidden: "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead" };
  return { pod: { ...pod, spec: { ...pod.spec!, overhead: { ...fixed } } } };
}
