import { ShellSyntaxError, type Part, type Word } from './syntax.js';

/**
 * The lexer of the shell: token recognition (POSIX XCU 2.3) with quoting (XCU 2.2: backslash,
 * single and double quotes), comments, line continuations, the control and redirection operators,
 * and the recognition of the expansions inside words (XCU 2.6: `$VAR`, `${VAR:-word}`, `$?`,
 * `$(…)`, backquotes, `$((…))`), which the interpreter expands later.
 */

export type Token =
  | { t: 'word'; w: Word }
  | { t: 'op'; v: string }
  | { t: 'redir'; fd: number | undefined; op: string };

const OPERATOR_CHARS: ReadonlySet<string> = new Set([';', '&', '|', '(', ')', '<', '>', '\n']);

export function lex(src: string): Token[] {
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

export function lexRedirect(src: string, i: number, fd: number | undefined, tokens: Token[]): number {
  const two = src.slice(i, i + 2);
  const op = two === '>>' || two === '>&' || two === '<&' ? two : (src[i] as string);
  tokens.push({ t: 'redir', fd, op });
  return i + op.length;
}

export function lexWord(src: string, start: number): [Word, number] {
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

export function lexExpansion(src: string, i: number, q: boolean): [Part | undefined, number] {
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
