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
 * (`2024-05-01T10:00:00.1234Z`, `2024-05-01T10:00:00Z`). The CRI log format uses it, once per
 * record, so the date part is formatted once per second and a repeated timestamp not at all:
 * a container's output of one moment is several records with one timestamp, and records of one
 * second share the date and time. One formatter per runtime (its log files own it).
 */
export class Rfc3339NanoFormatter {
  private lastSecond = -1n;
  private lastBase = '';
  private lastNanos = -1n;
  private lastText = '';

  format(nanos: bigint): string {
    if (nanos === this.lastNanos) return this.lastText;
    const seconds = nanos / 1_000_000_000n;
    if (seconds !== this.lastSecond) {
      this.lastSecond = seconds;
      this.lastBase = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
    }
    const fraction = Number(nanos - seconds * 1_000_000_000n);
    let text: string;
    if (fraction === 0) {
      text = `${this.lastBase}Z`;
    } else {
      const digits = String(fraction).padStart(9, '0');
      let end = digits.length;
      while (digits.charCodeAt(end - 1) === 48 /* '0' */) end--;
      text = `${this.lastBase}.${digits.slice(0, end)}Z`;
    }
    this.lastNanos = nanos;
    this.lastText = text;
    return text;
  }
}

/** One timestamp as Go's time.RFC3339Nano in UTC (see Rfc3339NanoFormatter, which keeps the last). */
export function formatRfc3339Nano(nanos: bigint): string {
  return new Rfc3339NanoFormatter().format(nanos);
}
