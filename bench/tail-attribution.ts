/**
 * Why a slow call was slow: each client call over a threshold is put down to the first cause that
 * fits, in this order — a garbage collection pause in the server overlapped it, one in the client
 * did, the server's handler took most of it, or none of these (the socket, HTTP/2, and the
 * scheduling of two busy processes on the machine's cores). All times are absolute milliseconds
 * (performance.timeOrigin + performance.now()), so the two processes' timelines line up.
 */
import { PerformanceObserver } from 'node:perf_hooks';

export interface TimedSpan {
  start: number;
  end: number;
}

export interface CallSpan extends TimedSpan {
  operation: string;
}

export interface GcPause {
  start: number;
  duration: number;
}

export const TAIL_CAUSES = ['serverGc', 'clientGc', 'handler', 'other'] as const;
export type TailCause = (typeof TAIL_CAUSES)[number];
export type TailCounts = Record<TailCause, number>;

export interface TailAttribution {
  thresholdMs: number;
  /** Calls over the threshold, all operations. */
  total: number;
  byCause: TailCounts;
  perOperation: Record<string, { over: number } & TailCounts>;
}

export interface GcSummary {
  count: number;
  totalMs: number;
  maxMs: number;
}

const noCounts = (): TailCounts => ({ serverGc: 0, clientGc: 0, handler: 0, other: 0 });

function overlaps(call: TimedSpan, pauses: readonly GcPause[]): boolean {
  return pauses.some((p) => p.start < call.end && p.start + p.duration > call.start);
}

/** The cause of one call's time, in the order of precedence above. */
export function tailCause(call: TimedSpan, handler: TimedSpan | undefined, serverGc: readonly GcPause[], clientGc: readonly GcPause[]): TailCause {
  if (overlaps(call, serverGc)) return 'serverGc';
  if (overlaps(call, clientGc)) return 'clientGc';
  if (handler !== undefined && handler.end - handler.start > (call.end - call.start) / 2) return 'handler';
  return 'other';
}

/**
 * Attributes every call slower than thresholdMs. `handlers` holds the server's handler spans per
 * operation in call order (concurrency 1: the n-th call of an operation ran the n-th handler);
 * empty for a server that does not report them (the floor).
 */
export function attributeTail(
  calls: readonly CallSpan[],
  handlers: ReadonlyMap<string, readonly TimedSpan[]>,
  serverGc: readonly GcPause[],
  clientGc: readonly GcPause[],
  thresholdMs: number,
): TailAttribution {
  const seen = new Map<string, number>();
  const result: TailAttribution = { thresholdMs, total: 0, byCause: noCounts(), perOperation: {} };
  for (const call of calls) {
    const index = seen.get(call.operation) ?? 0;
    seen.set(call.operation, index + 1);
    if (call.end - call.start <= thresholdMs) continue;
    const cause = tailCause(call, handlers.get(call.operation)?.[index], serverGc, clientGc);
    const op = (result.perOperation[call.operation] ??= { over: 0, ...noCounts() });
    op.over++;
    op[cause]++;
    result.total++;
    result.byCause[cause]++;
  }
  return result;
}

export function summarizeGc(pauses: readonly GcPause[]): GcSummary {
  let totalMs = 0;
  let maxMs = 0;
  for (const p of pauses) {
    totalMs += p.duration;
    maxMs = Math.max(maxMs, p.duration);
  }
  return { count: pauses.length, totalMs: Math.round(totalMs * 100) / 100, maxMs: Math.round(maxMs * 100) / 100 };
}

/** Absolute milliseconds, comparable between processes on one machine. */
export function absoluteNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Keeps this process's garbage collection pauses from now on, until stop(). */
export function recordGcPauses(): { readonly pauses: GcPause[]; stop(): void } {
  const pauses: GcPause[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) pauses.push({ start: performance.timeOrigin + entry.startTime, duration: entry.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  return { pauses, stop: () => observer.disconnect() };
}
