/**
 * Reads the JSON files `critest -benchmark --benchmarking-output-dir DIR` writes (cri-tools
 * pkg/benchmark: container_benchmark_data.json, pod_benchmark_data.json,
 * image_lifecycle_benchmark_data.json, image_listing_benchmark_data.json) and summarises them in
 * the same units as our own results (milliseconds, nearest-rank percentiles).
 */
import { summarize, type LatencySummary } from './stats.js';

/** One lifecycle sample as critest writes it; durations and times in nanoseconds. */
export interface CritestDatapoint {
  sampleIndex: number;
  startTime: number;
  endTime: number;
  operationsDurationsNs: number[];
  metaInfo?: Record<string, string> | null;
}

export interface CritestResultsSet {
  operationsNames: string[];
  numParallel: number;
  datapoints: CritestDatapoint[];
}

export interface CritestSummary {
  numParallel: number;
  samples: number;
  /** Per operation name, in critest's order. */
  operations: Record<string, LatencySummary>;
  /** Whole lifecycle (endTime - startTime). */
  lifecycle: LatencySummary | null;
}

const NS_PER_MS = 1e6;

/** Checks the shape of a parsed results file; throws naming the file and the field that is wrong. */
export function parseCritestResults(file: string, value: unknown): CritestResultsSet {
  const v = value as Partial<CritestResultsSet> | null;
  if (v === null || typeof v !== 'object') throw new Error(`${file}: not a JSON object`);
  if (!Array.isArray(v.operationsNames) || !v.operationsNames.every((n) => typeof n === 'string')) {
    throw new Error(`${file}: operationsNames must be an array of strings`);
  }
  if (!Array.isArray(v.datapoints)) throw new Error(`${file}: datapoints must be an array`);
  v.datapoints.forEach((d, i) => {
    if (!Array.isArray(d?.operationsDurationsNs) || !d.operationsDurationsNs.every((n) => typeof n === 'number')) {
      throw new Error(`${file}: datapoints[${i}].operationsDurationsNs must be an array of numbers`);
    }
  });
  return { operationsNames: v.operationsNames, numParallel: typeof v.numParallel === 'number' ? v.numParallel : 1, datapoints: v.datapoints };
}

export function summarizeCritestResults(set: CritestResultsSet): CritestSummary {
  const operations: Record<string, LatencySummary> = {};
  set.operationsNames.forEach((name, index) => {
    const samples = set.datapoints
      .map((d) => d.operationsDurationsNs[index])
      .filter((n): n is number => typeof n === 'number')
      .map((ns) => ns / NS_PER_MS);
    if (samples.length > 0) operations[name] = summarize(samples);
  });
  const whole = set.datapoints
    .filter((d) => typeof d.startTime === 'number' && typeof d.endTime === 'number' && d.endTime >= d.startTime)
    .map((d) => (d.endTime - d.startTime) / NS_PER_MS);
  return {
    numParallel: set.numParallel,
    samples: set.datapoints.length,
    operations,
    lifecycle: whole.length > 0 ? summarize(whole) : null,
  };
}

const GO_DURATION_UNITS_MS: Record<string, number> = { ns: 1e-6, 'µs': 1e-3, us: 1e-3, ms: 1, s: 1000, m: 60000 };

/** A Go duration string ("5ms", "1.5s", "1m2.5s", "0s") in milliseconds; null when it is not one. */
export function parseGoDurationMs(text: string): number | null {
  if (text === '0' || text === '0s') return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|µs|us|ms|s|m)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return null;
  return parts.reduce((ms, p) => ms + Number(p[1]) * GO_DURATION_UNITS_MS[p[2]], 0);
}

/**
 * The "start a container from scratch" measurement from critest's output (a gmeasure table row
 * `create PodSandbox and container [duration] | N | min | median | mean | stddev | max`); critest
 * fails the spec at 5 s. Returns the median in ms, or null when the row is absent.
 */
export function startFromScratchMedianMs(critestOutput: string): number | null {
  const row = /create PodSandbox and container \[duration\]\s*\|([^\n]*)/.exec(critestOutput);
  if (!row) return null;
  const cells = row[1].split('|').map((c) => c.trim());
  // cells: N, min, median, mean, stddev, max
  return cells.length >= 3 ? parseGoDurationMs(cells[2]) : null;
}
