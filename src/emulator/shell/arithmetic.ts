import { ShellSyntaxError } from './syntax.js';

/**
 * Arithmetic expansion, `$((…))` (POSIX XCU 2.6.4): signed integer arithmetic with the C operators
 * the shell needs; variables are looked up by name, unset or non-numeric ones count as 0.
 */

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
