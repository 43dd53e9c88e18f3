import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { merged } from '../../tuning/merged.js';
import { containerPath, writeRefused } from '../container-files.js';
import { abortError } from '../process-signal.js';
import { COMMAND_NOT_FOUND, WaitForSignal, type CommandContext, type CommandIo, type CommandRegistry } from '../command-registry.js';
import { evaluateArithmetic } from './arithmetic.js';
import { parseShellScript } from './parser.js';
import type { AndOr, Command, List, Pipeline, Redirect, Word } from './syntax.js';

/**
 * The interpreter of the shell: runs a parsed script in a container process. It carries out the
 * commands of POSIX XCU 2.9 (pipelines, AND-OR lists, loops, `if`, groups and subshells, with
 * `$?`), the word expansions of XCU 2.6 (parameters with `${VAR:-word}`, command substitution,
 * arithmetic, field splitting), the redirections of XCU 2.7 (`>&2`, `2>&1`, `>/dev/null`,
 * `> file`, `>> file`, `< file`), the special built-ins of XCU 2.14 it needs (`exit`, `export`,
 * `exec`, …), and runs every other command through the emulator's registry.
 */

/** Loop iterations one loop may run; far beyond any real container workload, so never hit in use. */
export const MAX_LOOP_ITERATIONS = 10_000_000;

class ShellExit {
  constructor(readonly code: number) {}
}

export interface ShellIo extends CommandIo {
  stdin: string;
}

/** The state of one running shell: variables, `$?`, positional parameters. */
export class ShellInterpreter {
  private last = 0;
  private readonly vars: Map<string, string>;

  constructor(
    private readonly ctx: CommandContext,
    private readonly registry: CommandRegistry,
    private readonly name: string,
    private readonly positional: string[],
  ) {
    this.vars = new Map(ctx.env);
  }

  async runScript(list: List, io: ShellIo): Promise<number> {
    try {
      return await this.list(list, io);
    } catch (err) {
      if (err instanceof ShellExit) return err.code;
      throw err;
    }
  }

  /** `sh -c 'cmd args'`: a script that is one plain command execs it, as dash and ash do. */
  singleExecutable(list: List): Command | undefined {
    const only = list.length === 1 ? list[0] : undefined;
    if (only === undefined || only.rest.length > 0 || only.first.negate || only.first.commands.length !== 1) return undefined;
    const cmd = only.first.commands[0];
    if (cmd?.k !== 'simple' || cmd.redirects.length > 0 || cmd.assigns.length > 0 || cmd.words.length === 0) return undefined;
    return cmd;
  }

  async execCommandInPlace(cmd: Command & { k: 'simple' }, io: ShellIo): Promise<number | undefined> {
    const argv = await this.expandWords(cmd.words, io);
    const program = argv[0];
    if (program === undefined || SPECIAL_BUILTINS.has(program)) return undefined;
    // An unknown name is tried too: the main process may exec its image's program.
    if (this.registry.lookup(program)?.options.shellBuiltin === true) return undefined;
    const code = await this.ctx.exec(argv, merged(io, { env: this.exportedEnv() }));
    return code === COMMAND_NOT_FOUND ? undefined : code;
  }

  private async list(list: List, io: ShellIo): Promise<number> {
    let status = this.last;
    for (const item of list) status = await this.andOr(item, io);
    return status;
  }

  private async andOr(item: AndOr, io: ShellIo): Promise<number> {
    let status = await this.pipeline(item.first, io);
    for (const { op, pipeline } of item.rest) {
      if ((op === '&&' && status === 0) || (op === '||' && status !== 0)) status = await this.pipeline(pipeline, io);
    }
    return status;
  }

  private async pipeline(p: Pipeline, io: ShellIo): Promise<number> {
    let stdin = io.stdin;
    let status = 0;
    for (let i = 0; i < p.commands.length; i++) {
      const last = i === p.commands.length - 1;
      let captured = '';
      const stageIo: ShellIo = last ? { ...io, stdin } : { stdout: (t) => (captured += t), stderr: io.stderr, stdin };
      status = await this.command(p.commands[i] as Command, stageIo);
      stdin = captured;
    }
    if (p.negate) status = status === 0 ? 1 : 0;
    this.last = status;
    return status;
  }

  private async command(cmd: Command, io: ShellIo): Promise<number> {
    this.checkSignal();
    switch (cmd.k) {
      case 'simple':
        return this.simple(cmd, io);
      case 'group': {
        if (!cmd.subshell) return this.list(cmd.body, io);
        const sub = new ShellInterpreter({ ...this.ctx, env: new Map(this.vars) }, this.registry, this.name, this.positional);
        return sub.runScript(cmd.body, io);
      }
      case 'if': {
        for (const clause of cmd.clauses) {
          if ((await this.list(clause.cond, io)) === 0) return this.list(clause.body, io);
        }
        return cmd.otherwise === undefined ? 0 : this.list(cmd.otherwise, io);
      }
      case 'loop': {
        let status = 0;
        for (let n = 0; ; n++) {
          if (n >= MAX_LOOP_ITERATIONS) return this.fail(io, 'loop iteration limit reached', 2);
          await this.iterationPause();
          const cond = await this.list(cmd.cond, io);
          if (cmd.until ? cond === 0 : cond !== 0) break;
          status = await this.list(cmd.body, io);
        }
        this.last = status;
        return status;
      }
      case 'for': {
        const items = cmd.items === undefined ? this.positional : await this.expandWords(cmd.items, io);
        let status = 0;
        for (const item of items.slice(0, MAX_LOOP_ITERATIONS)) {
          await this.iterationPause();
          this.vars.set(cmd.name, item);
          status = await this.list(cmd.body, io);
        }
        this.last = status;
        return status;
      }
    }
  }

  /** Lets timers, I/O and signals in between iterations of a loop whose body never waits. */
  private async iterationPause(): Promise<void> {
    await yieldToEventLoop();
    this.checkSignal();
  }

  private checkSignal(): void {
    if (this.ctx.signal.aborted) throw abortError(this.ctx.signal.reason);
  }

  private fail(io: CommandIo, message: string, code: number): number {
    io.stderr(`${this.name}: ${message}\n`);
    this.last = code;
    return code;
  }

  private async simple(cmd: Command & { k: 'simple' }, io: ShellIo): Promise<number> {
    const argv = await this.expandWords(cmd.words, io);
    const assigned = new Map<string, string>();
    for (const a of cmd.assigns) assigned.set(a.name, (await this.expandWord(a.value, io, false)).join(' '));
    let cmdIo: ShellIo;
    try {
      cmdIo = await this.redirect(cmd.redirects, io);
    } catch (err) {
      return this.fail(io, (err as Error).message, 1);
    }
    if (argv.length === 0) {
      for (const [k, v] of assigned) this.vars.set(k, v);
      this.last = 0;
      return 0;
    }
    const status = await this.invoke(argv, assigned, cmdIo);
    this.last = status;
    return status;
  }

  private async invoke(argv: string[], assigned: Map<string, string>, io: ShellIo): Promise<number> {
    const [program = '', ...args] = argv;
    switch (program) {
      case 'exit': {
        const code = args[0] === undefined ? this.last : Number(args[0]);
        if (!Number.isInteger(code)) return this.fail(io, `exit: Illegal number: ${args[0]}`, 2);
        throw new ShellExit(((code % 256) + 256) % 256);
      }
      case ':':
        return 0;
      case 'export':
        for (const a of args) {
          const eq = a.indexOf('=');
          if (eq > 0) this.vars.set(a.slice(0, eq), a.slice(eq + 1));
          this.exported.add(eq > 0 ? a.slice(0, eq) : a);
        }
        return 0;
      case 'unset':
        for (const a of args) this.vars.delete(a);
        return 0;
      case 'cd':
        this.vars.set('PWD', args[0] ?? this.vars.get('HOME') ?? '/');
        return 0;
      case 'set':
      case 'trap':
      case 'wait':
      case 'ulimit':
      case 'umask':
        return 0;
      case 'exec': {
        if (args.length === 0) return 0;
        const code = await this.ctx.exec(args, merged(io, { env: this.exportedEnv(assigned) }));
        if (code === COMMAND_NOT_FOUND) {
          this.fail(io, `exec: ${args[0]}: not found`, 127);
          throw new ShellExit(127);
        }
        throw new ShellExit(code);
      }
    }
    const registered = this.registry.lookup(program);
    if (registered?.options.shellBuiltin === true) {
      const builtinCtx: CommandContext = { ...this.ctx, argv, env: this.exportedEnv(assigned), stdin: io.stdin, stdout: io.stdout, stderr: io.stderr };
      const result = await registered.handler(builtinCtx);
      if (result instanceof WaitForSignal) throw new Error(`shell builtin ${program} cannot wait for a signal`);
      return result;
    }
    const code = await this.ctx.spawn(argv, { stdout: io.stdout, stderr: io.stderr, stdin: io.stdin, env: this.exportedEnv(assigned) });
    if (code === COMMAND_NOT_FOUND) return this.fail(io, `${program}: not found`, 127);
    return code;
  }

  private readonly exported = new Set<string>();

  private exportedEnv(extra?: Map<string, string>): Map<string, string> {
    const env = new Map(this.ctx.env);
    for (const name of this.exported) {
      const v = this.vars.get(name);
      if (v !== undefined) env.set(name, v);
    }
    for (const [k, v] of this.vars) if (this.ctx.env.has(k)) env.set(k, v);
    if (extra !== undefined) for (const [k, v] of extra) env.set(k, v);
    return env;
  }

  private async redirect(redirects: Redirect[], io: ShellIo): Promise<ShellIo> {
    const out: ShellIo = { ...io };
    for (const r of redirects) {
      const target = (await this.expandWord(r.target, io, false)).join(' ');
      if (r.op === '>&' || r.op === '<&') {
        if (r.fd === 1 && target === '2') out.stdout = io.stderr;
        else if (r.fd === 2 && target === '1') out.stderr = out.stdout;
        else if (target !== String(r.fd)) throw new Error(`${target}: bad file descriptor`);
        continue;
      }
      if (r.op === '<') {
        const content = this.ctx.target.files.get(containerPath(this.ctx.target, target));
        if (content === undefined) throw new Error(`can't open '${target}': No such file or directory`);
        out.stdin = content;
        continue;
      }
      if (writeRefused(this.ctx.target, target) && !['/dev/null', '/dev/stdout', '/dev/stderr'].includes(target)) {
        throw new Error(`can't create ${target}: Read-only file system`);
      }
      const sink = this.fileSink(containerPath(this.ctx.target, target), r.op === '>>');
      if (r.fd === 2) out.stderr = sink;
      else out.stdout = sink;
    }
    return out;
  }

  private fileSink(path: string, append: boolean): (text: string) => void {
    if (path === '/dev/null' || path.toLowerCase() === 'nul') return () => undefined;
    if (path === '/dev/stderr') return this.ctx.stderr;
    if (path === '/dev/stdout') return this.ctx.stdout;
    const files = this.ctx.target.files;
    if (!append) files.set(path, '');
    return (text) => files.set(path, (files.get(path) ?? '') + text);
  }

  // -- expansion ------------------------------------------------------------------------------

  private async expandWords(words: Word[], io: ShellIo): Promise<string[]> {
    const out: string[] = [];
    for (const w of words) out.push(...(await this.expandWord(w, io, true)));
    return out;
  }

  /** Expands one word into fields; unquoted expansions are split on whitespace when `split`. */
  private async expandWord(word: Word, io: ShellIo, split: boolean): Promise<string[]> {
    const fields: string[] = [];
    let current = '';
    let has = false;
    const addText = (text: string, splittable: boolean): void => {
      if (!splittable || !split) {
        current += text;
        has = true;
        return;
      }
      const pieces = text.split(/[ \t\n]+/);
      pieces.forEach((piece, idx) => {
        if (idx > 0 && has) {
          fields.push(current);
          current = '';
          has = false;
        }
        if (piece !== '') {
          current += piece;
          has = true;
        }
      });
    };
    for (const part of word.parts) {
      switch (part.k) {
        case 'lit':
          current += part.s;
          has = true;
          break;
        case 'var': {
          let value = this.variable(part.name);
          if ((value === undefined || value === '') && part.fallback !== undefined) {
            value = (await this.expandWord({ parts: part.fallback }, io, false)).join(' ');
          }
          addText(value ?? '', !part.q);
          if (part.q) has = true;
          break;
        }
        case 'cmd': {
          let captured = '';
          const sub = new ShellInterpreter({ ...this.ctx, env: this.exportedEnv() }, this.registry, this.name, this.positional);
          const list = parseShellScript(part.src);
          this.last = await sub.runScript(list, { stdout: (t) => (captured += t), stderr: io.stderr, stdin: '' });
          addText(captured.replace(/\n+$/, ''), !part.q);
          if (part.q) has = true;
          break;
        }
        case 'arith': {
          const expanded = part.src.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9?#$])\}?/g, (_, n: string) => this.variable(n) ?? '0');
          addText(String(evaluateArithmetic(expanded, (n) => this.variable(n))), !part.q);
          break;
        }
      }
    }
    if (has) fields.push(current);
    return fields;
  }

  private variable(name: string): string | undefined {
    switch (name) {
      case '?':
        return String(this.last);
      case '$':
        return String(this.ctx.pid);
      case '#':
        return String(this.positional.length);
      case '@':
      case '*':
        return this.positional.join(' ');
      case '0':
        return this.name;
      case '!':
        return '';
    }
    if (/^[1-9]$/.test(name)) return this.positional[Number(name) - 1];
    return this.vars.get(name);
  }
}

/** Names handled by the shell itself before any command lookup. */
const SPECIAL_BUILTINS: ReadonlySet<string> = new Set(['exit', ':', 'export', 'unset', 'cd', 'set', 'trap', 'wait', 'ulimit', 'umask', 'exec']);
