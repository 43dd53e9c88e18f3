// Runs `cri-winsim node …` (or `cri-winsim kubelet --kubeconfig …`) as a child process for the
// node-mode suites: waits for its ready line, keeps its log lines, and stops it (SIGTERM, or
// SIGKILL to simulate a crash). Every child is tracked so a suite's after() can stop what is left.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { cliPath } from './paths.js';

/** The ready line of src/commands/node.ts (NODE_READY_MESSAGE). */
const READY = 'cri-winsim node ready';

export interface NodeProcess {
  readonly pid: number;
  /** Log lines so far (pino JSON). */
  readonly lines: string[];
  /** Whether any log line's msg contains text. */
  logged(text: string): boolean;
  /** SIGTERM and wait (SIGKILL after 15 s). */
  stop(): Promise<void>;
  /** SIGKILL and wait: a crash. */
  kill(): Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children = new Set<NodeProcess>();

/** Node processes started and not yet stopped. */
export function liveNodeProcesses(): NodeProcess[] {
  return [...children];
}

export async function startNodeProcess(args: readonly string[], opts: { readyTimeoutMs?: number; readyText?: string } = {}): Promise<NodeProcess> {
  const ready = opts.readyText ?? READY;
  const child: ChildProcess = spawn(process.execPath, [cliPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CRI_WINSIM_LOG_LEVEL: 'info' } });
  const lines: string[] = [];
  let onLine: ((line: string) => void) | undefined;
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      lines.push(line);
      if (lines.length > 2000) lines.shift();
      onLine?.(line);
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const handle: NodeProcess = {
    pid: child.pid!,
    lines,
    logged: (text) => lines.some((l) => l.includes(text)),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }
      children.delete(handle);
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      children.delete(handle);
    },
    exited,
  };
  children.add(handle);
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`cri-winsim ${args.join(' ')} was not ready within ${timeoutMs} ms:\n${lines.slice(-30).join('\n')}`)), timeoutMs);
      if (lines.some((l) => l.includes(ready))) {
        clearTimeout(timer);
        resolve();
        return;
      }
      onLine = (line) => {
        if (line.includes(ready)) {
          clearTimeout(timer);
          resolve();
        }
      };
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`cri-winsim ${args.join(' ')} exited (${code ?? signal}) before it was ready:\n${lines.slice(-30).join('\n')}`));
      });
    });
  } catch (err) {
    await handle.kill();
    throw err;
  } finally {
    onLine = undefined;
  }
  return handle;
}
