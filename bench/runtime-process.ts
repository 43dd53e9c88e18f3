/** Starts the runtime as a child process, as a user would, and watches its readiness and memory. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { unixEndpoint } from '../src/cri/endpoint.js';
import { NODE_FLAGS } from '../src/tuning/node-flags.js';

/** The line the runtime logs once its socket accepts calls. */
export const READY_TEXT = 'cri-winsim runtime listening';

export interface RuntimeProcessOptions {
  /** Path of the built CLI (dist/src/cli.js). */
  cliPath: string;
  socketPath: string;
  stateDir: string;
  /** Extra arguments after `runtime` (e.g. ['--node', file]). */
  runtimeArgs?: string[];
  /** Arguments for node itself (e.g. ['--cpu-prof', '--cpu-prof-dir', dir]). */
  nodeArgs?: string[];
  /** Environment additions (e.g. CRI_WINSIM_LOG_LEVEL). */
  env?: Record<string, string>;
  readyTimeoutMs?: number;
  /**
   * Also count the runtime ready once its socket accepts a connection (polled every 25 ms). For
   * log levels above info, where the ready line is not printed.
   */
  probeSocket?: boolean;
}

export interface RuntimeProcess {
  readonly pid: number;
  readonly endpoint: string;
  /** Milliseconds from spawn to the ready line. */
  readonly startupMs: number;
  /** Resident set size of the runtime process in KiB (VmRSS of /proc/<pid>/status). */
  rssKiB(): Promise<number>;
  /** The metrics URL the runtime logged ("serving metrics"), when it was started with --metrics-addr. */
  metricsUrl(): string | undefined;
  /** The last lines the runtime wrote, for error reports. */
  recentOutput(): string;
  /** SIGTERM, then SIGKILL after graceMs; resolves once the process has exited. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const KEPT_LINES = 40;
const METRICS_URL = /"url":"(http:\/\/[^"]+\/metrics)"/;

/** VmRSS in KiB from the text of /proc/<pid>/status. */
export function parseVmRssKiB(statusText: string): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(statusText);
  if (!match) throw new Error('no VmRSS line in /proc/<pid>/status');
  return Number(match[1]);
}

export async function readRssKiB(pid: number): Promise<number> {
  return parseVmRssKiB(await readFile(`/proc/${pid}/status`, 'utf8'));
}

/** CPU time (user + system, ms) of a process's main thread and of all its other threads together. */
export interface ThreadCpu {
  mainMs: number;
  otherMs: number;
}

/**
 * The user + system CPU ticks of one /proc/<pid>/task/<tid>/stat text (fields 14 and 15, counted
 * after the command name, which may itself hold spaces and parentheses).
 */
export function parseStatTicks(statText: string): number {
  const end = statText.lastIndexOf(')');
  if (end < 0) throw new Error('no command name in a /proc stat line');
  const fields = statText.slice(end + 2).trim().split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('no utime/stime in a /proc stat line');
  return utime + stime;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ): 100 on Linux. */
const USER_HZ = 100;

/**
 * The CPU time of a process's threads from /proc/<pid>/task: its main thread (the event loop) and
 * the rest together (V8's compiler and garbage collector helpers, the libuv pool). Resolution
 * 10 ms. A thread that ends between the listing and its read is left out.
 */
export async function readThreadCpu(pid: number): Promise<ThreadCpu> {
  const tids = await readdir(`/proc/${pid}/task`);
  let main = 0;
  let other = 0;
  await Promise.all(
    tids.map(async (tid) => {
      let text: string;
      try {
        text = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      } catch {
        return;
      }
      const ticks = parseStatTicks(text);
      if (tid === String(pid)) main += ticks;
      else other += ticks;
    }),
  );
  return { mainMs: (main * 1000) / USER_HZ, otherMs: (other * 1000) / USER_HZ };
}

export async function startRuntime(options: RuntimeProcessOptions): Promise<RuntimeProcess> {
  const args = [
    // As the `cri-winsim` command starts (its #! line), then the caller's own (profiling).
    ...NODE_FLAGS,
    ...(options.nodeArgs ?? []),
    options.cliPath,
    'runtime',
    '--listen',
    unixEndpoint(options.socketPath),
    '--state-dir',
    options.stateDir,
    ...(options.runtimeArgs ?? []),
  ];
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  if (child.pid === undefined) throw new Error(`could not spawn the runtime: ${process.execPath} ${args.join(' ')}`);
  const pid = child.pid;

  const lines: string[] = [];
  let metricsUrl: string | undefined;
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exitPromise = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve(exited);
    });
  });

  let readyResolve: (ms: number) => void = () => {};
  const ready = new Promise<number>((resolve) => {
    readyResolve = resolve;
  });
  // Both streams are drained for the whole life of the child: a full pipe would stall the runtime.
  const watch = (stream: NodeJS.ReadableStream | null): void => {
    if (stream === null) return;
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        if (line.includes(READY_TEXT)) readyResolve(performance.now() - started);
        if (metricsUrl === undefined) metricsUrl = METRICS_URL.exec(line)?.[1];
        lines.push(line);
        if (lines.length > KEPT_LINES) lines.shift();
      }
    });
  };
  watch(child.stdout);
  watch(child.stderr);

  let probing = options.probeSocket === true;
  if (probing) {
    const poll = (): void => {
      if (!probing) return;
      const socket = createConnection({ path: options.socketPath });
      socket.once('connect', () => {
        socket.destroy();
        readyResolve(performance.now() - started);
      });
      socket.once('error', () => {
        socket.destroy();
        if (probing) setTimeout(poll, 25);
      });
    };
    poll();
  }

  const timeoutMs = options.readyTimeoutMs ?? 15000;
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    ready.then((ms) => ({ kind: 'ready' as const, ms })),
    exitPromise.then((e) => ({ kind: 'exited' as const, e })),
    new Promise<{ kind: 'timeout' }>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  probing = false;

  const stop = async (graceMs = 10000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> => {
    if (exited) return exited;
    child.kill('SIGTERM');
    const killTimer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    const result = await exitPromise;
    clearTimeout(killTimer);
    return result;
  };

  if (outcome.kind !== 'ready') {
    await stop(2000);
    const why = outcome.kind === 'exited' ? `exited (code ${outcome.e.code}, signal ${outcome.e.signal})` : `did not log "${READY_TEXT}" within ${timeoutMs} ms`;
    throw new Error(`runtime ${why}; command: node ${args.join(' ')}\n${lines.join('\n')}`);
  }

  return {
    pid,
    endpoint: unixEndpoint(options.socketPath),
    startupMs: outcome.ms,
    rssKiB: () => readRssKiB(pid),
    metricsUrl: () => metricsUrl,
    recentOutput: () => lines.join('\n'),
    stop,
  };
}
