// What keeps parallel mocha workers (mocha --parallel, .mocharc.cjs) apart on one loopback: each
// worker has a slot (MOCHA_WORKER_ID, which mocha sets in each worker it forks, modulo SLOTS), and
// the addresses and ports the harness hands out come from that slot's own range, so two workers
// never pick the same pod range or port. A serial run (no MOCHA_WORKER_ID) has no slot and picks
// from the whole range, as before.

/** How many workers get ranges of their own (more than any --jobs this suite runs with). */
export const SLOTS = 8;

/** This process's slot, 0 … SLOTS-1, or undefined outside a parallel worker. */
export function workerSlot(): number | undefined {
  const id = process.env['MOCHA_WORKER_ID'];
  if (id === undefined || !/^\d+$/.test(id)) return undefined;
  return Number(id) % SLOTS;
}

/**
 * `count` integers from `first` on, split into SLOTS equal parts: this worker's part (the whole
 * range outside a worker).
 */
export function slotRange(first: number, count: number): { first: number; count: number } {
  const slot = workerSlot();
  if (slot === undefined) return { first, count };
  const each = Math.floor(count / SLOTS);
  return { first: first + slot * each, count: each };
}
