/**
 * Go's `time.ParseDuration` and `Duration.String`, which the kubelet's and kubectl's duration
 * flags use (`30s`, `2m0s`, `1h2m3.5s`, `500ms`). Follows src/time/format.go (Go 1.26) rule for
 * rule, error texts included: `time: invalid duration "x"`, `time: missing unit in duration "1"`,
 * `time: unknown unit "d" in duration "1d"`. Values are nanoseconds as a bigint, since int64
 * nanoseconds do not fit a double; `durationMs` gives the milliseconds timers take.
 */

const NANOSECOND = 1n;
const unitNanoseconds: Readonly<Record<string, bigint>> = {
  ns: NANOSECOND,
  us: 1000n,
  'µs': 1000n, // U+00B5 micro sign
  'μs': 1000n, // U+03BC Greek small letter mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const LIMIT = 1n << 63n;

/** Go's time.quote: ASCII printable as is (`"` and `\` escaped), every other byte as \xNN. */
function quote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (code >= 0x80 || code < 0x20) {
      for (const byte of Buffer.from(ch, 'utf8')) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    } else {
      out += ch === '"' || ch === '\\' ? `\\${ch}` : ch;
    }
  }
  return `${out}"`;
}

export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/** time.ParseDuration: a possibly signed sequence of decimal numbers, each with a unit. */
export function parseGoDuration(input: string): bigint {
  const invalid = (): DurationError => new DurationError(`time: invalid duration ${quote(input)}`);
  let s = input;
  let negative = false;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') throw invalid();
  let total = 0n;
  while (s !== '') {
    if (!(s[0] === '.' || isDigit(s[0]))) throw invalid();
    // [0-9]*
    let i = 0;
    let whole = 0n;
    while (isDigit(s[i])) {
      if (whole > LIMIT / 10n) throw invalid(); // leadingInt overflow
      whole = whole * 10n + BigInt(s.charCodeAt(i) - 48);
      if (whole > LIMIT) throw invalid();
      i++;
    }
    const before = i > 0;
    s = s.slice(i);
    // (\.[0-9]*)?
    let fraction = 0n;
    let scale = 1;
    let after = false;
    if (s[0] === '.') {
      s = s.slice(1);
      let j = 0;
      let overflow = false;
      while (isDigit(s[j])) {
        // leadingFraction: digits past what int64 holds are consumed and ignored.
        if (!overflow) {
          if (fraction > (LIMIT - 1n) / 10n) overflow = true;
          else {
            const next = fraction * 10n + BigInt(s.charCodeAt(j) - 48);
            if (next > LIMIT) overflow = true;
            else {
              fraction = next;
              scale *= 10;
            }
          }
        }
        j++;
      }
      after = j > 0;
      s = s.slice(j);
    }
    if (!before && !after) throw invalid(); // no digits, e.g. ".s"
    // unit: up to the next digit or '.'
    let k = 0;
    while (k < s.length && !(s[k] === '.' || isDigit(s[k]))) k++;
    if (k === 0) throw new DurationError(`time: missing unit in duration ${quote(input)}`);
    const unitName = s.slice(0, k);
    s = s.slice(k);
    const unit = unitNanoseconds[unitName];
    if (unit === undefined) throw new DurationError(`time: unknown unit ${quote(unitName)} in duration ${quote(input)}`);
    if (whole > LIMIT / unit) throw invalid();
    let value = whole * unit;
    if (fraction > 0n) {
      // Go computes this part in float64: uint64(float64(f) * (float64(unit) / scale)).
      value += BigInt(Math.trunc(Number(fraction) * (Number(unit) / scale)));
      if (value > LIMIT) throw invalid();
    }
    total += value;
    if (total > LIMIT) throw invalid();
  }
  if (negative) return -total;
  if (total > LIMIT - 1n) throw invalid();
  return total;
}

/** Duration.String: `2m0s`, `1h2m3.5s`, `500ms`, `1µs`, `0s`. */
export function formatGoDuration(nanoseconds: bigint): string {
  const negative = nanoseconds < 0n;
  let u = negative ? -nanoseconds : nanoseconds;
  if (u < 1_000_000_000n) {
    if (u === 0n) return '0s';
    // Below one second: one unit, with a fraction.
    const [unit, size] = u < 1000n ? ['ns', 1n] : u < 1_000_000n ? ['µs', 1000n] : ['ms', 1_000_000n];
    return `${negative ? '-' : ''}${fractionText(u, size)}${unit}`;
  }
  const seconds = fractionText(u % 60_000_000_000n, 1_000_000_000n);
  u /= 60_000_000_000n; // whole minutes
  let out = `${seconds}s`;
  if (u > 0n) {
    out = `${u % 60n}m${out}`;
    u /= 60n;
    if (u > 0n) out = `${u}h${out}`;
  }
  return `${negative ? '-' : ''}${out}`;
}

/** value/size in decimal, without trailing zeros in the fraction. */
function fractionText(value: bigint, size: bigint): string {
  const whole = value / size;
  const rest = value % size;
  if (rest === 0n) return String(whole);
  const digits = String(size).length - 1;
  return `${whole}.${String(rest).padStart(digits, '0').replace(/0+$/, '')}`;
}

/** Milliseconds (rounded up, so a 1ns timeout is not "no timeout") for timers and deadlines. */
export function durationMs(nanoseconds: bigint): number {
  return Number((nanoseconds + 999_999n) / 1_000_000n);
}
