/** A closed-loop load runner: N workers repeat a task, bounded by an iteration count and a wall-clock budget. */

export interface RunBounds {
  /** Number of workers running the task at the same time (>= 1). */
  concurrency: number;
  /** Total task iterations across all workers; the run stops once this many have been started. */
  maxIterations: number;
  /** No new iteration starts after this many milliseconds; iterations in flight finish. */
  maxDurationMs: number;
  /** The run is abandoned after this many failed iterations (default 10). */
  maxFailures?: number;
}

export interface RunOutcome {
  /** Iterations that completed without error. */
  completed: number;
  failed: number;
  elapsedMs: number;
  /** Why the run stopped: every iteration done, time budget spent, or too many failures. */
  stoppedBy: 'iterations' | 'time' | 'failures';
  /** The first few distinct error messages, for the report. */
  errors: string[];
}

export type Task = (worker: number, iteration: number) => Promise<void>;

const KEPT_ERRORS = 5;

export async function runConcurrently(bounds: RunBounds, task: Task): Promise<RunOutcome> {
  const { concurrency, maxIterations, maxDurationMs } = bounds;
  const maxFailures = bounds.maxFailures ?? 10;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be an integer >= 1, got ${concurrency}`);
  if (!Number.isInteger(maxIterations) || maxIterations < 1) throw new RangeError(`maxIterations must be an integer >= 1, got ${maxIterations}`);
  if (!(maxDurationMs > 0)) throw new RangeError(`maxDurationMs must be > 0, got ${maxDurationMs}`);

  const start = performance.now();
  const deadline = start + maxDurationMs;
  let next = 0;
  let completed = 0;
  let failed = 0;
  let stoppedBy: RunOutcome['stoppedBy'] = 'iterations';
  const errors: string[] = [];

  const worker = async (id: number): Promise<void> => {
    // Bounded: each pass claims one of maxIterations indices or leaves.
    while (next < maxIterations) {
      if (failed >= maxFailures) {
        stoppedBy = 'failures';
        return;
      }
      if (performance.now() >= deadline) {
        if (stoppedBy === 'iterations') stoppedBy = 'time';
        return;
      }
      const iteration = next++;
      try {
        await task(id, iteration);
        completed++;
      } catch (err) {
        failed++;
        const message = err instanceof Error ? err.message : String(err);
        if (errors.length < KEPT_ERRORS && !errors.includes(message)) errors.push(message);
      }
    }
  };

  await Promise.all(Array.from({ length: concurrency }, (_, id) => worker(id)));
  if (failed >= maxFailures) stoppedBy = 'failures';
  return { completed, failed, elapsedMs: performance.now() - start, stoppedBy, errors };
}

/**
 * The order in which two targets take turns: A B B A, repeated, `roundsEach` rounds each (even),
 * so that drift on a shared machine — a slow phase of a few seconds, a neighbour's burst — falls
 * on both alike, and neither always goes first.
 */
export function abbaOrder<T>(a: T, b: T, roundsEach: number): T[] {
  if (!Number.isInteger(roundsEach) || roundsEach < 2 || roundsEach % 2 !== 0) {
    throw new RangeError(`roundsEach must be an even integer >= 2, got ${roundsEach}`);
  }
  const order: T[] = [];
  for (let i = 0; i < roundsEach / 2; i++) order.push(a, b, b, a);
  return order;
}
