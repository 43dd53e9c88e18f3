/**
 * What node-scale.ts and node-soak.ts read of a process from /proc, and their shared log line and
 * percentile.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

export const log = (text: string): void => {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)} load ${loadavg()[0]!.toFixed(1)}] ${text}\n`);
};

/** VmRSS of a process in bytes (0 once it is gone). */
export function rssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return kb === null ? 0 : Number(kb[1]) * 1024;
  } catch {
    return 0;
  }
}

/** User+system CPU seconds of a process so far. */
export function cpuSecondsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Open file descriptors of a process (0 once it is gone). */
export function fdCountOf(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

export const percentile = (sorted: readonly number[], p: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);
