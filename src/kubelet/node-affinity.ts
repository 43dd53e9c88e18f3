/**
 * Whether a node satisfies what a pod requires of it, as the kubelet's general filter asks:
 * GetRequiredNodeAffinity(pod).Match(node) (k8s.io/component-helpers/scheduling/corev1/nodeaffinity,
 * kubernetes v1.34) — spec.nodeSelector and the required node affinity, both must hold — and
 * FindMatchingUntoleratedTaint with the toleration rules of ToleratesTaint (core/v1 toleration.go).
 */
import type { V1NodeSelectorRequirement, V1NodeSelectorTerm, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';

/** The parts of a Node the predicates read. */
export interface NodeLabelsAndName {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** A Gt/Lt value: a base-10 int64, else the requirement fails to parse (and matches nothing). */
function int64(value: string | undefined): bigint | undefined {
  if (value === undefined || !/^[+-]?\d+$/.test(value)) return undefined;
  return BigInt(value);
}

/** One requirement of a term against a set of labels or fields (labels.Requirement.Matches). */
function requirementMatches(req: V1NodeSelectorRequirement, values: Readonly<Record<string, string>>): boolean {
  const has = Object.prototype.hasOwnProperty.call(values, req.key);
  const value = values[req.key];
  const listed = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return has && listed.includes(value!);
    case 'NotIn':
      return !has || !listed.includes(value!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'Gt':
    case 'Lt': {
      // Exactly one value; a label that is not an integer does not match.
      const bound = listed.length === 1 ? int64(listed[0]) : undefined;
      const actual = has ? int64(value) : undefined;
      if (bound === undefined || actual === undefined) return false;
      return req.operator === 'Gt' ? actual > bound : actual < bound;
    }
    default:
      return false;
  }
}

/**
 * nodeSelectorTerm.match: every matchExpression against the labels and every matchField
 * (only `metadata.name`) against the node's name. A term with neither matches no node.
 */
function termMatches(term: V1NodeSelectorTerm, node: NodeLabelsAndName): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  if (!expressions.every((r) => requirementMatches(r, node.labels))) return false;
  return fields.every((r) => r.key === 'metadata.name' && (r.operator === 'In' || r.operator === 'NotIn') && requirementMatches(r, { 'metadata.name': node.name }));
}

/** RequiredNodeAffinity.Match: the nodeSelector's pairs all present, and one required term matching. */
export function matchesRequiredNodeAffinity(pod: V1Pod, node: NodeLabelsAndName): boolean {
  for (const [key, value] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (node.labels[key] !== value) return false;
  }
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required === undefined || required === null) return true;
  return (required.nodeSelectorTerms ?? []).some((term) => termMatches(term, node));
}

/**
 * ToleratesTaint: the effects agree (an empty toleration effect matches all), the keys agree (an
 * empty key with Exists matches every key), and Exists, or Equal (the default) with the same value.
 */
export function toleratesTaint(toleration: V1Toleration, taint: V1Taint): boolean {
  if ((toleration.effect ?? '') !== '' && toleration.effect !== taint.effect) return false;
  if ((toleration.key ?? '') !== taint.key) {
    if ((toleration.key ?? '') !== '' || toleration.operator !== 'Exists') return false;
  }
  switch (toleration.operator ?? '') {
    case 'Exists':
      return true;
    case '':
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    default:
      return false;
  }
}

/** FindMatchingUntoleratedTaint: the first taint passing `filter` that no toleration tolerates. */
export function untoleratedTaint(taints: readonly V1Taint[], tolerations: readonly V1Toleration[], filter: (t: V1Taint) => boolean): V1Taint | undefined {
  return taints.find((taint) => filter(taint) && !tolerations.some((t) => toleratesTaint(t, taint)));
}
