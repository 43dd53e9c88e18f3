import type { Logger } from '../log.js';

/**
 * Undo steps declared where a resource is acquired (containerd's `defer func() { if retErr !=
 * nil { … } }()`): call `defer` right after acquiring, `dismiss` once the operation succeeded,
 * and `unwind` in a `finally` — it runs the remaining steps in reverse order, logging (not
 * throwing) their own failures so the original error reaches the caller.
 */
export class CleanupStack {
  private steps: { what: string; run: () => unknown }[] = [];

  defer(what: string, run: () => unknown): void {
    this.steps.push({ what, run });
  }

  /** The operation succeeded: keep every resource. */
  dismiss(): void {
    this.steps = [];
  }

  async unwind(logger: Logger): Promise<void> {
    const steps = this.steps.reverse();
    this.steps = [];
    for (const step of steps) {
      try {
        await step.run();
      } catch (err) {
        logger.warn({ err }, `cleanup failed: ${step.what}`);
      }
    }
  }
}
