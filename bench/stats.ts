/** Latency statistics for the benchmark: nearest-rank percentiles over recorded samples. */

export interface LatencySummary {
  count: number;
  /** All figures in milliseconds. */
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/**
 * The nearest-rank percentile of samples sorted ascending: the smallest sample such that at least
 * p % of the samples are less than or equal to it. Nearest-rank never invents a value that was not
 * measured, which matters for the small sample counts of the concurrency-1 runs.
 */
export function percentile(sortedAscending: ArrayLike<number>, p: number): number {
  if (sortedAscending.length === 0) throw new RangeError('percentile of an empty sample set');
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${p}`);
  const rank = Math.ceil((p / 100) * sortedAscending.length);
  return sortedAscending[Math.min(rank, sortedAscending.length) - 1];
}

/** Summarises samples (milliseconds); the input is not modified. */
export function summarize(samples: ArrayLike<number>): LatencySummary {
  if (samples.length === 0) throw new RangeError('cannot summarise an empty sample set');
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    min: sorted[0],
    mean: sum / sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1],
  };
}

/** Collects latency samples per operation name, in insertion order of the operations. */
export class LatencyRecorder {
  private readonly samples = new Map<string, number[]>();

  record(operation: string, milliseconds: number): void {
    let list = this.samples.get(operation);
    if (list === undefined) {
      list = [];
      this.samples.set(operation, list);
    }
    list.push(milliseconds);
  }

  /** Times fn and records its duration under operation, whether it succeeds or throws. */
  async time<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await fn();
    } finally {
      this.record(operation, performance.now() - start);
    }
  }

  operations(): string[] {
    return [...this.samples.keys()];
  }

  summaries(): Record<string, LatencySummary> {
    const out: Record<string, LatencySummary> = {};
    for (const [operation, list] of this.samples) out[operation] = summarize(list);
    return out;
  }
}

/** ours / floor, rounded to 2 decimals; null when the floor is 0 or missing (no meaningful ratio). */
export function ratio(ours: number, floor: number | undefined): number | null {
  if (floor === undefined || !Number.isFinite(floor) || floor <= 0 || !Number.isFinite(ours)) return null;
  return Math.round((ours / floor) * 100) / 100;
}
