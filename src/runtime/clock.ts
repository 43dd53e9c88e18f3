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

/** The last second formatted and the last timestamp: a container's output of one moment is
 * several records with one timestamp, and records of one second share the date and time. */
let lastSecond = -1n;
let lastBase = '';
let lastNanos = -1n;
let lastText = '';

/**
 * Go's time.RFC3339Nano in UTC: fractional seconds with trailing zeros removed
 * (`2024-05-01T10:00:00.1234Z`, `2024-05-01T10:00:00Z`). The CRI log format uses it, once per
 * record, so the date part is formatted once per second and a repeated timestamp not at all.
 */
export function formatRfc3339Nano(nanos: bigint): string {
  if (nanos === lastNanos) return lastText;
  const seconds = nanos / 1_000_000_000n;
  if (seconds !== lastSecond) {
    lastSecond = seconds;
    lastBase = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  }
  const fraction = Number(nanos - seconds * 1_000_000_000n);
  let text: string;
  if (fraction === 0) {
    text = `${lastBase}Z`;
  } else {
    const digits = String(fraction).padStart(9, '0');
    let end = digits.length;
    while (digits.charCodeAt(end - 1) === 48 /* '0' */) end--;
    text = `${lastBase}.${digits.slice(0, end)}Z`;
  }
  lastNanos = nanos;
  lastText = text;
  return text;
}
