// Runs `cri-winsim kubelet …` (the compiled CLI) as a user would, bounded in time, and the
// long-running `kubelet --pod-manifest-path` loop with a stop that waits for its exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { cliPath } from '../../support/paths.js';
import { runProcess } from '../../support/process.js';

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runKubelet(args: readonly string[], options: { killAfterMs?: number; cwd?: string } = {}): Promise<CliResult> {
  const { code, stdout, stderr } = await runProcess(process.execPath, [cliPath, 'kubelet', ...args], {
    killAfterMs: options.killAfterMs ?? 45_000,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  return { code, stdout, stderr };
}

export interface SyncLoopHandle {
  readonly child: ChildProcess;
  /** stderr lines so far (pino JSON). */
  readonly lines: string[];
  stdout(): string;
  /** SIGTERM, then the exit code (SIGKILL after the timeout, reported as null). */
  stop(timeoutMs?: number): Promise<number | null>;
}

/** Starts the sync loop and resolves once it logged that it watches the directory. */
export async function startSyncLoop(args: readonly string[], readyText: string, readyTimeoutMs = 15_000): Promise<SyncLoopHandle> {
  const child = spawn(process.execPath, [cliPath, 'kubelet', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let ready: () => void = () => {};
  const readyPromise = new Promise<void>((resolve) => (ready = resolve));
  createInterface({ input: child.stderr!, crlfDelay: Infinity }).on('line', (line) => {
    lines.push(line);
    if (line.includes(readyText)) ready();
  });
  const handle: SyncLoopHandle = {
    child,
    lines,
    stdout: () => out,
    async stop(timeoutMs = 10_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    readyPromise.then(() => 'ready' as const),
    exited.then(() => 'exited' as const),
    new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), readyTimeoutMs))),
  ]);
  clearTimeout(timer);
  if (outcome !== 'ready') {
    await handle.stop();
    throw new Error(`the sync loop did not get ready (${outcome}):\n${lines.join('\n')}`);
  }
  return handle;
}

/** Polls `check` until it returns a value (not undefined), at most `timeoutMs`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : `: ${(last as Error).message}`}`);
}
