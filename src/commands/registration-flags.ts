/**
 * The kubelet's registration flags (kubernetes v1.34 cmd/kubelet/app/options: --node-labels,
 * --register-with-taints), read by `cri-winsim node` and by the standalone kubelet's admission node.
 */
import type { V1Taint } from '@kubernetes/client-node';

/** --node-labels k=v,k2=v2. */
export function parseNodeLabels(value: string | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  if (value === undefined || value === '') return labels;
  for (const pair of value.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--node-labels: ${JSON.stringify(pair)} is not key=value`);
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return labels;
}

/** --register-with-taints key=value:Effect,key:Effect (ParseTaints). */
export function parseTaints(value: string | undefined): V1Taint[] {
  if (value === undefined || value === '') return [];
  return value.split(',').map((spec) => {
    const colon = spec.lastIndexOf(':');
    const effect = colon === -1 ? '' : spec.slice(colon + 1);
    if (!['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(effect)) {
      throw new Error(`--register-with-taints: invalid taint spec: ${spec}, unsupported taint effect ${JSON.stringify(effect)}`);
    }
    const keyValue = spec.slice(0, colon);
    const eq = keyValue.indexOf('=');
    const key = eq === -1 ? keyValue : keyValue.slice(0, eq);
    if (key === '') throw new Error(`--register-with-taints: invalid taint spec: ${spec}`);
    return { key, effect, ...(eq === -1 ? {} : { value: keyValue.slice(eq + 1) }) };
  });
}
