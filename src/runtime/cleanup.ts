import type { Logger } from '../log.js';

interface Step {
  what: string;
  /** Runs on success too: something the operation holds only while it runs. */
  always: boolean;
  run: (err: unknown) => unknown;
}

/**
 * Undo steps declared where a resource is acquired (containerd's `defer func() { if retErr !=
 * nil { … } }()`). The one idiom for an operation that acquires things:
 *
 *     const cleanup = new CleanupStack();
 *     try {
 *       acquire(); cleanup.defer('release it', (err) => release(err));
 *       …
 *       commit();
 *       await cleanup.done(logger);
 *     } catch (err) {
 *       await cleanup.unwind(logger, err);
 *       throw err;
 *     }
 *
 * `unwind` runs the steps in reverse order, handing each the error the operation failed with,
 * and logs (never throws) their own failures, so the original error reaches the caller. `done`
 * drops the undo steps and runs the `always` steps. Guard flags set for the operation's duration
 * are reset by a step, so every path resets them.
 */
export class CleanupStack {
  private steps: Step[] = [];

  /** An undo step, run only when the operation fails, with its error. */
  defer(what: string, undo: (err: unknown) => unknown): void {
    this.steps.push({ what, always: false, run: undo });
  }

  /** A step run however the operation ends (on failure with the error, in order with the undo steps). */
  always(what: string, run: (err?: unknown) => unknown): void {
    this.steps.push({ what, always: true, run });
  }

  /** The operation succeeded: the undo steps are dropped, the `always` steps run. */
  async done(logger: Logger): Promise<void> {
    const steps = this.steps;
    this.steps = [];
    for (let i = steps.length - 1; i >= 0; i--) {
      const step = steps[i] as Step;
      if (step.always) await runStep(step, undefined, logger);
    }
  }

  /** The operation failed with `err`: every remaining step runs, last declared first. */
  async unwind(logger: Logger, err: unknown): Promise<void> {
    const steps = this.steps;
    this.steps = [];
    for (let i = steps.length - 1; i >= 0; i--) await runStep(steps[i] as Step, err, logger);
  }
}

async function runStep(step: Step, err: unknown, logger: Logger): Promise<void> {
  try {
    await step.run(err);
  } catch (stepErr) {
    logger.warn({ err: stepErr }, `cleanup failed: ${step.what}`);
  }
}
