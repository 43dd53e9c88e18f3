import type { OciSpec } from '../runtime/oci/spec.js';
import type { ContainerFiles } from './container-files.js';
import type { ProcessSignal } from './process-signal.js';
import type { ProcessTable } from './process-table.js';

/**
 * The container a simulated command runs in: what identity and environment commands see.
 * Built from the container record at start/exec time.
 */
export interface ExecutionTarget {
  containerId: string;
  sandboxId: string;
  os: 'linux' | 'windows';
  hostname: string;
  /** The OCI spec composed at CreateContainer (process.user, env, mounts, windows.*). */
  ociSpec: OciSpec;
  /** The effective user as a name a shell would print (`root`, `1002`, `ContainerUser`). */
  user: string;
  /** Free-form platform data of the container record (the Windows path keeps its state here). */
  platform: Record<string, unknown>;
  /** Every process of the container (its PID namespace), for `ps`, `pgrep`, `tasklist`. */
  processes: ProcessTable;
  /** Files private to the container (`/etc/hostname`, `/etc/resolv.conf`, files written by `>`). */
  files: ContainerFiles;
}

export interface CommandIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** What a command handler receives. */
export interface CommandContext extends CommandIo {
  /** argv[0] is the name as invoked (`/bin/echo`, `cmd.exe`), the rest its arguments. */
  readonly argv: readonly string[];
  /** The process environment; shells mutate their own copy. */
  readonly env: Map<string, string>;
  readonly target: ExecutionTarget;
  /** Standard input (the output of the previous pipeline stage, or ''). */
  readonly stdin: string;
  readonly pid: number;
  /** Aborted when the process is signalled; `signal.reason` is the signal name (`SIGTERM`). */
  readonly signal: ProcessSignal;
  /** Waits, rejecting with an AbortError when the process is signalled. */
  sleep(ms: number): Promise<void>;
  /**
   * Runs a command as a child process of this one (it gets a pid and shows in `ps`), with this
   * process's environment unless `env` is given. Resolves with its exit code; an unknown command
   * resolves with `notFoundExitCode` after writing nothing (the caller words the error).
   */
  spawn(argv: readonly string[], io: CommandIo & { stdin?: string; env?: Map<string, string> }): Promise<number | CommandNotFound>;
  /**
   * Replaces this process's program with argv, keeping the pid (the exec system call; `sh -c cmd`
   * execs its only command). Resolves with the new program's exit code.
   */
  exec(argv: readonly string[], io?: CommandIo & { env?: Map<string, string> }): Promise<number | CommandNotFound>;
}

export const COMMAND_NOT_FOUND = Symbol('command not found');
export type CommandNotFound = typeof COMMAND_NOT_FOUND;

/**
 * What a handler returns to keep its process running until a signal ends it, without a pending
 * promise, timer or listener of its own (see `untilSignal`). Tens of thousands of idle container
 * processes (`pause`, `ServiceMonitor w3svc`, `sleep infinity`) then cost a few fields each.
 */
export class WaitForSignal {
  constructor(
    /**
     * Called once with a signal the command traps (CommandOptions.traps); gives the exit code.
     * Other signals end the process as the kernel would (128+n, or ignored where Linux ignores
     * them). Its output goes to the process's stdout/stderr.
     */
    readonly onSignal: (signal: string, io: CommandIo) => number,
  ) {}
}

/** The handler's last step: run until signalled (`onSignal` as in WaitForSignal; default exit 0). */
export function untilSignal(onSignal: (signal: string, io: CommandIo) => number = exitZero): WaitForSignal {
  return onSignal === exitZero ? WAIT_EXIT_ZERO : new WaitForSignal(onSignal);
}

const exitZero = (): number => 0;
const WAIT_EXIT_ZERO = new WaitForSignal(exitZero);

/** A command's implementation: resolves with the exit code, or waits for a signal (untilSignal). */
export type CommandHandler = (ctx: CommandContext) => Promise<number | WaitForSignal> | number | WaitForSignal;

export interface CommandOptions {
  /**
   * Signals the command handles itself (it sees `ctx.signal` abort with that reason and decides
   * its exit code). Any other catchable signal terminates it with 128+n, except that PID 1
   * ignores signals it does not handle (the Linux rule for a container's init process).
   */
  traps?: readonly string[];
  /** Shells run it in-process (no pid of its own), like `echo` and `test` in sh. */
  shellBuiltin?: boolean;
  /** Nominal CPU load while it runs, in cores (stats). Default 0.001. */
  cpuLoad?: number;
  /** The command line the program shows in /proc/<pid>/cmdline when it rewrites it. */
  processTitle?: (argv: readonly string[]) => string;
}

export interface RegisteredCommand {
  name: string;
  handler: CommandHandler;
  options: CommandOptions;
}

/**
 * Normalises how a program is named: the last path component (either separator), lower-case,
 * without `.exe`, so `/bin/sh`, `C:\Windows\System32\cmd.exe` and `CMD` find `sh` and `cmd`.
 */
export function commandKey(program: string): string {
  const base = program.split(/[\\/]/).pop() ?? program;
  return base.toLowerCase().replace(/\.exe$/, '');
}

/** Named commands the emulator can run. Registering a name again replaces the earlier handler. */
export class CommandRegistry {
  private readonly commands = new Map<string, RegisteredCommand>();

  register(name: string, handler: CommandHandler, options: CommandOptions = {}): void {
    const key = commandKey(name);
    this.commands.set(key, { name: key, handler, options });
  }

  /** Registers unless the name is taken, so defaults never replace a command a module added. */
  registerDefault(name: string, handler: CommandHandler, options: CommandOptions = {}): void {
    if (!this.commands.has(commandKey(name))) this.register(name, handler, options);
  }

  lookup(program: string): RegisteredCommand | undefined {
    return this.commands.get(commandKey(program));
  }

  names(): string[] {
    return [...this.commands.keys()].sort();
  }
}
