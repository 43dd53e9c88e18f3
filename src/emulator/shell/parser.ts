import { lex, type Token } from './lexer.js';
import { ShellSyntaxError, type AndOr, type Command, type List, type Pipeline, type Redirect, type Part, type Word } from './syntax.js';

/**
 * The parser of the shell: the POSIX sh grammar (XCU 2.10) for what container commands and
 * critest use — lists with `;`, `&` and newlines, `&&`/`||`, pipelines with `!`, `while`/`until`,
 * `for … in`, `if/elif/else`, `{ …; }` and `( … )`, and simple commands with assignments and
 * redirections — producing the syntax tree of syntax.ts. Reserved words are recognised only
 * where the grammar expects them (XCU 2.4).
 */

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
