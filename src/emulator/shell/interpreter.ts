import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { takeContainerStdin, type ContainerStdin } from '../container-stdin.js';
import { merged } from '../../merged.js';
import { containerPath, writeRefused } from '../container-files.js';
import { abortError } from '../process-signal.js';
import { COMMAND_NOT_FOUND, WaitForSignal, type CommandContext, type CommandIo, type CommandRegistry } from '../command-registry.js';

/**
 * A small POSIX shell for the command emulator: what container commands and critest use —
 * `;`, `&&`, `||`, `|`, `!`, `while`/`until`/`for … do … done`, `if … fi`, `{ …; }`, quoting,
 * `$VAR`, `${VAR:-word}`, `$?`, `$(…)`, `$((…))`, and the redirections `>&2`, `2>&1`,
 * `>/dev/null`, `> file`, `>> file`.
 */

type Part =
  | { k: 'lit'; s: string; q: boolean }
  | { k: 'var'; name: string; q: boolean; fallback?: Part[] }
  | { k: 'cmd'; src: string; q: boolean }
  | { k: 'arith'; src: string; q: boolean };

interface Word {
  parts: Part[];
}

type Token =
  | { t: 'word'; w: Word }
  | { t: 'op'; v: string }
  | { t: 'redir'; fd: number | undefined; op: string };

interface Redirect {
  fd: number;
  op: string;
  target: Word;
}

type Command =
  | { k: 'simple'; assigns: { name: string; value: Word }[]; words: Word[]; redirects: Redirect[] }
  | { k: 'loop'; until: boolean; cond: List; body: List }
  | { k: 'for'; name: string; items: Word[] | undefined; body: List }
  | { k: 'if'; clauses: { cond: List; body: List }[]; otherwise: List | undefined }
  | { k: 'group'; body: List; subshell: boolean };

interface Pipeline {
  negate: boolean;
  commands: Command[];
}
interface AndOr {
  first: Pipeline;
  rest: { op: '&&' | '||'; pipeline: Pipeline }[];
}
type List = AndOr[];

export class ShellSyntaxError extends Error {}

/** Loop iterations one loop may run; far beyond any real container workload, so never hit in use. */
export const MAX_LOOP_ITERATIONS = 10_000_000;

// ---------------------------------------------------------------------------------------------
// Lexer

const OPERATOR_CHARS: ReadonlySet<string> = new Set([';', '&', '|', '(', ')', '<', '>', '\n']);

function lex(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === ' ' || c === '\t' || c === '\r') {
      i++;
      continue;
    }
    if (c === '\\' && src[i + 1] === '\n') {
      i += 2;
      continue;
    }
    if (c === '#') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '\n' || c === ';' || c === '(' || c === ')') {
      if (c === ';' && src[i + 1] === ';') {
        tokens.push({ t: 'op', v: ';;' });
        i += 2;
      } else {
        tokens.push({ t: 'op', v: c });
        i++;
      }
      continue;
    }
    if (c === '&' || c === '|') {
      if (src[i + 1] === c) {
        tokens.push({ t: 'op', v: c + c });
        i += 2;
      } else {
        tokens.push({ t: 'op', v: c });
        i++;
      }
      continue;
    }
    if (c === '<' || c === '>') {
      i = lexRedirect(src, i, undefined, tokens);
      continue;
    }
    if (/[0-9]/.test(c)) {
      let j = i;
      while (j < src.length && /[0-9]/.test(src[j] as string)) j++;
      if (src[j] === '<' || src[j] === '>') {
        i = lexRedirect(src, j, Number(src.slice(i, j)), tokens);
        continue;
      }
    }
    const [word, next] = lexWord(src, i);
    tokens.push({ t: 'word', w: word });
    i = next;
  }
  return tokens;
}

function lexRedirect(src: string, i: number, fd: number | undefined, tokens: Token[]): number {
  const two = src.slice(i, i + 2);
  const op = two === '>>' || two === '>&' || two === '<&' ? two : (src[i] as string);
  tokens.push({ t: 'redir', fd, op });
  return i + op.length;
}

function lexWord(src: string, start: number): [Word, number] {
  const parts: Part[] = [];
  let lit = '';
  let litQuoted = false;
  const flush = (): void => {
    if (lit !== '') parts.push({ k: 'lit', s: lit, q: litQuoted });
    lit = '';
  };
  const pushLit = (s: string, q: boolean): void => {
    if (q !== litQuoted) flush();
    litQuoted = q;
    lit += s;
  };
  let i = start;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === ' ' || c === '\t' || c === '\r' || OPERATOR_CHARS.has(c)) break;
    if (c === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) throw new ShellSyntaxError('unterminated quoted string');
      if (end === i + 1) {
        flush();
        parts.push({ k: 'lit', s: '', q: true });
      } else {
        pushLit(src.slice(i + 1, end), true);
      }
      i = end + 1;
      continue;
    }
    if (c === '"') {
      i++;
      let sawAny = false;
      while (i < src.length && src[i] !== '"') {
        const d = src[i] as string;
        sawAny = true;
        if (d === '\\' && i + 1 < src.length && '$`"\\\n'.includes(src[i + 1] as string)) {
          if (src[i + 1] !== '\n') pushLit(src[i + 1] as string, true);
          i += 2;
        } else if (d === '$' || d === '`') {
          flush();
          const [part, next] = lexExpansion(src, i, true);
          if (part === undefined) {
            pushLit('$', true);
            i++;
          } else {
            parts.push(part);
            i = next;
          }
        } else {
          pushLit(d, true);
          i++;
        }
      }
      if (i >= src.length) throw new ShellSyntaxError('unterminated quoted string');
      if (!sawAny) {
        flush();
        parts.push({ k: 'lit', s: '', q: true });
      }
      i++;
      continue;
    }
    if (c === '\\') {
      if (i + 1 < src.length) pushLit(src[i + 1] as string, true);
      i += 2;
      continue;
    }
    if (c === '$' || c === '`') {
      flush();
      const [part, next] = lexExpansion(src, i, false);
      if (part === undefined) {
        pushLit('$', false);
        i++;
      } else {
        parts.push(part);
        i = next;
      }
      continue;
    }
    pushLit(c, false);
    i++;
  }
  flush();
  return [{ parts }, i];
}

/** Finds the index just past the `close` that balances an opening at `from` (quote-aware). */
function matchClose(src: string, from: number, open: string, close: string): number {
  let depth = 1;
  let i = from;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) break;
      i = end + 1;
      continue;
    }
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === open) depth++;
    else if (c === close) {
      depth--;
      if (depth === 0) return i;
    }
    i++;
  }
  throw new ShellSyntaxError(`missing '${close}'`);
}

function lexExpansion(src: string, i: number, q: boolean): [Part | undefined, number] {
  if (src[i] === '`') {
    const end = src.indexOf('`', i + 1);
    if (end < 0) throw new ShellSyntaxError('missing \'`\'');
    return [{ k: 'cmd', src: src.slice(i + 1, end), q }, end + 1];
  }
  const next = src[i + 1];
  if (next === '(' && src[i + 2] === '(') {
    const end = matchClose(src, i + 3, '(', ')');
    if (src[end + 1] !== ')') throw new ShellSyntaxError("missing '))'");
    return [{ k: 'arith', src: src.slice(i + 3, end), q }, end + 2];
  }
  if (next === '(') {
    const end = matchClose(src, i + 2, '(', ')');
    return [{ k: 'cmd', src: src.slice(i + 2, end), q }, end + 1];
  }
  if (next === '{') {
    const end = matchClose(src, i + 2, '{', '}');
    const body = src.slice(i + 2, end);
    const m = /^([A-Za-z_][A-Za-z0-9_]*|[0-9?$#@*!])(?::?-(.*))?$/s.exec(body);
    if (m === null) throw new ShellSyntaxError(`\${${body}}: bad substitution`);
    const part: Part = { k: 'var', name: m[1] as string, q };
    if (m[2] !== undefined) part.fallback = lexWord(m[2], 0)[0].parts;
    return [part, end + 1];
  }
  if (next !== undefined && /[?$#@*!0-9]/.test(next)) return [{ k: 'var', name: next, q }, i + 2];
  const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i + 1));
  if (m === null) return [undefined, i + 1];
  return [{ k: 'var', name: m[0], q }, i + 1 + m[0].length];
}

// ---------------------------------------------------------------------------------------------
// Parser

const RESERVED: ReadonlySet<string> = new Set(['while', 'until', 'for', 'do', 'done', 'if', 'then', 'elif', 'else', 'fi', '{', '}', '!', 'in', 'case', 'esac']);

function keywordOf(tok: Token | undefined): string | undefined {
  if (tok?.t !== 'word') return undefined;
  const [p, extra] = tok.w.parts;
  if (extra !== undefined || p?.k !== 'lit' || p.q) return undefined;
  return RESERVED.has(p.s) ? p.s : undefined;
}

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parseScript(): List {
    const list = this.list(new Set());
    if (this.pos < this.tokens.length) {
      throw new ShellSyntaxError(`syntax error: unexpected "${describe(this.tokens[this.pos])}"`);
    }
    return list;
  }

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private isOp(v: string): boolean {
    const t = this.peek();
    return t?.t === 'op' && t.v === v;
  }

  private skipNewlines(): void {
    while (this.isOp('\n')) this.pos++;
  }

  private expectKeyword(k: string): void {
    if (keywordOf(this.peek()) !== k) {
      throw new ShellSyntaxError(`syntax error: unexpected ${this.peek() === undefined ? 'end of file' : `"${describe(this.peek())}"`} (expecting "${k}")`);
    }
    this.pos++;
  }

  private list(terminators: Set<string>): List {
    const list: List = [];
    for (;;) {
      this.skipNewlines();
      const tok = this.peek();
      if (tok === undefined || this.isOp(')')) break;
      const kw = keywordOf(tok);
      if (kw !== undefined && terminators.has(kw)) break;
      list.push(this.andOr());
      if (this.isOp(';') || this.isOp('&') || this.isOp('\n')) this.pos++;
      else break;
    }
    return list;
  }

  private andOr(): AndOr {
    const first = this.pipeline();
    const rest: AndOr['rest'] = [];
    while (this.isOp('&&') || this.isOp('||')) {
      const op = (this.peek() as { v: '&&' | '||' }).v;
      this.pos++;
      this.skipNewlines();
      rest.push({ op, pipeline: this.pipeline() });
    }
    return { first, rest };
  }

  private pipeline(): Pipeline {
    let negate = false;
    if (keywordOf(this.peek()) === '!') {
      negate = true;
      this.pos++;
    }
    const commands = [this.command()];
    while (this.isOp('|')) {
      this.pos++;
      this.skipNewlines();
      commands.push(this.command());
    }
    return { negate, commands };
  }

  private command(): Command {
    const tok = this.peek();
    const kw = keywordOf(tok);
    if (kw === 'while' || kw === 'until') {
      this.pos++;
      const cond = this.list(new Set(['do']));
      this.expectKeyword('do');
      const body = this.list(new Set(['done']));
      this.expectKeyword('done');
      return { k: 'loop', until: kw === 'until', cond, body };
    }
    if (kw === 'for') {
      this.pos++;
      const nameTok = this.peek();
      const name = nameTok?.t === 'word' && nameTok.w.parts.length === 1 && nameTok.w.parts[0]?.k === 'lit' ? nameTok.w.parts[0].s : '';
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ShellSyntaxError('syntax error: bad for loop variable');
      this.pos++;
      this.skipNewlines();
      let items: Word[] | undefined;
      if (keywordOf(this.peek()) === 'in') {
        this.pos++;
        items = [];
        for (let t = this.peek(); t?.t === 'word'; t = this.peek()) {
          items.push(t.w);
          this.pos++;
        }
      }
      if (this.isOp(';')) this.pos++;
      this.skipNewlines();
      this.expectKeyword('do');
      const body = this.list(new Set(['done']));
      this.expectKeyword('done');
      return { k: 'for', name, items, body };
    }
    if (kw === 'if') {
      this.pos++;
      const clauses: { cond: List; body: List }[] = [];
      let otherwise: List | undefined;
      for (;;) {
        const cond = this.list(new Set(['then']));
        this.expectKeyword('then');
        const body = this.list(new Set(['elif', 'else', 'fi']));
        clauses.push({ cond, body });
        const next = keywordOf(this.peek());
        this.pos++;
        if (next === 'elif') continue;
        if (next === 'else') {
          otherwise = this.list(new Set(['fi']));
          this.expectKeyword('fi');
        } else if (next !== 'fi') {
          throw new ShellSyntaxError('syntax error: unexpected end of file (expecting "fi")');
        }
        break;
      }
      return { k: 'if', clauses, otherwise };
    }
    if (kw === '{') {
      this.pos++;
      const body = this.list(new Set(['}']));
      this.expectKeyword('}');
      return { k: 'group', body, subshell: false };
    }
    if (this.isOp('(')) {
      this.pos++;
      const body = this.list(new Set());
      if (!this.isOp(')')) throw new ShellSyntaxError("syntax error: missing ')'");
      this.pos++;
      return { k: 'group', body, subshell: true };
    }
    if (kw !== undefined && kw !== 'in') {
      throw new ShellSyntaxError(`syntax error: unexpected "${kw}"`);
    }
    return this.simple();
  }

  private simple(): Command {
    const assigns: { name: string; value: Word }[] = [];
    const words: Word[] = [];
    const redirects: Redirect[] = [];
    for (;;) {
      const tok = this.peek();
      if (tok === undefined || tok.t === 'op') break;
      if (tok.t === 'redir') {
        this.pos++;
        const target = this.peek();
        if (target?.t !== 'word') throw new ShellSyntaxError('syntax error: redirection without a target');
        this.pos++;
        const fd = tok.fd ?? (tok.op.startsWith('<') ? 0 : 1);
        redirects.push({ fd, op: tok.op, target: target.w });
        continue;
      }
      const first = tok.w.parts[0];
      if (words.length === 0 && first?.k === 'lit' && !first.q) {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.s);
        if (m !== null) {
          const rest: Part[] = [{ k: 'lit', s: first.s.slice(m[0].length), q: false }, ...tok.w.parts.slice(1)];
          assigns.push({ name: m[1] as string, value: { parts: rest } });
          this.pos++;
          continue;
        }
      }
      words.push(tok.w);
      this.pos++;
    }
    if (assigns.length === 0 && words.length === 0 && redirects.length === 0) {
      throw new ShellSyntaxError(`syntax error: unexpected "${describe(this.peek())}"`);
    }
    return { k: 'simple', assigns, words, redirects };
  }
}

function describe(tok: Token | undefined): string {
  if (tok === undefined) return 'end of file';
  if (tok.t === 'op') return tok.v === '\n' ? 'newline' : tok.v;
  if (tok.t === 'redir') return tok.op;
  return tok.w.parts.map((p) => (p.k === 'lit' ? p.s : '$')).join('');
}

export function parseShellScript(src: string): List {
  return new Parser(lex(src)).parseScript();
}

// ---------------------------------------------------------------------------------------------
// Interpreter

class ShellExit {
  constructor(readonly code: number) {}
}

interface ShellIo extends CommandIo {
  stdin: string;
}

/** The state of one running shell: variables, `$?`, positional parameters. */
class ShellInterpreter {
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

/** Integer arithmetic of `$((…))`: + - * / % ( ), comparisons, && ||, unary - and !. */
export function evaluateArithmetic(src: string, lookup: (name: string) => string | undefined): number {
  const tokens = src.match(/\d+|[A-Za-z_][A-Za-z0-9_]*|&&|\|\||==|!=|<=|>=|[-+*/%()<>!]/g) ?? [];
  if (tokens.join('') !== src.replace(/\s+/g, '')) throw new ShellSyntaxError(`arithmetic syntax error: "${src}"`);
  let pos = 0;
  const peek = (): string | undefined => tokens[pos];
  const binary = (next: () => number, ops: Record<string, (a: number, b: number) => number>): (() => number) => () => {
    let left = next();
    for (let op = peek(); op !== undefined && op in ops; op = peek()) {
      pos++;
      left = (ops[op] as (a: number, b: number) => number)(left, next());
    }
    return left;
  };
  const primary = (): number => {
    const t = tokens[pos++];
    if (t === undefined) throw new ShellSyntaxError(`arithmetic syntax error: "${src}"`);
    if (t === '(') {
      const v = orExpr();
      if (tokens[pos++] !== ')') throw new ShellSyntaxError(`arithmetic syntax error: "${src}"`);
      return v;
    }
    if (t === '-') return -primary();
    if (t === '+') return primary();
    if (t === '!') return primary() === 0 ? 1 : 0;
    if (/^\d+$/.test(t)) return Number(t);
    if (/^[A-Za-z_]/.test(t)) {
      const v = Number(lookup(t) ?? '0');
      return Number.isFinite(v) ? Math.trunc(v) : 0;
    }
    throw new ShellSyntaxError(`arithmetic syntax error: "${src}"`);
  };
  const div = (a: number, b: number): number => {
    if (b === 0) throw new ShellSyntaxError('arithmetic: division by zero');
    return Math.trunc(a / b);
  };
  const mul = binary(primary, { '*': (a, b) => a * b, '/': div, '%': (a, b) => (b === 0 ? div(a, b) : a % b) });
  const add = binary(mul, { '+': (a, b) => a + b, '-': (a, b) => a - b });
  const cmp = binary(add, { '<': (a, b) => +(a < b), '>': (a, b) => +(a > b), '<=': (a, b) => +(a <= b), '>=': (a, b) => +(a >= b) });
  const eq = binary(cmp, { '==': (a, b) => +(a === b), '!=': (a, b) => +(a !== b) });
  const and = binary(eq, { '&&': (a, b) => +(a !== 0 && b !== 0) });
  const orExpr = binary(and, { '||': (a, b) => +(a !== 0 || b !== 0) });
  const value = orExpr();
  if (pos !== tokens.length) throw new ShellSyntaxError(`arithmetic syntax error: "${src}"`);
  return value;
}

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
