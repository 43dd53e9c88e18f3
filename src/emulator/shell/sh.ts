import { takeContainerStdin, type ContainerStdin } from '../container-stdin.js';
import type { CommandContext, CommandRegistry } from '../command-registry.js';
import { ShellInterpreter, type ShellIo } from './interpreter.js';
import { parseShellScript } from './parser.js';
import type { List } from './syntax.js';

/**
 * The `sh` utility (POSIX XCU sh): its command line (`-c SCRIPT [NAME ARGS…]`), reading commands
 * from standard input when there is no -c, and a one-command `-c` script that execs its command.
 */

/** Runs lines from the container's stdin until it ends (or `exit`); the status of the last one. */
async function readCommands(ctx: CommandContext, registry: CommandRegistry, name: string, stdin: ContainerStdin): Promise<number> {
  const shell = new ShellInterpreter(ctx, registry, name, []);
  let status = 0;
  for (let line = await stdin.readLine(ctx.signal); line !== undefined; line = await stdin.readLine(ctx.signal)) {
    const exit = /^\s*exit(?:\s+(-?\d+))?\s*$/.exec(line);
    if (exit !== null) return exit[1] === undefined ? status : Number(exit[1]);
    let list: List;
    try {
      list = parseShellScript(line);
    } catch (err) {
      ctx.stderr(`${name}: ${(err as Error).message}\n`);
      status = 2;
      continue;
    }
    status = await shell.runScript(list, { stdout: ctx.stdout, stderr: ctx.stderr, stdin: '' });
  }
  return status;
}

/**
 * The `sh` command: `sh -c SCRIPT [NAME ARGS…]`. Without -c it reads commands from standard
 * input; with no input it waits while stdin is held open (a container with `stdin: true`) and
 * otherwise exits 0, as a shell does at end of input.
 */
export function shellCommand(registry: CommandRegistry) {
  return async (ctx: CommandContext): Promise<number> => {
    const name = ctx.argv[0] ?? 'sh';
    const args = ctx.argv.slice(1);
    let script: string | undefined;
    let positional: string[] = [];
    let scriptName = name;
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as string;
      if (a === '-c') {
        script = args[i + 1];
        if (script === undefined) {
          ctx.stderr(`${name}: -c requires an argument\n`);
          return 2;
        }
        scriptName = args[i + 2] ?? name;
        positional = args.slice(i + 3);
        break;
      }
      if (a.startsWith('-')) continue;
      ctx.stderr(`${name}: can't open '${a}': No such file or directory\n`);
      return 127;
    }
    if (script === undefined) {
      if (ctx.stdin !== '') script = ctx.stdin;
      else {
        // A container's main shell with `stdin: true` reads what attached clients type.
        const stdin = takeContainerStdin(ctx);
        return stdin === undefined ? 0 : readCommands(ctx, registry, name, stdin);
      }
    }
    let list: List;
    try {
      list = parseShellScript(script);
    } catch (err) {
      ctx.stderr(`${scriptName}: ${(err as Error).message}\n`);
      return 2;
    }
    const shell = new ShellInterpreter(ctx, registry, scriptName, positional);
    const io: ShellIo = { stdout: ctx.stdout, stderr: ctx.stderr, stdin: ctx.stdin };
    const single = shell.singleExecutable(list);
    if (single !== undefined && single.k === 'simple') {
      const code = await shell.execCommandInPlace(single, io);
      if (code !== undefined) return code;
    }
    return shell.runScript(list, io);
  };
}
