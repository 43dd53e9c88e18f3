import type { CommandContext } from './command-registry.js';
import { untilSignalled } from './pod-web-server.js';
import { containerPath } from './container-files.js';
import { readContainerFile } from './file-commands.js';

/**
 * Text utilities of a container's shell as busybox and Windows give them: echo, printf, test
 * and [, seq, grep, findstr, tail and env/printenv. Lines end in CRLF where Windows prints them.
 */

export const eol = (ctx: CommandContext): string => (ctx.target.os === 'windows' ? '\r\n' : '\n');

export function echo(ctx: CommandContext): number {
  let args = ctx.argv.slice(1);
  let newline = true;
  let escapes = false;
  while (args[0] !== undefined && /^-[neE]+$/.test(args[0])) {
    const flags = args[0];
    if (flags.includes('n')) newline = false;
    if (flags.includes('e')) escapes = true;
    if (flags.includes('E')) escapes = false;
    args = args.slice(1);
  }
  let text = args.join(' ');
  if (escapes) {
    const cut = text.indexOf('\\c');
    if (cut >= 0) {
      text = text.slice(0, cut);
      newline = false;
    }
    text = unescape(text);
  }
  ctx.stdout(newline ? `${text}\n` : text);
  return 0;
}

function unescape(text: string): string {
  return text.replace(/\\([nt\\rae0]|x[0-9a-fA-F]{1,2})/g, (_, c: string) => {
    switch (c[0]) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'a': return '\x07';
      case 'e': return '\x1b';
      case '0': return '\0';
      case 'x': return String.fromCharCode(parseInt(c.slice(1), 16));
      default: return '\\';
    }
  });
}

export function printf(ctx: CommandContext): number {
  const [format, ...args] = ctx.argv.slice(1);
  if (format === undefined) {
    ctx.stderr('printf: usage: printf FORMAT [ARGUMENT]...\n');
    return 2;
  }
  let i = 0;
  let out = '';
  // The format is reused while arguments remain, as POSIX printf does; bounded by the argument count.
  do {
    out += unescape(format).replace(/%([sdi%])/g, (_, spec: string) => {
      if (spec === '%') return '%';
      const arg = args[i++] ?? '';
      return spec === 's' ? arg : String(Math.trunc(Number(arg) || 0));
    });
  } while (i < args.length && /%[sdi]/.test(format));
  ctx.stdout(out);
  return 0;
}

export function test(ctx: CommandContext, args: string[]): number {
  const fileExists = (p: string): boolean => {
    const path = containerPath(ctx.target, p);
    return ctx.target.files.has(path) || ['/', '/tmp', '/etc', '/bin', '/usr', '/var', '/proc', '/dev'].includes(path);
  };
  const evaluate = (a: string[]): boolean => {
    if (a[0] === '!') return !evaluate(a.slice(1));
    if (a.length === 0) return false;
    if (a.length === 1) return (a[0] as string) !== '';
    if (a.length === 2) {
      const [op, v = ''] = a;
      switch (op) {
        case '-n': return v !== '';
        case '-z': return v === '';
        case '-e':
        case '-f':
        case '-d':
        case '-r':
          return fileExists(v);
        default:
          throw new Error(`${op}: unary operator expected`);
      }
    }
    const [l = '', op, r = ''] = a;
    const num = (s: string): number => {
      if (!/^-?[0-9]+$/.test(s.trim())) throw new Error(`${s}: integer expression expected`);
      return Number(s);
    };
    switch (op) {
      case '=':
      case '==': return l === r;
      case '!=': return l !== r;
      case '-eq': return num(l) === num(r);
      case '-ne': return num(l) !== num(r);
      case '-lt': return num(l) < num(r);
      case '-le': return num(l) <= num(r);
      case '-gt': return num(l) > num(r);
      case '-ge': return num(l) >= num(r);
      default: throw new Error(`${op ?? ''}: binary operator expected`);
    }
  };
  try {
    return evaluate(args) ? 0 : 1;
  } catch (err) {
    ctx.stderr(`test: ${(err as Error).message}\n`);
    return 2;
  }
}

export async function tail(ctx: CommandContext): Promise<number> {
  if (ctx.argv.includes('-f') || ctx.argv.includes('-F')) {
    await untilSignalled(ctx);
    return 0;
  }
  const n = ctx.argv.includes('-n') ? Number(ctx.argv[ctx.argv.indexOf('-n') + 1]) : 10;
  const lines = ctx.stdin.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const out = lines.slice(-n);
  if (out.length > 0) ctx.stdout(`${out.join('\n')}\n`);
  return 0;
}

export function printenv(ctx: CommandContext): number {
  const names = ctx.argv.slice(1);
  if (names.length > 0) {
    let status = 0;
    for (const n of names) {
      const v = ctx.env.get(n);
      if (v === undefined) status = 1;
      else ctx.stdout(`${v}\n`);
    }
    return status;
  }
  for (const [k, v] of ctx.env) ctx.stdout(`${k}=${v}\n`);
  return 0;
}

export function seq(ctx: CommandContext): number {
  const nums = ctx.argv.slice(1).map(Number);
  const [first, inc, last] = nums.length === 1 ? [1, 1, nums[0]] : nums.length === 2 ? [nums[0], 1, nums[1]] : nums;
  if ([first, inc, last].some((n) => n === undefined || !Number.isFinite(n)) || inc === 0) {
    ctx.stderr('seq: invalid argument\n');
    return 1;
  }
  const out: string[] = [];
  for (let n = first as number; (inc as number) > 0 ? n <= (last as number) : n >= (last as number); n += inc as number) {
    out.push(String(n));
    if (out.length > 1_000_000) break;
  }
  if (out.length > 0) ctx.stdout(`${out.join('\n')}\n`);
  return 0;
}

function filterLines(ctx: CommandContext, test: (line: string) => boolean, quiet: boolean): number {
  const lines = ctx.stdin.split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  const hits = lines.filter(test);
  if (!quiet) for (const l of hits) ctx.stdout(`${l}${eol(ctx)}`);
  return hits.length > 0 ? 0 : 1;
}

export async function grep(ctx: CommandContext): Promise<number> {
  const args = ctx.argv.slice(1);
  const flags = args.filter((a) => a.startsWith('-')).join('');
  const [pattern, ...files] = args.filter((a) => !a.startsWith('-'));
  if (pattern === undefined) {
    ctx.stderr('grep: no pattern\n');
    return 2;
  }
  const re = new RegExp(flags.includes('F') ? pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : pattern, flags.includes('i') ? 'i' : '');
  const invert = flags.includes('v');
  let input = ctx.stdin;
  if (files.length > 0) {
    input = '';
    for (const f of files) {
      const content = await readContainerFile(ctx, f);
      if (content === undefined) {
        ctx.stderr(`grep: ${f}: No such file or directory\n`);
        return 2;
      }
      input += content;
    }
  }
  return filterLines({ ...ctx, stdin: input }, (l) => re.test(l) !== invert, flags.includes('q'));
}

export function findstr(ctx: CommandContext): number {
  const args = ctx.argv.slice(1);
  const insensitive = args.some((a) => a.toLowerCase() === '/i');
  const words = args.filter((a) => !a.startsWith('/')).flatMap((a) => a.split(' ')).filter((w) => w !== '');
  if (words.length === 0) {
    ctx.stderr('FINDSTR: Bad command line\r\n');
    return 2;
  }
  const norm = (s: string): string => (insensitive ? s.toLowerCase() : s);
  return filterLines(ctx, (l) => words.some((w) => norm(l).includes(norm(w))), false);
}
