/** Resolves once tidy-up queued before this call has run (TidyUp.later: two turns of the event loop). */
export function afterTidyUp(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
