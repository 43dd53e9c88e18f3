/**
 * Wall-clock time in nanoseconds since the Unix epoch, as the CRI reports every timestamp
 * (created_at, started_at, finished_at, stats timestamps). Anchored once to Date.now() and
 * advanced with the monotonic high-resolution timer, so successive readings never go backwards
 * and differ at nanosecond resolution.
 */
export interface Clock {
  nowNanos(): bigint;
}

class MonotonicWallClock implements Clock {
  private readonly baseWall = BigInt(Date.now()) * 1_000_000n;
  private readonly baseHr = process.hrtime.bigint();

  nowNanos(): bigint {
    return this.baseWall + (process.hrtime.bigint() - this.baseHr);
  }
}

export const systemClock: Clock = new MonotonicWallClock();

/** int64 fields travel as decimal strings (proto-loader `longs: String`). */
export const nanosToWire = (nanos: bigint): string => nanos.toString();

/**
 * Go's time.RFC3339Nano in UTC: fractional seconds with trailing zeros removed
 * (`2024-05-01T10:00:00.1234Z`, `2024-05-01T10:00:00Z`). The CRI log format uses it.
 */
export function formatRfc3339Nano(nanos: bigint): string {
  const seconds = nanos / 1_000_000_000n;
  const fraction = nanos % 1_000_000_000n;
  const base = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  if (fraction === 0n) return `${base}Z`;
  const digits = fraction.toString().padStart(9, '0').replace(/0+$/, '');
  return `${base}.${digits}Z`;
}
