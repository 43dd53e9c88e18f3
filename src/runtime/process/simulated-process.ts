import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../clock.js';
import {
  COMMAND_NOT_FOUND,
  type CommandContext,
  type CommandIo,
  type CommandNotFound,
  type CommandRegistry,
  type ExecutionTarget,
  type RegisteredCommand,
} from './command-registry.js';
import type { ProcessEntry } from './process-table.js';
import { ignoredByDefault, normaliseSignal, signalNumber } from './signals.js';

export interface ProcessExit {
  exitCode: number;
  /** The signal that ended the process, if one did. */
  signal?: string;
  finishedAtNanos: bigint;
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
  /** Aborting this kills the process too (the parent's lifetime). */
  parentSignal?: AbortSignal;
}

export class CommandNotFoundError extends Error {
  constructor(readonly program: string) {
    super(`exec: "${program}": executable file not found in $PATH`);
    this.name = 'CommandNotFoundError';
  }
}

/**
 * A simulated process: a registered command run as a promise, with a pid in the container's
 * process table, signals delivered through an AbortSignal, and a real exit code and finish time.
 * SIGKILL ends it at once, whatever its handler does.
 */
export class SimulatedProcess {
  readonly pid: number;
  readonly argv: readonly string[];
  readonly startedAtNanos: bigint;
  /** Settles exactly once, when the process has exited. Never rejects. */
  readonly exited: Promise<ProcessExit>;
  private exitInfo: ProcessExit | undefined;
  private readonly abort = new AbortController();
  private resolveKilled!: (code: number) => void;
  private readonly entry: ProcessEntry;

  private constructor(private command: RegisteredCommand, private readonly options: StartOptions) {
    const { target, clock } = options;
    this.argv = options.argv;
    this.pid = target.processes.allocatePid();
    this.startedAtNanos = clock.nowNanos();
    const killed = new Promise<number>((resolve) => {
      this.resolveKilled = resolve;
    });
    // Only children have a parent to die with; a container's init process gets no listener.
    const onParentAbort = options.parentSignal === undefined ? undefined : (): void => this.kill('SIGKILL');
    if (onParentAbort !== undefined) options.parentSignal?.addEventListener('abort', onParentAbort, { once: true });
    this.entry = {
      pid: this.pid,
      comm: command.name,
      argv: this.argv,
      startedAtNanos: this.startedAtNanos,
      cpuLoad: command.options.cpuLoad ?? 0.001,
      group: target.containerId,
      kill: (signal) => this.kill(signal),
    };
    const title = command.options.processTitle?.(this.argv);
    if (title !== undefined) this.entry.title = title;
    target.processes.add(this.entry);
    const run = this.run();
    this.exited = Promise.race([run, killed]).then((exitCode) => {
      if (onParentAbort !== undefined) options.parentSignal?.removeEventListener('abort', onParentAbort);
      target.processes.remove(this.pid);
      const reason = this.abort.signal.aborted ? String(this.abort.signal.reason) : undefined;
      const info: ProcessExit = { exitCode, finishedAtNanos: clock.nowNanos() };
      if (reason !== undefined && exitCode === 128 + signalNumber(reason)) info.signal = reason;
      this.exitInfo = info;
      return info;
    });
  }

  /** Starts argv; throws CommandNotFoundError when no such command is registered. */
  static start(options: StartOptions): SimulatedProcess {
    const program = options.argv[0];
    if (program === undefined || program === '') throw new CommandNotFoundError('');
    const command = options.registry.lookup(program);
    if (command === undefined) throw new CommandNotFoundError(program);
    return new SimulatedProcess(command, options);
  }

  /** Nominal CPU load of the program running now, in cores. */
  get cpuLoad(): number {
    return this.entry.cpuLoad;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  get exit(): ProcessExit | undefined {
    return this.exitInfo;
  }

  /** Delivers a signal with Linux semantics (see CommandOptions.traps). */
  kill(signalName: string): void {
    if (this.exitInfo !== undefined || this.abort.signal.aborted) {
      if (normaliseSignal(signalName) === 'SIGKILL') this.resolveKilled(137);
      return;
    }
    const signal = normaliseSignal(signalName);
    if (signal === 'SIGKILL' || signal === 'SIGSTOP') {
      if (signal === 'SIGSTOP') return;
      this.abort.abort('SIGKILL');
      this.resolveKilled(137);
      return;
    }
    const traps = this.command.options.traps ?? [];
    if (traps.includes(signal)) {
      this.abort.abort(signal);
      return;
    }
    // PID 1 of a Linux container gets no default signal actions; Windows has no such rule
    // (containerd's stop on Windows shuts the container's processes down).
    if ((this.options.init === true && this.options.target.os === 'linux') || ignoredByDefault(signal)) return;
    this.abort.abort(signal);
  }

  private async run(): Promise<number> {
    // Let the caller finish wiring (stores, listeners) before the command's first output.
    await Promise.resolve();
    return this.runCommand(this.command, this.options.argv, this.options.io, this.options.env);
  }

  private async runCommand(command: RegisteredCommand, argv: readonly string[], io: CommandIo, env: Map<string, string>): Promise<number> {
    const { options } = this;
    const signal = this.abort.signal;
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
      sleep: (ms) => delay(Math.max(0, ms), undefined, { signal }),
      spawn: (childArgv, childIo) => this.spawnChild(childArgv, childIo),
      exec: async (newArgv, newIo) => {
        const program = newArgv[0];
        const next = program === undefined ? undefined : options.registry.lookup(program);
        if (next === undefined) return COMMAND_NOT_FOUND;
        this.command = next;
        this.entry.comm = next.name;
        this.entry.argv = newArgv;
        this.entry.cpuLoad = next.options.cpuLoad ?? 0.001;
        const title = next.options.processTitle?.(newArgv);
        if (title === undefined) delete this.entry.title;
        else this.entry.title = title;
        return this.runCommand(next, newArgv, newIo ?? io, newIo?.env ?? env);
      },
    };
    try {
      const code = await command.handler(ctx);
      if (signal.aborted && code === undefined) return 128 + signalNumber(String(signal.reason));
      return normaliseExitCode(code, options.target.os);
    } catch (err) {
      if (signal.aborted) return 128 + signalNumber(String(signal.reason));
      ctx.stderr(`${command.name}: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
  }

  private async spawnChild(argv: readonly string[], io: CommandIo & { stdin?: string; env?: Map<string, string> }): Promise<number | CommandNotFound> {
    if (this.abort.signal.aborted) throw abortError(this.abort.signal);
    let child: SimulatedProcess;
    try {
      const childOptions: StartOptions = {
        registry: this.options.registry,
        clock: this.options.clock,
        target: this.options.target,
        argv,
        env: io.env ?? this.options.env,
        io,
        parentSignal: this.abort.signal,
      };
      if (io.stdin !== undefined) childOptions.stdin = io.stdin;
      child = SimulatedProcess.start(childOptions);
    } catch (err) {
      if (err instanceof CommandNotFoundError) return COMMAND_NOT_FOUND;
      throw err;
    }
    const exit = await child.exited;
    if (this.abort.signal.aborted) throw abortError(this.abort.signal);
    return exit.exitCode;
  }
}

/** Exit statuses are 8 bits on Linux (`exit 256` is 0, `exit -1` is 255), 32 bits on Windows. */
function normaliseExitCode(code: number, os: 'linux' | 'windows'): number {
  if (!Number.isFinite(code)) return 1;
  if (os === 'windows') return Math.trunc(code) | 0;
  return ((Math.trunc(code) % 256) + 256) % 256;
}

function abortError(signal: AbortSignal): Error {
  const err = new Error(`terminated by ${String(signal.reason)}`);
  err.name = 'AbortError';
  return err;
}
