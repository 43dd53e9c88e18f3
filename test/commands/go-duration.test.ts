// time.ParseDuration and Duration.String as Go 1.26 (src/time/format.go) answers them: every
// row below was printed by a Go program calling the real functions; the TypeScript must agree.
import { expect } from 'chai';
import { durationMs, formatGoDuration, parseGoDuration } from '../../src/commands/go-duration.js';

/** [input, nanoseconds, String()] or [input, error text]. */
const parsed: readonly (readonly [string, bigint, string] | readonly [string, string])[] = [
  ["30s", 30000000000n, "30s"],
  ["2m0s", 120000000000n, "2m0s"],
  ["1h", 3600000000000n, "1h0m0s"],
  ["1h2m3.5s", 3723500000000n, "1h2m3.5s"],
  ["500ms", 500000000n, "500ms"],
  ["0", 0n, "0s"],
  ["-0", 0n, "0s"],
  ["+0", 0n, "0s"],
  ["", "time: invalid duration \"\""],
  ["x", "time: invalid duration \"x\""],
  ["1", "time: missing unit in duration \"1\""],
  ["30", "time: missing unit in duration \"30\""],
  ["1.5h", 5400000000000n, "1h30m0s"],
  [".5s", 500000000n, "500ms"],
  ["5.s", 5000000000n, "5s"],
  ["-1s", -1000000000n, "-1s"],
  ["+2m", 120000000000n, "2m0s"],
  ["1us", 1000n, "1µs"],
  ["1µs", 1000n, "1µs"],
  ["1μs", 1000n, "1µs"],
  ["1ns", 1n, "1ns"],
  ["1d", "time: unknown unit \"d\" in duration \"1d\""],
  ["1sm", "time: unknown unit \"sm\" in duration \"1sm\""],
  ["1h-2m", "time: unknown unit \"h-\" in duration \"1h-2m\""],
  ["s", "time: invalid duration \"s\""],
  [".s", "time: invalid duration \".s\""],
  ["-", "time: invalid duration \"-\""],
  ["1.", "time: missing unit in duration \"1.\""],
  ["9223372036854775807ns", 9223372036854775807n, "2562047h47m16.854775807s"],
  ["9223372036854775808ns", "time: invalid duration \"9223372036854775808ns\""],
  ["-9223372036854775808ns", -9223372036854775808n, "-2562047h47m16.854775808s"],
  ["2562047h47m16.854775807s", 9223372036854775807n, "2562047h47m16.854775807s"],
  ["2562048h", "time: invalid duration \"2562048h\""],
  ["0.000000001s", 1n, "1ns"],
  ["0.0000000001s", 0n, "0s"],
  ["1e3s", "time: unknown unit \"e\" in duration \"1e3s\""],
  [" 1s", "time: invalid duration \" 1s\""],
  ["1s ", "time: unknown unit \"s \" in duration \"1s \""],
  ["1S", "time: unknown unit \"S\" in duration \"1S\""],
  ["10000000000000000000s", "time: invalid duration \"10000000000000000000s\""],
  ["1h\u0001", "time: unknown unit \"h\\x01\" in duration \"1h\\x01\""],
  ["\"1\"", "time: invalid duration \"\\\"1\\\"\""],
  ["3.000000000000000000001s", 3000000000n, "3s"],
  ["1.0000000000000000001h", 3600000000000n, "1h0m0s"],
];

/** [nanoseconds, String()]. */
const formatted: readonly (readonly [bigint, string])[] = [
  [0n, "0s"],
  [1n, "1ns"],
  [1500n, "1.5µs"],
  [1500000n, "1.5ms"],
  [120000000000n, "2m0s"],
  [90000000000n, "1m30s"],
  [3723500000000n, "1h2m3.5s"],
  [-5000000000n, "-5s"],
  [9223372036854775807n, "2562047h47m16.854775807s"],
];

describe('Go durations (time.ParseDuration, Duration.String)', () => {
  for (const row of parsed) {
    if (row.length === 3) {
      const [input, ns, text] = row;
      it(`${JSON.stringify(input)} is ${text}`, () => {
        expect(parseGoDuration(input)).to.equal(ns);
        expect(formatGoDuration(ns)).to.equal(text);
      });
    } else {
      const [input, error] = row;
      it(`${JSON.stringify(input)} is refused: ${error}`, () => {
        expect(() => parseGoDuration(input)).to.throw(error);
        try {
          parseGoDuration(input);
        } catch (err) {
          expect((err as Error).message).to.equal(error);
        }
      });
    }
  }
  for (const [ns, text] of formatted) {
    it(`${ns} ns prints as ${text}`, () => expect(formatGoDuration(ns)).to.equal(text));
  }
  it('durationMs rounds up, so a nanosecond is not "no time"', () => {
    expect(durationMs(1n)).to.equal(1);
    expect(durationMs(2_000_000_000n)).to.equal(2000);
  });
});
