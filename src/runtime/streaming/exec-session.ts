import { executionTarget, processEnvironment } from '../container-process.js';
import { commandKey } from '../../emulator/command-registry.js';
import { CommandNotFoundError, SimulatedProcess } from '../../emulator/simulated-process.js';
import type { RuntimeContext } from '../runtime-context.js';
import { ContainerState, type ContainerRecord } from '../store/container-store.js';
import type { RemoteCommandSession } from './remote-command.js';

/** Output a client may leave unread before the session is ended (a client that never reads). */
export const MAX_SESSION_BACKLOG = 16 * 1024 * 1024;
/** Stdin collected for a command that is not an interactive shell. */
const MAX_STDIN_BYTES = 16 * 1024 * 1024;
/** A line typed into an interactive shell. */
const MAX_LINE = 64 * 1024;

type ShellFlavor = 'sh' | 'cmd' | 'powershell';

/** Whether argv starts a shell that reads commands from stdin (no -c / /c / -Command). */
export function interactiveShell(argv: readonly string[]): ShellFlavor | undefined {
  const program = commandKey(argv[0] ?? '');
  const args = argv.slice(1).map((a) => a.toLowerCase());
  if (['sh', 'bash', 'ash', 'dash'].includes(program)) return args.some((a) => a === '-c' || !a.startsWith('-')) ? undefined : 'sh';
  if (program === 'cmd') return args.some((a) => a === '/c' || a === '/k') ? undefined : 'cmd';
  if (program === 'powershell' || program === 'pwsh') {
    return args.some((a) => ['-command', '-c', '-file', '-f', '-encodedcommand', '-ec'].includes(a) || !a.startsWith('-')) ? undefined : 'powershell';
  }
  return undefined;
}

/** A terminal shows `\n` as `\r\n` (the tty's ONLCR). */
function toTerminal(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}

function containerFailure(container: ContainerRecord | undefined, id: string): string | undefined {
  if (container === undefined) return `container ${id} not found`;
  if (container.status.state !== ContainerState.RUNNING) return `container ${id} is not running`;
  return undefined;
}

/**
 * Runs an exec session: the command in the container's emulator with the session's stdio. An
 * interactive shell (`sh`, `cmd`, `powershell` with stdin) reads lines and runs each as a command;
 * any other command gets stdin once the client closes it (the emulator's programs take their
 * input whole). The client going away kills what runs.
 */
export function runExecSession(ctx: RuntimeContext, containerId: string, argv: readonly string[], session: RemoteCommandSession): void {
  const container = ctx.containers.get(containerId);
  const failure = containerFailure(container, containerId);
  if (failure !== undefined || container === undefined) {
    session.finish({ error: failure ?? 'container not found' });
    return;
  }
  const flavor = interactiveShell(argv);
  if (flavor !== undefined && session.options.stdin) {
    new InteractiveShell(ctx, container, argv, flavor, session).start();
    return;
  }
  if (session.options.stdin && !session.options.tty) {
    const chunks: Buffer[] = [];
    let size = 0;
    session.on('stdin', (data: Buffer) => {
      size += data.length;
      if (size <= MAX_STDIN_BYTES) chunks.push(data);
    });
    session.once('stdin-end', () => {
      if (!session.closed) runCommand(ctx, container, argv, session, Buffer.concat(chunks).toString('utf8'), (code) => session.finish({ exitCode: code, command: argv }));
    });
    return;
  }
  runCommand(ctx, container, argv, session, '', (code) => session.finish({ exitCode: code, command: argv }));
}

/** Starts one process with the session's output; calls done with its exit code (not when the client left). */
function runCommand(
  ctx: RuntimeContext,
  container: ContainerRecord,
  argv: readonly string[],
  session: RemoteCommandSession,
  stdin: string,
  done: (exitCode: number) => void,
  env = processEnvironment(ctx, container),
): SimulatedProcess | undefined {
  const tty = session.options.tty;
  let process: SimulatedProcess | undefined;
  const guard = (): boolean => {
    if (session.backlog <= MAX_SESSION_BACKLOG) return true;
    ctx.logger.warn({ containerId: container.id }, 'exec client does not read its output: session ended');
    process?.kill('SIGKILL');
    session.abort();
    return false;
  };
  const io = {
    stdout: (text: string) => {
      if (guard()) session.writeStdout(tty ? toTerminal(text) : text);
    },
    stderr: (text: string) => {
      if (!guard()) return;
      // With a tty, stderr shares the terminal.
      if (tty) session.writeStdout(toTerminal(text));
      else session.writeStderr(text);
    },
  };
  try {
    process = SimulatedProcess.start({
      registry: ctx.commands,
      clock: ctx.clock,
      target: executionTarget(ctx, container),
      argv,
      env,
      io,
      stdin,
    });
  } catch (err) {
    if (err instanceof CommandNotFoundError) {
      // containerd's text for a missing executable (as ExecSync gives it).
      session.finish({ error: `failed to exec in container ${container.id}: OCI runtime exec failed: unable to start container process: ${err.message}: unknown` });
      return undefined;
    }
    throw err;
  }
  const started = process;
  (container.live.execs ??= new Set()).add(started);
  const onClose = (): void => started.kill('SIGKILL');
  session.once('close', onClose);
  void started.exited.then((exit) => {
    container.live.execs?.delete(started);
    session.off('close', onClose);
    if (!session.closed) done(exit.exitCode);
  });
  return started;
}

/**
 * A shell reading commands from the session: with a tty, a terminal's line discipline (echo,
 * backspace, `\r\n`, ^C, ^D) and the shell's prompt; without one, lines as they come and no prompt.
 */
class InteractiveShell {
  private line = '';
  private readonly queue: string[] = [];
  private running: SimulatedProcess | undefined;
  private eof = false;
  private lastStatus = 0;
  private finished = false;
  private escape = 0;
  private readonly env: Map<string, string>;

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly container: ContainerRecord,
    private readonly argv: readonly string[],
    private readonly flavor: ShellFlavor,
    private readonly session: RemoteCommandSession,
  ) {
    this.env = processEnvironment(ctx, container);
  }

  private get tty(): boolean {
    return this.session.options.tty;
  }

  start(): void {
    this.session.on('stdin', (data: Buffer) => this.input(data.toString('utf8')));
    this.session.once('stdin-end', () => {
      this.eof = true;
      if (!this.tty && this.line !== '') this.submit(this.line);
      this.line = '';
      this.next();
    });
    this.session.once('close', () => {
      this.finished = true;
      this.running?.kill('SIGKILL');
    });
    if (this.tty) {
      if (this.flavor === 'cmd') this.write('Microsoft Windows [Version 10.0.17763.6054]\r\n(c) 2018 Microsoft Corporation. All rights reserved.\r\n\r\n');
      if (this.flavor === 'powershell') this.write('Windows PowerShell\r\nCopyright (C) Microsoft Corporation. All rights reserved.\r\n\r\n');
      this.prompt();
    }
  }

  private write(text: string): void {
    if (!this.finished) this.session.writeStdout(text);
  }

  private prompt(): void {
    if (!this.tty || this.finished) return;
    if (this.flavor === 'cmd') this.write('C:\\>');
    else if (this.flavor === 'powershell') this.write('PS C:\\> ');
    else this.write(this.container.user === 'root' || this.container.user === '0' ? '/ # ' : '/ $ ');
  }

  private input(text: string): void {
    if (!this.tty) {
      this.line += text;
      let at = this.line.indexOf('\n');
      while (at >= 0) {
        this.submit(this.line.slice(0, at).replace(/\r$/, ''));
        this.line = this.line.slice(at + 1);
        at = this.line.indexOf('\n');
      }
      if (this.line.length > MAX_LINE) this.line = '';
      this.next();
      return;
    }
    for (const ch of text) {
      // Cursor keys and other escape sequences are swallowed (no line editing).
      if (this.escape > 0) {
        if (this.escape === 1 && ch !== '[' && ch !== 'O') this.escape = 0;
        else if (this.escape > 1 && /[A-Za-z~]/.test(ch)) this.escape = 0;
        else this.escape++;
        continue;
      }
      if (ch === '\x1b') {
        this.escape = 1;
      } else if (ch === '\r' || ch === '\n') {
        this.write('\r\n');
        this.submit(this.line);
        this.line = '';
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.line.length > 0) {
          this.line = this.line.slice(0, -1);
          this.write('\b \b');
        }
      } else if (ch === '\x03') {
        this.write('^C\r\n');
        this.line = '';
        this.queue.length = 0;
        if (this.running !== undefined) this.running.kill('SIGINT');
        else this.prompt();
      } else if (ch === '\x04') {
        if (this.line === '') {
          this.eof = true;
          if (this.flavor === 'sh') this.write('\r\n');
        }
      } else if (ch >= ' ' || ch === '\t') {
        if (this.line.length < MAX_LINE) {
          this.line += ch;
          this.write(ch);
        }
      }
    }
    this.next();
  }

  private submit(line: string): void {
    this.queue.push(line);
  }

  /** Runs the next queued line, or ends the session at end of input. */
  private next(): void {
    if (this.finished || this.running !== undefined) return;
    const line = this.queue.shift();
    if (line === undefined) {
      if (this.eof) this.finish(this.lastStatus);
      return;
    }
    const trimmed = line.trim();
    if (trimmed === '') {
      this.prompt();
      this.next();
      return;
    }
    const exit = /^exit(?:\s+(?:\/b\s+)?(-?\d+))?\s*$/i.exec(trimmed);
    if (exit !== null) {
      this.finish(exit[1] === undefined ? this.lastStatus : Number(exit[1]));
      return;
    }
    const argv = this.flavor === 'cmd' ? ['cmd', '/c', trimmed] : this.flavor === 'powershell' ? ['powershell', '-Command', trimmed] : [this.argv[0] ?? 'sh', '-c', trimmed];
    this.running = runCommand(this.ctx, this.container, argv, this.session, '', (code) => {
      this.running = undefined;
      this.lastStatus = code;
      // cmd leaves a blank line before its next prompt.
      if (this.tty && this.flavor !== 'sh') this.write('\r\n');
      this.prompt();
      this.next();
    }, this.env);
    if (this.running === undefined) this.finished = true;
  }

  private finish(code: number): void {
    if (this.finished) return;
    this.finished = true;
    this.session.finish({ exitCode: code, command: this.argv });
  }
}
