import { slotRange } from './worker-slot.js';

/**
 * Loopback pod ranges for test runtimes. Runtimes of other test processes on the machine may hold
 * the program's defaults (127.10.0.0/16 for one node, 127.11.0.0/16 split per node with --nodes),
 * and servers bind port 80 on pod IPs, so tests use ranges of their own: /20 blocks of
 * 127.100.0.0–127.195.255.255 (96 × 16 blocks of 4,093 pods; some suites name fixed ranges below
 * 127.100), and /16 ranges of 127.200–127.247 for suites that need many addresses. In a parallel
 * run each worker has its own part of both (worker-slot.ts); within one process consecutive calls
 * never repeat a block until the part is used up.
 */
const BLOCKS = slotRange(100 * 16, 96 * 16);
let nextBlock = Math.floor(Math.random() * BLOCKS.count);

export function testPodCidr(): string {
  const block = BLOCKS.first + (nextBlock++ % BLOCKS.count);
  return `127.${Math.floor(block / 16)}.${16 * (block % 16)}.0/20`;
}

const WIDE = slotRange(200, 48);
let nextWide = Math.floor(Math.random() * WIDE.count);

/** A /16 loopback pod range (127.200.0.0/16 … 127.247.0.0/16) for suites that need many addresses. */
export function testPodCidr16(): string {
  return `127.${WIDE.first + (nextWide++ % WIDE.count)}.0.0/16`;
}
