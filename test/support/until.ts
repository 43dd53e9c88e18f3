import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Calls `probe` every `pollMs` until it returns something other than undefined, and returns that.
 * A probe that throws counts as "not yet"; past `timeoutMs` the wait fails with an error that names
 * `what` and the probe's last error.
 */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, pollMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms${last === undefined ? '' : ` (last error: ${(last as Error).message})`}`);
    await sleep(pollMs);
  }
}
