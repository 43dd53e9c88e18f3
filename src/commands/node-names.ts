/**
 * What the node flags say about each node of a node process: its name (--hostname-override, or
 * --nodes with --node-name-prefix and --node-ordinal), its loopback address and pod CIDR, its
 * NetBIOS computer name; and the Go durations those flags take.
 */

/** The flags that name the nodes of a process. */
export interface NodeNameFlags {
  readonly hostnameOverride?: string | undefined;
  readonly nodes?: string | undefined;
  readonly nodeNamePrefix?: string | undefined;
  /** With --nodes N: this process's slice of the names, PREFIX-(k·N+1) … PREFIX-(k·N+N). */
  readonly nodeOrdinal?: string | undefined;
}

/** A Go duration of the forms the kubelet's flags take (`10s`, `1m30s`, `500ms`, `2h`). */
export function parseDuration(flag: string, value: string): number {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = re.exec(value); match !== null; match = re.exec(value)) {
    total += Number(match[1]) * units[match[2]!]!;
    consumed = re.lastIndex;
  }
  if (value === '' || consumed !== value.length) throw new Error(`${flag}: invalid duration ${JSON.stringify(value)} (e.g. 10s, 1m30s)`);
  return total;
}

export const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The node names: --hostname-override (lowercased, as the kubelet does) or PREFIX-1 … PREFIX-N. */
export function nodeNames(options: NodeNameFlags): string[] {
  let names: string[];
  if (options.nodes !== undefined) {
    const count = Number(options.nodes);
    if (!/^\d+$/.test(options.nodes) || count < 1 || count > 10_000) throw new Error(`--nodes: ${JSON.stringify(options.nodes)} is not a whole number from 1 to 10000`);
    if (options.nodeNamePrefix === undefined) throw new Error('--nodes needs --node-name-prefix');
    if (options.hostnameOverride !== undefined) throw new Error('--hostname-override and --nodes are mutually exclusive');
    const first = count * nodeOrdinal(options.nodeOrdinal) + 1;
    names = Array.from({ length: count }, (_, i) => `${options.nodeNamePrefix!.toLowerCase()}-${first + i}`);
  } else {
    if (options.nodeOrdinal !== undefined) throw new Error('--node-ordinal needs --nodes');
    if (options.hostnameOverride === undefined) throw new Error('give --hostname-override NAME (or --nodes N --node-name-prefix PREFIX)');
    names = [options.hostnameOverride.trim().toLowerCase()];
  }
  for (const name of names) {
    if (name.length > 253 || !dns1123Subdomain.test(name)) throw new Error(`node name ${JSON.stringify(name)}: must be a lowercase RFC 1123 subdomain`);
  }
  return names;
}

/**
 * --node-ordinal: a whole number, or a name ending in one (a StatefulSet pod's name, `nodes-3`),
 * so a replica can pass its pod name or its `apps.kubernetes.io/pod-index` label.
 */
function nodeOrdinal(value: string | undefined): number {
  if (value === undefined) return 0;
  const match = /(?:^|-)(\d+)$/.exec(value.trim());
  const ordinal = match === null ? NaN : Number(match[1]);
  if (!Number.isSafeInteger(ordinal) || ordinal > 100_000) throw new Error(`--node-ordinal: ${JSON.stringify(value)} is not a whole number (or a StatefulSet pod name ending in one) up to 100000`);
  return ordinal;
}

/** The loopback address of node i (0-based) of n: 127.0.0.1 alone, else 127.0.1.1, 127.0.1.2, … */
export function nodeAddress(index: number, count: number, given?: string): string {
  if (given !== undefined) {
    if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(given) || given.split('.').some((o) => Number(o) > 255)) throw new Error(`--node-ip ${given}: node addresses are loopback only (127.0.0.0/8)`);
    if (count > 1) throw new Error('--node-ip applies to one node; with --nodes each node gets 127.0.1.x');
    return given;
  }
  if (count === 1) return '127.0.0.1';
  return `127.0.${1 + Math.floor(index / 254)}.${1 + (index % 254)}`;
}

/**
 * The loopback pod CIDR of node i of n, in the block the process leased (pod-ranges.ts) from
 * 127.<firstOctet>.0.0: the whole /16 for one node, a /24 each for several.
 */
export function podCidr(index: number, count: number, firstOctet = count === 1 ? 10 : 11): string {
  if (count === 1) return `127.${firstOctet}.0.0/16`;
  return `127.${firstOctet + Math.floor(index / 256)}.${index % 256}.0/24`;
}

/** The NetBIOS computer name of a node (≤ 15 characters): the node name, its tail kept when too long. */
export function computerName(nodeName: string, index: number): string {
  const cleaned = nodeName.toUpperCase().replace(/[^A-Z0-9-]/g, '-');
  if (cleaned.length <= 15) return cleaned;
  const suffix = `-${index + 1}`;
  return `${cleaned.slice(0, 15 - suffix.length)}${suffix}`;
}
