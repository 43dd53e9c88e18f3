/**
 * The machine's own cost of what StartContainer and CreateContainer do to the disk: creating a
 * file (open with O_CREAT, then close) in the directory the runtime writes to, with the
 * synchronous calls a lone runtime call makes (src/tuning/file-calls.ts). On a disk where creating
 * an inode takes half a millisecond, that is a floor under StartContainer that no runtime can go
 * below; the report shows it beside the RPC figures.
 *
 * The probe's files stay (in their own directory, under `dir`) until the caller removes `dir` at
 * the end of its run: on ext4 without a journal every freed inode makes later creates slower for
 * several minutes (see src/tuning/recycled-files.ts), so deleting them here would slow down the
 * runs the probe is meant to describe.
 */
import { closeSync, mkdtempSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { summarize, type LatencySummary } from './stats.js';
import { setTimeout as delay } from 'node:timers/promises';

export function measureFileCreates(dir: string, samples: number): LatencySummary {
  const probeDir = mkdtempSync(join(dir, 'disk-probe-'));
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const path = join(probeDir, `create-probe-${i}.log`);
    const startedAt = performance.now();
    closeSync(openSync(path, 'a', 0o640));
    times.push(performance.now() - startedAt);
  }
  return summarize(times);
}

/**
 * A probe's p90 create time at or below which the file system counts as quiet. On the 2-core
 * development machine a create took 0.02-0.03 ms (p50; p90 up to about 0.06) on a quiet ext4 and
 * 0.07-0.35 ms in the minutes after a removal of tens of thousands of files. Right after such a
 * removal the first hundred or two creates were still fast (a probe of 100 creates read p50
 * 0.019 ms, the 300 after it 0.25): hence the p90 of 200 creates, twice in a row.
 */
export const QUIET_CREATE_P90_MS = 0.08;
/** Creates per probe. */
export const SETTLE_PROBE_CREATES = 200;
/** Consecutive quiet probes, one interval apart, that make the file system settled. */
export const QUIET_PROBES_NEEDED = 2;

export interface DiskSettling {
  /** Whether the last QUIET_PROBES_NEEDED probes were quiet. */
  settled: boolean;
  waitedMs: number;
  /** Each probe's create p90 in ms, the first before any wait. */
  probesP90Ms: number[];
}

export interface SettleOptions {
  /** Longest wait; 0 probes once and does not wait. */
  maxWaitMs: number;
  intervalMs: number;
  quietP90Ms?: number;
  quietProbesNeeded?: number;
  samplesPerProbe?: number;
  /** Told of each probe that finds the disk busy, and of the wait's end. */
  log?: (line: string) => void;
  /** For tests: the probe (default: measureFileCreates in `dir`) and the pause between probes. */
  probe?: () => LatencySummary;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/**
 * Waits, within a bound, until creating a file is as fast as on a quiet file system, two probes
 * in a row an interval apart (with no wait allowed: one probe, no wait). After a run of `npm test`
 * or of the bench itself removed tens of thousands of files, ext4 without a journal takes several
 * minutes to come back (bench/README.md, "The disk"), and a lifecycle run in that time measures
 * the file system's recovery in StartContainer and CreateContainer rather than the runtime. The
 * bench reports what it waited and what each probe found.
 */
export async function waitForQuietDisk(dir: string, options: SettleOptions): Promise<DiskSettling> {
  const quiet = options.quietP90Ms ?? QUIET_CREATE_P90_MS;
  const needed = options.maxWaitMs > 0 ? (options.quietProbesNeeded ?? QUIET_PROBES_NEEDED) : 1;
  const probe = options.probe ?? (() => measureFileCreates(dir, options.samplesPerProbe ?? SETTLE_PROBE_CREATES));
  const sleep = options.sleep ?? ((ms: number) => delay(ms));
  const now = options.now ?? (() => performance.now());
  const startedAt = now();
  const probesP90Ms: number[] = [];
  let quietInARow = 0;
  for (;;) {
    const p90 = probe().p90;
    probesP90Ms.push(round3(p90));
    quietInARow = p90 <= quiet ? quietInARow + 1 : 0;
    const waitedMs = now() - startedAt;
    const busy = probesP90Ms.some((p) => p > quiet);
    if (quietInARow >= needed) {
      if (busy) options.log?.(`disk: settled after ${(waitedMs / 1000).toFixed(0)} s (create p90 ${p90.toFixed(3)} ms)`);
      return { settled: true, waitedMs: Math.round(waitedMs), probesP90Ms };
    }
    if (waitedMs + options.intervalMs > options.maxWaitMs) {
      if (options.maxWaitMs > 0) options.log?.(`disk: still busy after ${(waitedMs / 1000).toFixed(0)} s (create p90 ${p90.toFixed(3)} ms); going on`);
      return { settled: false, waitedMs: Math.round(waitedMs), probesP90Ms };
    }
    if (quietInARow === 0) {
      options.log?.(`disk: creating a file takes p90 ${p90.toFixed(3)} ms (quiet: <= ${quiet} ms); the file system is likely recovering from removals, waiting`);
    }
    await sleep(options.intervalMs);
  }
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}
