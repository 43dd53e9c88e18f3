/**
 * Waits until `check` holds, polling every `intervalMs`, and fails naming `what` once `timeoutMs`
 * has passed. Tests wait for the condition they assert on rather than sleeping for a time that a
 * loaded machine may not keep; the budget is generous because a passing test never spends it.
 */
export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000, intervalMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
