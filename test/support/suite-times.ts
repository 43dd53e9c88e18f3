// An opt-in report of where the suite's time goes: `SUITE_TIMES=1 npm test` (or any mocha run
// with hooks.js) prints the slowest files, and the slowest top-level suites in them, when the run
// ends. Each process (the one mocha process, or each parallel worker) charges the time from one
// test's end to the next test's end to the second test's file and suite, so a file's figure holds
// its before/beforeEach hooks and its tests (the previous file's after hooks too, in a serial
// run). Workers append their figures to a file named after the mocha process; the main process
// prints and removes it (mochaGlobalTeardown runs there once, in serial and in parallel runs).
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { repoRoot } from './paths.js';

export const SUITE_TIMES_ENV = 'SUITE_TIMES';

interface Figure {
  file: string;
  suite: string;
  seconds: number;
  tests: number;
}

const enabled = (): boolean => (process.env[SUITE_TIMES_ENV] ?? '') !== '' && process.env[SUITE_TIMES_ENV] !== '0';

/** The figures file of this mocha run: named after the main process (a parallel worker's parent). */
function figuresFile(): string {
  const main = process.env['MOCHA_WORKER_ID'] === undefined ? process.pid : process.ppid;
  return join(tmpdir(), `cri-winsim-suite-times-${main}.jsonl`);
}

const figures = new Map<string, Figure>();
let mark = 0;

export function timesRunStarted(): void {
  if (enabled()) mark = performance.now();
}

export function timesTestEnded(test: Mocha.Test | undefined): void {
  if (!enabled() || test === undefined) return;
  const now = performance.now();
  const file = test.file === undefined ? '(unknown file)' : relative(repoRoot, test.file).replace(/^dist\//, '').replace(/\.js$/, '.ts');
  const suite = test.titlePath()[0] ?? '';
  const key = `${file}\u0000${suite}`;
  const figure = figures.get(key) ?? { file, suite, seconds: 0, tests: 0 };
  figure.seconds += (now - mark) / 1000;
  figure.tests += 1;
  figures.set(key, figure);
  mark = now;
}

/** At the end of a root suite (the run, or one file in a parallel worker): hand the figures over. */
export function timesRunEnded(): void {
  if (!enabled() || figures.size === 0) return;
  appendFileSync(figuresFile(), [...figures.values()].map((f) => JSON.stringify(f) + '\n').join(''));
  figures.clear();
}

/** In the main process once the run is over: the report. */
export function printTimes(wallSeconds: number, slowest = 25): void {
  if (!enabled()) return;
  const path = figuresFile();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return;
  } finally {
    rmSync(path, { force: true });
  }
  const all = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Figure);
  const byFile = new Map<string, { seconds: number; tests: number; suites: Figure[] }>();
  for (const f of all) {
    const entry = byFile.get(f.file) ?? { seconds: 0, tests: 0, suites: [] };
    entry.seconds += f.seconds;
    entry.tests += f.tests;
    entry.suites.push(f);
    byFile.set(f.file, entry);
  }
  const total = all.reduce((sum, f) => sum + f.seconds, 0);
  const lines = [`\n  suite times (${SUITE_TIMES_ENV}): ${byFile.size} files, ${total.toFixed(0)} s of test time in ${wallSeconds.toFixed(0)} s of wall time; the slowest files:`];
  for (const [file, entry] of [...byFile].sort((a, b) => b[1].seconds - a[1].seconds).slice(0, slowest)) {
    lines.push(`  ${entry.seconds.toFixed(1).padStart(7)} s  ${String(entry.tests).padStart(4)} tests  ${file}`);
    for (const s of entry.suites.sort((a, b) => b.seconds - a.seconds).slice(0, 3)) {
      if (entry.suites.length > 1) lines.push(`  ${s.seconds.toFixed(1).padStart(17)} s  ${s.suite}`);
    }
  }
  process.stdout.write(lines.join('\n') + '\n');
}
