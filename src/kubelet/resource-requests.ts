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

export type ResourceAmounts = Map<string, number>;

const binaryExponents: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const decimalExponents: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const quantityPattern = /^([+-]?)(\d*)(?:\.(\d*))?(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/**
 * A quantity in whole units (`scale` 0) or thousandths (`scale` 3), rounded up, computed exactly
 * (no floating point: 0.1 CPU is 100 millicores, not 101). Undefined for a value that is not a
 * quantity; API validation refuses those before admission sees them.
 */
export function scaledQuantity(value: string | number, scale: 0 | 3): number | undefined {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const m = quantityPattern.exec(text);
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const fraction = m[3] ?? '';
  let numerator = BigInt(`${m[2] || '0'}${fraction}`);
  let denominator = 10n ** BigInt(fraction.length);
  let exponent = scale;
  if (m[4] !== undefined) exponent += Number(m[4].slice(1));
  else if (m[5] !== undefined && binaryExponents[m[5]] !== undefined) numerator *= 2n ** BigInt(binaryExponents[m[5]]!);
  else exponent += decimalExponents[m[5] ?? '']!;
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else denominator *= 10n ** BigInt(-exponent);
  const whole = numerator / denominator + (numerator % denominator === 0n ? 0n : 1n);
  return Number(m[1] === '-' ? -whole : whole);
}

/** cpu in millicores, anything else in whole units. */
export function resourceAmount(name: string, value: string | number): number {
  return scaledQuantity(value, name === 'cpu' ? 3 : 0) ?? 0;
}

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
