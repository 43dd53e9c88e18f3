// Starts `cri-winsim runtime` as a child process on a socket in a fresh temporary directory,
// and stops it again leaving nothing behind. Every runtime started here is tracked, so the root
// hook (hooks.ts) can fail the run when a suite forgets to stop one.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { NODE_FLAGS } from '../../src/tuning/node-flags.js';
import { cliPath } from './paths.js';
import { testPodCidr } from './pod-cidr.js';

/** The line the runtime logs once its socket accepts connections. */
export const READY_TEXT = 'cri-winsim runtime listening';

export interface StartRuntimeOptions {
  /** Extra arguments after `runtime --listen … --state-dir …` (e.g. `['--node', file]`). */
  args?: string[];
  /** How long to wait for the ready line (default 30 s: parallel workers share the cores). */
  readyTimeoutMs?: number;
  /** How long stop() waits after SIGTERM before it uses SIGKILL (default 5 s). */
  stopTimeoutMs?: number;
  /** Extra environment for the child. */
  env?: NodeJS.ProcessEnv;
  /** A label for messages (defaults to the temp dir's name). */
  name?: string;
  /**
   * The program and arguments that replace `node <NODE_FLAGS> dist/src/cli.js` (how the
   * `cri-winsim` command starts; the harness's own tests use a stand-in); `runtime --listen …
   * --state-dir …` and `args` are still appended.
   */
  command?: string[];
  /**
   * A directory to use instead of a fresh temporary one (a restart on the same state dir); the
   * caller owns it: stop() leaves it in place.
   */
  dir?: string;
}

export interface RuntimeExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when SIGTERM was not enough and SIGKILL had to be used. */
  killed: boolean;
  /** True when the socket file still existed after the process had exited. */
  socketLeft: boolean;
}

export interface RuntimeHandle {
  readonly name: string;
  /** `unix://<dir>/cri.sock` — what crictl's `-r` and critest's `-runtime-endpoint` take. */
  readonly endpoint: string;
  readonly socketPath: string;
  readonly stateDir: string;
  /** The temporary directory that holds socket, state and anything a test puts there. */
  readonly dir: string;
  readonly pid: number;
  /** The runtime's output so far (stdout and stderr, last lines only). */
  output(): string;
  /** Whether the process is still running. */
  running(): boolean;
  /** SIGTERM, await exit (SIGKILL after the stop timeout), then remove the temp dir. Idempotent. */
  stop(): Promise<RuntimeExit>;
  /** SIGKILL (a crash), await exit; the directory stays (restart on it with `dir`). */
  kill(): Promise<RuntimeExit>;
}

const OUTPUT_LINES_KEPT = 400;
const live = new Set<RuntimeHandle>();

/** Runtimes started and not yet stopped (the root hook checks this is empty). */
export function liveRuntimes(): RuntimeHandle[] {
  return [...live];
}

/** How often a runtime is started again on another random pod range when a live runtime's overlaps it. */
const RANGE_ATTEMPTS = 5;

export async function startRuntime(opts: StartRuntimeOptions = {}): Promise<RuntimeHandle> {
  // A pod range of its own (unless the test names one, or runs a stand-in for the command).
  const ownRange = opts.command === undefined && !(opts.args ?? []).includes('--pod-cidr');
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRuntimeOnce(opts, ownRange ? ['--pod-cidr', testPodCidr()] : []);
    } catch (err) {
      // The random range overlaps one a live runtime of the machine leased (docs/durability.md).
      if (!ownRange || attempt >= RANGE_ATTEMPTS || !(err as Error).message.includes('overlaps the pod range')) throw err;
    }
  }
}

async function startRuntimeOnce(opts: StartRuntimeOptions, podCidr: string[]): Promise<RuntimeHandle> {
  // Short prefix: the socket path must stay under the 108-byte sun_path limit.
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'cri-winsim-e2e-')));
  const socketPath = join(dir, 'cri.sock');
  const stateDir = join(dir, 'state');
  const endpoint = `unix://${socketPath}`;
  const name = opts.name ?? dir;
  const readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
  const stopTimeoutMs = opts.stopTimeoutMs ?? 5_000;

  let child: ChildProcess;
  try {
    const [program, ...prefix] = opts.command ?? [process.execPath, ...NODE_FLAGS, cliPath];
    child = spawn(program, [...prefix, 'runtime', '--listen', endpoint, '--state-dir', stateDir, ...podCidr, ...(opts.args ?? [])], {
      cwd: dir,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    if (ownDir) await rm(dir, { recursive: true, force: true });
    throw err;
  }

  const lines: string[] = [];
  const output = () => lines.join('\n');
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exitPromise = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exited ??= { code, signal };
      resolve(exited);
    });
    // A process that could not be spawned emits 'error' and may never emit 'exit'.
    child.once('error', (err) => {
      lines.push(`spawn error: ${err.message}`);
      exited ??= { code: null, signal: null };
      resolve(exited);
    });
  });

  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => { onReady = resolve; });
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    // Keep draining for the child's whole life so it never blocks on a full pipe.
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      lines.push(line);
      if (lines.length > OUTPUT_LINES_KEPT) lines.shift();
      if (line.includes(READY_TEXT)) onReady();
    });
  }

  let stopping: Promise<RuntimeExit> | undefined;
  const handle: RuntimeHandle = {
    name,
    endpoint,
    socketPath,
    stateDir,
    dir,
    pid: child.pid ?? -1,
    output,
    running: () => exited === undefined,
    kill: async () => {
      if (exited === undefined) child.kill('SIGKILL');
      const { code, signal } = await exitPromise;
      live.delete(handle);
      return { code, signal, killed: true, socketLeft: existsSync(socketPath) };
    },
    stop: () => {
      stopping ??= (async () => {
        let killed = false;
        try {
          if (exited === undefined) {
            child.kill('SIGTERM');
            const timer = setTimeout(() => { killed = true; child.kill('SIGKILL'); }, stopTimeoutMs);
            try { await exitPromise; } finally { clearTimeout(timer); }
          }
          const { code, signal } = await exitPromise;
          return { code, signal, killed, socketLeft: existsSync(socketPath) };
        } finally {
          live.delete(handle);
          if (ownDir) await rm(dir, { recursive: true, force: true });
        }
      })();
      return stopping;
    },
  };
  live.add(handle);

  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), readyTimeoutMs); });
  const outcome = await Promise.race([ready.then(() => 'ready' as const), exitPromise.then(() => 'exited' as const), timedOut]);
  clearTimeout(timer);
  if (outcome !== 'ready') {
    await handle.stop();
    const why = outcome === 'exited'
      ? `exited (code ${exited?.code}, signal ${exited?.signal}) before it was ready`
      : `did not log "${READY_TEXT}" within ${readyTimeoutMs} ms`;
    throw new Error(`cri-winsim runtime ${why}; its output:\n${output() || '(none)'}`);
  }
  return handle;
}
