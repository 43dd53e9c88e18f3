import { chmod, mkdir, readdir, rmdir, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RuntimeError } from '../errors.js';
import { holderAlive, PidLockFile, readHolder, type LockHolder } from '../pid-lock-file.js';
import { formatIpv4, type Ipv4Cidr } from './pod-ip-pool.js';

/**
 * The pod ranges the runtimes of one machine use, so that two of them never hand out the same
 * pod address: simulated nodes share the machine's loopback, where real nodes each have their own
 * network. A directory of lease files, one per live runtime (a pid lock file naming the range and
 * the state directory); a runtime that died leaves a stale lease the next chooser removes. Choices
 * are made one at a time, under the directory's own lock.
 */

/** A block of loopback addresses: `size` addresses from `first`. */
export interface AddressBlock {
  readonly first: number;
  readonly size: number;
}

export interface PodRangeLease {
  /** The leased addresses (a CIDR, or consecutive /16s for a process of several nodes). */
  readonly block: AddressBlock;
  /** Removes the lease file. Safe to call twice. */
  release(): Promise<void>;
}

const REGISTRY_LOCK = 'registry.lock';
const LEASE_SUFFIX = '.lease';
/** How long a chooser waits for another one that holds the registry (a choice takes milliseconds). */
const REGISTRY_WAIT_MS = 10_000;
const SIXTEEN = 65_536;
/** Default blocks lie in 127.10.0.0–127.254.255.255: 127.0–127.9 stay for node addresses and the user. */
const FIRST_DEFAULT_OCTET = 10;
const LAST_DEFAULT_OCTET = 254;

export function blockOf(cidr: Ipv4Cidr): AddressBlock {
  return { first: cidr.base, size: 2 ** (32 - cidr.bits) };
}

export function describeBlock(block: AddressBlock): string {
  const bits = 32 - Math.log2(block.size);
  if (Number.isInteger(bits) && block.first % block.size === 0) return `${formatIpv4(block.first)}/${bits}`;
  return `${formatIpv4(block.first)}-${formatIpv4(block.first + block.size - 1)}`;
}

function overlaps(a: AddressBlock, b: AddressBlock): boolean {
  return a.first < b.first + b.size && b.first < a.first + a.size;
}

interface LiveLease {
  readonly block: AddressBlock;
  readonly holder: LockHolder;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class PodRangeRegistry {
  constructor(readonly dir: string) {}

  /**
   * Leases a range the user gave; fails naming the live runtime whose range overlaps it (our own
   * text: `field` is the flag or option the range came from).
   */
  claim(block: AddressBlock, stateDir: string, field: string): Promise<PodRangeLease> {
    return this.choose(stateDir, (live) => {
      const taken = live.find((lease) => overlaps(lease.block, block));
      if (taken !== undefined) {
        const owner = typeof taken.holder.stateDir === 'string' ? `, state directory ${taken.holder.stateDir}` : '';
        throw new RuntimeError(
          'FailedPrecondition',
          `${field} ${describeBlock(block)} overlaps the pod range ${describeBlock(taken.block)} of another cri-winsim runtime (pid ${taken.holder.pid}${owner}): runtimes on one machine share its loopback; choose another range`,
        );
      }
      return block;
    });
  }

  /**
   * Leases the first free block of `sixteens` consecutive /16s in 127.10.0.0–127.254.255.255,
   * trying the block at `preferredOctet` (127.<preferredOctet>.0.0) first and going up from there.
   */
  claimFree(sixteens: number, preferredOctet: number, stateDir: string): Promise<PodRangeLease> {
    return this.choose(stateDir, (live) => {
      const last = LAST_DEFAULT_OCTET - sixteens + 1;
      const start = Math.min(Math.max(preferredOctet, FIRST_DEFAULT_OCTET), last);
      for (let i = 0; i <= last - FIRST_DEFAULT_OCTET; i++) {
        const octet = FIRST_DEFAULT_OCTET + ((start - FIRST_DEFAULT_OCTET + i) % (last - FIRST_DEFAULT_OCTET + 1));
        const block = { first: (127 * 256 + octet) * SIXTEEN, size: sixteens * SIXTEEN };
        if (!live.some((lease) => overlaps(lease.block, block))) return block;
      }
      throw new RuntimeError('ResourceExhausted', `no free pod range of ${sixteens} /16 block(s) in 127.${FIRST_DEFAULT_OCTET}.0.0-127.${LAST_DEFAULT_OCTET}.255.255: every one overlaps a live runtime's (leases in ${this.dir})`);
    });
  }

  private async choose(stateDir: string, pick: (live: readonly LiveLease[]) => AddressBlock): Promise<PodRangeLease> {
    // The last lease's release removes the empty directory; one removed under this chooser's
    // feet is made again.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.chooseOnce(stateDir, pick);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 5) throw err;
      }
    }
  }

  private async chooseOnce(stateDir: string, pick: (live: readonly LiveLease[]) => AddressBlock): Promise<PodRangeLease> {
    await mkdir(this.dir, { recursive: true });
    // Shared by every user's runtimes, as the loopback is: writable by all, like /tmp.
    await chmod(this.dir, 0o1777).catch(() => undefined);
    const registryLock = await this.lockRegistry();
    try {
      const block = pick(await this.liveLeases());
      const outcome = await PidLockFile.acquire(join(this.dir, `${formatIpv4(block.first)}_${block.size}${LEASE_SUFFIX}`), {
        first: block.first,
        size: block.size,
        range: describeBlock(block),
        stateDir,
      });
      // Under the registry lock a live lease of this name would have overlapped above.
      if ('heldBy' in outcome) throw new Error(`pod range lease ${describeBlock(block)} is held by pid ${outcome.heldBy.pid}`);
      return {
        block,
        release: async () => {
          await outcome.lock.release();
          // Nothing left behind by the last runtime (rmdir fails while another lease is there).
          await rmdir(this.dir).catch(() => undefined);
        },
      };
    } finally {
      await registryLock.release();
    }
  }

  private async lockRegistry(): Promise<PidLockFile> {
    const deadline = Date.now() + REGISTRY_WAIT_MS;
    for (;;) {
      const outcome = await PidLockFile.acquire(join(this.dir, REGISTRY_LOCK));
      if ('lock' in outcome) return outcome.lock;
      if (Date.now() > deadline) throw new Error(`the pod range registry ${this.dir} stayed locked by pid ${outcome.heldBy.pid} for ${REGISTRY_WAIT_MS} ms`);
      await sleep(20);
    }
  }

  /** The leases of live runtimes; the stale ones (their runtime died) are removed. */
  private async liveLeases(): Promise<LiveLease[]> {
    const live: LiveLease[] = [];
    for (const name of await readdir(this.dir)) {
      if (!name.endsWith(LEASE_SUFFIX)) continue;
      const path = join(this.dir, name);
      const holder = await readHolder(path);
      if (holder === undefined || !holderAlive(holder)) {
        // Another user's stale lease in the shared directory may not be ours to remove: it is
        // skipped as stale either way.
        await unlink(path).catch(() => undefined);
        continue;
      }
      const first = Number(holder.first);
      const size = Number(holder.size);
      if (Number.isInteger(first) && Number.isInteger(size) && size > 0) live.push({ block: { first, size }, holder });
    }
    return live;
  }
}

/**
 * The registry the cri-winsim processes of this machine share: `cri-winsim-pod-ranges` under the
 * temporary directory (TMPDIR unset: /tmp).
 */
export function machinePodRangeRegistry(): PodRangeRegistry {
  return new PodRangeRegistry(join(tmpdir(), 'cri-winsim-pod-ranges'));
}
