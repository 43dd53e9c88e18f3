import { setFlagsFromString } from 'node:v8';

/**
 * V8's interrupt budget for the runtime process: how much bytecode a function runs between the
 * checks that decide whether to optimise it (V8's default is 67,584 bytes; a function is optimised
 * after three checks and more for a larger one).
 *
 * The default suits code that loops. A CRI runtime's code runs once or twice per call: with it a
 * small handler function needed thousands of pods before the optimising compiler took it, so for
 * thousands of pods after start the compiler kept working on a helper thread, taking a core from
 * the event loop at random moments. With an eighth of the budget the runtime reaches its steady
 * state within a few hundred pods. The same functions are optimised, only sooner. The figures:
 * bench/README.md, "Tuning tricks"; `npm run bench:v8` checks the budget's effect in V8.
 */
export const RUNTIME_INTERRUPT_BUDGET = 8192;

/** Sets the budget for this process; functions already running pick it up at their next check. */
export function tuneJitForRequestHandlers(): void {
  setFlagsFromString(`--interrupt-budget=${RUNTIME_INTERRUPT_BUDGET}`);
}
