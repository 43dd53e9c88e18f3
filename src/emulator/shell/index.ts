/**
 * A small POSIX shell for the command emulator: what container commands and critest use —
 * `;`, `&&`, `||`, `|`, `!`, `while`/`until`/`for … do … done`, `if … fi`, `{ …; }`, quoting,
 * `$VAR`, `${VAR:-word}`, `$?`, `$(…)`, `$((…))`, and the redirections `>&2`, `2>&1`,
 * `>/dev/null`, `> file`, `>> file`. A script goes through the lexer (lexer.ts), the parser
 * (parser.ts, to the tree of syntax.ts) and the interpreter (interpreter.ts, with
 * arithmetic.ts); sh.ts is the `sh` command itself.
 */
export { evaluateArithmetic } from './arithmetic.js';
export { MAX_LOOP_ITERATIONS } from './interpreter.js';
export { parseShellScript } from './parser.js';
export { shellCommand } from './sh.js';
export { ShellSyntaxError } from './syntax.js';
