import type { Clock } from '../runtime/clock.js';
import {
  COMMAND_NOT_FOUND,
  commandKey,
  WaitForSignal,
  type CommandContext,
  type CommandIo,
  type CommandNotFound,
  type CommandRegistry,
  type ExecutionTarget,
  type RegisteredCommand,
} from './command-registry.js';
import type { ProcessEntry, ProcessTable } from './process-table.js';
import { abortError, ProcessSignal } from './process-signal.js';
import { ignoredByDefault, normaliseSignal, signalNumber } from './signals.js';

export interface ProcessExit {
  exitCode: number;
  /** The signal that ended the process, if one did. */
  signal?: string;
  finishedAtNanos: bigint;
}

/** Told once when a process exited (an object, so a container needs no closure per process). */
export interface ExitObserver {
  processExited(exit: ProcessExit): void;
}

export interface StartOptions {
  registry: CommandRegistry;
  clock: Clock;
  target: ExecutionTarget;
  argv: readonly string[];
  env: Map<string, string>;
  io: CommandIo;
  stdin?: string;
  /** The container's init process (PID 1 ignores signals it does not handle). */
  init?: boolean;
  /** When this signal arrives the process is killed too (the parent's lifetime). */
  parentSignal?: ProcessSignal;
  /**
   * What runs when argv[0] is none the registry knows: the image's own program (a team's
   * `webapp.exe`), also when the main process execs an unknown name. Only a container's main
   * process has one: a child or an exec'd command of an unknown name is not found.
   */
  imageProgram?: RegisteredCommand;
  /** When it started, if not now: a restarted runtime re-creates a running container's process. */
  startedAtNanos?: bigint;
}

export class CommandNotFoundError extends Error {
  constructor(readonly program: string) {
    super(`exec: "${program}": executable file not found in $PATH`);
    this.name = 'CommandNotFoundError';
  }
}

/** What the handler of a running process may use; dropped once it waits for a signal or exits. */
interface Running {
  readonly options: StartOptions;
  /** What the program sees of the signals sent to it while its handler runs. */
  readonly signal: ProcessSignal;
  readonly onParentAbort?: () => void;
}

/** runCommand's answer when the program now waits for a signal (the process keeps running). */
const WAITS = Symbol('waits for a signal');

/**
 * A simulated process: a registered command run as a promise, with a pid in the container's
 * process table (it is its own `ps` entry), signals delivered through a ProcessSignal while its
 * handler runs, and a real exit code and finish time. SIGKILL ends it at once, whatever its
 * handler does.
 *
 * A program that ends its handler with `untilSignal(…)` (pause, `sleep infinity`, IIS's
 * ServiceMonitor) keeps running with no promise, timer, listener or context of its own: an idle
 * container costs this object and its table entry. The next signal is handled here, with Linux
 * semantics (trapped: the program's `onSignal`; otherwise 128+n, or ignored where Linux ignores it).
 */
export class SimulatedProcess implements ProcessEntry {
  readonly pid: number;
  readonly group: string;
  readonly startedAtNanos: bigint;
  argv: readonly string[];
  comm: string;
  cpuLoad: number;
  title?: string;
  private command: RegisteredCommand;
  private running: Running | undefined;
  /** Set while the program waits for a signal (untilSignal): what the signal needs, and no more. */
  private waiting: WaitForSignal | undefined;
  private waitingIo: CommandIo | undefined;
  private exitInfo: ProcessExit | undefined;
  private exitPromise: Promise<ProcessExit> | undefined;
  private exitListeners: (((exit: ProcessExit) => void) | ExitObserver)[] | undefined;
  private readonly linuxInit: boolean;
  private readonly os: 'linux' | 'windows';
  private readonly processes: ProcessTable;
  private readonly clock: Clock;

  private constructor(command: RegisteredCommand, options: StartOptions) {
    const { target, clock } = options;
    this.command = command;
    this.argv = options.argv;
    this.comm = command.name;
    this.cpuLoad = command.options.cpuLoad ?? 0.001;
    this.group = target.containerId;
    this.processes = target.processes;
    this.clock = clock;
    this.os = target.os;
    // PID 1 of a Linux container gets no default signal actions; Windows has no such rule
    // (containerd's stop on Windows shuts the container's processes down).
    this.linuxInit = options.init === true && target.os === 'linux';
    this.pid = target.processes.allocatePid();
    this.startedAtNanos = options.startedAtNanos ?? clock.nowNanos();
    const title = command.options.processTitle?.(this.argv);
    if (title !== undefined) this.title = title;
    // Only children have a parent to die with; a container's init process gets no listener.
    const onParentAbort = options.parentSignal === undefined ? undefined : (): void => this.kill('SIGKILL');
    if (onParentAbort !== undefined) options.parentSignal?.addEventListener('abort', onParentAbort, { once: true });
    this.running = { options, signal: new ProcessSignal(), ...(onParentAbort === undefined ? {} : { onParentAbort }) };
    target.processes.add(this);
    void this.run();
  }

  /** Starts argv; throws CommandNotFoundError when no such command is registered. */
  static start(options: StartOptions): SimulatedProcess {
    const program = options.argv[0];
    if (program === undefined || program === '') throw new CommandNotFoundError('');
    const command = options.registry.lookup(program) ?? options.imageProgram;
    if (command === undefined) throw new CommandNotFoundError(program);
    return new SimulatedProcess(command, options);
  }

  /** Settles exactly once, when the process has exited. Never rejects. */
  get exited(): Promise<ProcessExit> {
    if (this.exitPromise === undefined) {
      this.exitPromise = this.exitInfo !== undefined ? Promise.resolve(this.exitInfo) : new Promise((resolve) => this.onExit(resolve));
    }
    return this.exitPromise;
  }

  /** Calls listener (a function or an ExitObserver) once with the exit (at once if it exited already). */
  onExit(listener: ((exit: ProcessExit) => void) | ExitObserver): void {
    if (this.exitInfo !== undefined) {
      notify(listener, this.exitInfo);
      return;
    }
    // A literal of one (an empty array grows to room for 17 on its first push).
    if (this.exitListeners === undefined) this.exitListeners = [listener];
    else this.exitListeners.push(listener);
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  get exit(): ProcessExit | undefined {
    return this.exitInfo;
  }

  /** Delivers a signal with Linux semantics (see CommandOptions.traps). */
  kill(signalName: string): void {
    if (this.exitInfo !== undefined) return;
    const signal = normaliseSignal(signalName);
    const delivered = this.running?.signal;
    if (signal === 'SIGKILL') {
      delivered?.abort('SIGKILL');
      this.finish(137, 'SIGKILL');
      return;
    }
    // A handler already told of a signal decides its exit; only SIGKILL overrides it.
    if (signal === 'SIGSTOP' || delivered?.aborted === true) return;
    const trapped = this.command.options.traps?.includes(signal) === true;
    if (!trapped && (this.linuxInit || ignoredByDefault(signal))) return;
    const waiting = this.waiting;
    const io = this.waitingIo;
    if (waiting !== undefined && io !== undefined) {
      this.waiting = undefined;
      this.waitingIo = undefined;
      if (!trapped) {
        this.finish(128 + signalNumber(signal), signal);
        return;
      }
      let code: number;
      try {
        code = normaliseExitCode(waiting.onSignal(signal, io), this.os);
      } catch (err) {
        io.stderr(`${this.command.name}: ${err instanceof Error ? err.message : String(err)}\n`);
        code = 1;
      }
      this.finish(code, code === 128 + signalNumber(signal) ? signal : undefined);
      return;
    }
    delivered?.abort(signal);
  }

  private finish(exitCode: number, signal?: string): void {
    if (this.exitInfo !== undefined) return;
    const running = this.running;
    if (running?.onParentAbort !== undefined) running.options.parentSignal?.removeEventListener('abort', running.onParentAbort);
    this.running = undefined;
    this.waiting = undefined;
    this.waitingIo = undefined;
    this.processes.remove(this.pid);
    const info: ProcessExit = { exitCode, finishedAtNanos: this.clock.nowNanos() };
    if (signal !== undefined && exitCode === 128 + signalNumber(signal)) info.signal = signal;
    this.exitInfo = info;
    const listeners = this.exitListeners;
    this.exitListeners = undefined;
    for (const listener of listeners ?? []) notify(listener, info);
  }

  private async run(): Promise<void> {
    const running = this.running;
    if (running === undefined) return;
    // Let the caller finish wiring (stores, listeners) before the command's first output.
    await Promise.resolve();
    const { options, signal } = running;
    let outcome: number | typeof WAITS;
    try {
      outcome = await this.runCommand(this.command, options.argv, options.io, options.env, running);
    } catch (err) {
      // runCommand answers every handler error itself; this is a defect of the emulator.
      options.io.stderr(`${this.command.name}: ${err instanceof Error ? err.message : String(err)}\n`);
      outcome = 1;
    }
    if (outcome !== WAITS) this.finish(outcome, signal.reason);
  }

  private async runCommand(
    command: RegisteredCommand,
    argv: readonly string[],
    io: CommandIo,
    env: Map<string, string>,
    running: Running,
  ): Promise<number | typeof WAITS> {
    const { options, signal } = running;
    const ctx: CommandContext = {
      argv,
      env,
      target: options.target,
      stdin: options.stdin ?? '',
      pid: this.pid,
      signal,
      stdout: (text) => {
        if (this.exitInfo === undefined) io.stdout(text);
      },
      stderr: (text) => {
        if (this.exitInfo === undefined) io.stderr(text);
      },
      sleep: (ms) => signal.sleep(ms),
      spawn: (childArgv, childIo) => this.spawnChild(childArgv, childIo, running),
      exec: async (newArgv, newIo) => {
        const program = newArgv[0];
        // The main process may exec the image's program too (`sh -c "/app/server --port 80"`).
        const next = program === undefined ? undefined : options.registry.lookup(program) ?? asInvoked(options.imageProgram, program);
        if (next === undefined) return COMMAND_NOT_FOUND;
        this.command = next;
        this.comm = next.name;
        this.argv = newArgv;
        this.cpuLoad = next.options.cpuLoad ?? 0.001;
        const title = next.options.processTitle?.(newArgv);
        if (title === undefined) delete this.title;
        else this.title = title;
        const outcome = await this.runCommand(next, newArgv, newIo ?? io, newIo?.env ?? env, running);
        // The new program waits for a signal: the caller (the program exec replaced) never
        // resumes, and its frames are garbage once nothing waits on them.
        return outcome === WAITS ? new Promise<never>(() => undefined) : outcome;
      },
    };
    try {
      const result = await command.handler(ctx);
      if (result instanceof WaitForSignal) return this.startWaiting(result, io, signal);
      if (signal.aborted && result === undefined) return 128 + signalNumber(String(signal.reason));
      return normaliseExitCode(result, this.os);
    } catch (err) {
      if (signal.aborted) return 128 + signalNumber(String(signal.reason));
      ctx.stderr(`${command.name}: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
  }

  /** The program returned untilSignal(…): keep only what the signal needs. */
  private startWaiting(wait: WaitForSignal, io: CommandIo, signal: ProcessSignal): number | typeof WAITS {
    if (this.exitInfo !== undefined) return this.exitInfo.exitCode;
    if (signal.aborted) {
      // A signal arrived while the handler still ran: it is the one the program waited for.
      const reason = String(signal.reason);
      if (this.command.options.traps?.includes(reason) !== true) return 128 + signalNumber(reason);
      return normaliseExitCode(wait.onSignal(reason, io), this.os);
    }
    // A child keeps what ties it to its parent's lifetime (removed again when it exits).
    if (this.running?.onParentAbort === undefined) this.running = undefined;
    this.waiting = wait;
    this.waitingIo = io;
    return WAITS;
  }

  private async spawnChild(
    argv: readonly string[],
    io: CommandIo & { stdin?: string; env?: Map<string, string> },
    running: Running,
  ): Promise<number | CommandNotFound> {
    const { options, signal } = running;
    if (signal.aborted) throw abortError(signal.reason);
    let child: SimulatedProcess;
    try {
      const childOptions: StartOptions = {
        registry: options.registry,
        clock: options.clock,
        target: options.target,
        argv,
        env: io.env ?? options.env,
        io,
        parentSignal: signal,
      };
      if (io.stdin !== undefined) childOptions.stdin = io.stdin;
      child = SimulatedProcess.start(childOptions);
    } catch (err) {
      if (err instanceof CommandNotFoundError) return COMMAND_NOT_FOUND;
      throw err;
    }
    const exit = await child.exited;
    if (signal.aborted) throw abortError(signal.reason);
    return exit.exitCode;
  }
}

/** The image's program under the name it was exec'd by (what `ps` shows). */
function asInvoked(command: RegisteredCommand | undefined, program: string): RegisteredCommand | undefined {
  return command === undefined ? undefined : { ...command, name: commandKey(program) };
}

function notify(listener: ((exit: ProcessExit) => void) | ExitObserver, exit: ProcessExit): void {
  if (typeof listener === 'function') listener(exit);
  else listener.processExited(exit);
}

/** Exit statuses are 8 bits on Linux (`exit 256` is 0, `exit -1` is 255), 32 bits on Windows. */
function normaliseExitCode(code: number, os: 'linux' | 'windows'): number {
  if (!Number.isFinite(code)) return 1;
  if (os === 'windows') return Math.trunc(code) | 0;
  return ((Math.trunc(code) % 256) + 256) % 256;
}
