import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits until `check` holds, polling every `intervalMs`, and fails naming `what` once `timeoutMs`
 * has passed. Tests wait for the condition they assert on rather than sleeping for a time that a
 * loaded machine may not keep; the budget is generous because a passing test never spends it.
 */
export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000, intervalMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

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
