import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { blockOf, describeBlock, machinePodRangeRegistry, type PodRangeLease } from '../runtime/network/pod-range-registry.js';
import { loopbackPodCidr } from '../runtime/network/pod-ip-pool.js';

/** The file in a state directory that remembers its last default range, so a restart gets it back when it is free. */
const REMEMBERED_RANGE_FILE = 'pod-range';
const DEFAULT_OCTET = 10;

async function rememberedOctet(dir: string): Promise<number | undefined> {
  const text = await readFile(join(dir, REMEMBERED_RANGE_FILE), 'utf8').catch(() => '');
  const match = /^127\.(\d{1,3})\.0\.0\b/.exec(text);
  return match === null ? undefined : Number(match[1]);
}

/** Remembers a default range in the state directory (which exists by then); a failure only loses the preference. */
export async function rememberPodRange(dir: string, lease: PodRangeLease): Promise<void> {
  await writeFile(join(dir, REMEMBERED_RANGE_FILE), `${describeBlock(lease.block)}\n`, { mode: 0o644 }).catch(() => undefined);
}

export interface LeasedPodRange {
  /** The range for the runtime's pool. */
  readonly podCidr: string;
  readonly lease: PodRangeLease;
  /** True when chosen here (remember it), false when the user gave it. */
  readonly chosen: boolean;
}

/**
 * `runtime`'s pod range: `--pod-cidr` when given (refused when it overlaps a live runtime's),
 * else the first free /16 of 127.10.0.0 upwards, the one this state directory had last time first.
 */
export async function leaseRuntimePodRange(given: string | undefined, stateDir: string): Promise<LeasedPodRange> {
  const registry = machinePodRangeRegistry();
  if (given !== undefined) {
    const cidr = loopbackPodCidr(given, '--pod-cidr');
    return { podCidr: cidr.text, lease: await registry.claim(blockOf(cidr), stateDir, '--pod-cidr'), chosen: false };
  }
  const lease = await registry.claimFree(1, (await rememberedOctet(stateDir)) ?? DEFAULT_OCTET, stateDir);
  return { podCidr: describeBlock(lease.block), lease, chosen: true };
}

/**
 * The pod ranges of `node`'s nodes (node.ts podCidr): one /16 for a single node, else a /24 per
 * node in consecutive /16s (256 nodes each), leased together for the process. Resolves with the
 * lease and the second octet of its first address.
 */
export async function leaseNodePodRanges(count: number, stateRoot: string): Promise<{ lease: PodRangeLease; firstOctet: number }> {
  const sixteens = Math.ceil(count / 256);
  const preferred = (await rememberedOctet(stateRoot)) ?? (count === 1 ? DEFAULT_OCTET : DEFAULT_OCTET + 1);
  const lease = await machinePodRangeRegistry().claimFree(sixteens, preferred, stateRoot);
  return { lease, firstOctet: Math.floor(lease.block.first / 65_536) % 256 };
}
