// Runs a program to completion, bounded in time, collecting its output: the one way the suites
// run crictl, the CLI and the compose services as child processes.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

export interface ProcessOptions {
  cwd?: string;
  /** The whole environment of the child (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** SIGKILL after this long; the result then has timedOut: true. */
  killAfterMs: number;
  /** The command line shown in results and messages (default: program and args). */
  command?: string;
  onStdout?: (chunk: string) => void;
  /** Written to the program's standard input, which is then closed (default: no standard input). */
  input?: string;
  /**
   * Nobody reads the program's standard output: its end is closed at once (as `| head -0` would),
   * so the program's writes there fail with EPIPE. The result's stdout is then empty.
   */
  stdoutClosed?: boolean;
}

export interface ProcessResult {
  /** The command line, for messages. */
  command: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when killAfterMs expired and the process was killed. */
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

export function runProcess(program: string, args: readonly string[], opts: ProcessOptions): Promise<ProcessResult> {
  const command = opts.command ?? [program, ...args].join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      env: opts.env ?? process.env,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    // stdout and stderr are pipes; spawn's types cannot tell once stdin may be either.
    if (opts.stdoutClosed === true) child.stdout!.destroy();
    else child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; opts.onStdout?.(chunk); });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, opts.killAfterMs);
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('close', (code, signal) => { clearTimeout(timer); resolve({ command, code, signal, timedOut, stdout, stderr }); });
  });
}

/**
 * Whether pid is a live process, ours or not (a zombie waiting for its parent to reap it is not):
 * for processes a test cannot wait on, such as one its child started.
 */
export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; Z = exited, not yet reaped.
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/**
 * The arguments a live process gave its program before `script` (for node: its flags), from
 * /proc/<pid>/cmdline; undefined where there is no procfs. Fails the test when `script` is not
 * among its arguments.
 */
export function programFlagsOf(pid: number, script: string): string[] | undefined {
  const cmdline = `/proc/${pid}/cmdline`;
  if (!existsSync(cmdline)) return undefined;
  const argv = readFileSync(cmdline, 'utf8').split('\0');
  const at = argv.indexOf(script);
  if (at < 1) throw new Error(`process ${pid} does not run ${script}: ${argv.join(' ')}`);
  return argv.slice(1, at);
}

/** The live children of pid, from /proc/<pid>/stat ("pid (comm) state ppid ..."); empty without procfs. */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return children;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) === pid && state !== 'Z') children.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return children;
}
