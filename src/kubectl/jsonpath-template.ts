/**
 * kubectl's JSONPath templates (`-o jsonpath=…`, `-o custom-columns=…`): literal text with
 * `{expression}` actions, `{range EXPR}…{end}` loops and `{"\n"}` string literals, printed as
 * k8s.io/client-go/util/jsonpath (v0.34.12) prints results — one action's values joined by
 * spaces, maps and lists as compact JSON with sorted keys, strings bare, null as `null`.
 *
 * The template (text, actions, range/end, quotes) is parsed here; each expression is evaluated by
 * jsonpath-plus. Differences from kubectl's own evaluator, which has its own dialect:
 * - filters `[?(…)]` are jsonpath-plus's safe JavaScript subset: `==` compares as JavaScript
 *   does (`"1" == 1` holds), and `&&`, `||`, `!` work (kubectl knows only one comparison);
 * - missing keys print nothing, as kubectl's `--allow-missing-template-keys=true` (its default);
 *   an index out of range also prints nothing where kubectl may report an error;
 * - the order of `..` (recursive descent) results may differ for maps.
 */
import { JSONPath } from 'jsonpath-plus';

export class JsonPathTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonPathTemplateError';
  }
}

type TemplateNode =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'expr'; readonly path: string }
  | { readonly kind: 'range'; readonly path: string; readonly body: readonly TemplateNode[] };

export interface JsonPathTemplate {
  readonly source: string;
  readonly nodes: readonly TemplateNode[];
}

/** kubectl's UnquoteExtend: `"…"` and `'…'` with backslash escapes (`{"\n"}`, `{'\t'}`). */
function unquote(literal: string): string {
  const inner = literal.slice(1, -1);
  const asJson = literal.startsWith("'") ? inner.replace(/\\'/g, "'").replace(/(^|[^\\])"/g, '$1\\"') : inner;
  try {
    return JSON.parse(`"${asJson}"`) as string;
  } catch {
    throw new JsonPathTemplateError(`invalid string literal ${literal}`);
  }
}

/** An expression of kubectl's dialect as a jsonpath-plus path against the current object. */
function toPath(expression: string): string {
  // A union of quoted keys (`['name','namespace']`) is jsonpath-plus's `[name,namespace]`.
  const e = expression.trim().replace(/\[\s*'[^']*'(?:\s*,\s*'[^']*')+\s*\]/g, (union) => `[${union.slice(1, -1).split(',').map((k) => k.trim().slice(1, -1)).join(',')}]`);
  if (e === '' || e === '@' || e === '$') return '$';
  if (e.startsWith('@')) return `$${e.slice(1)}`;
  if (e.startsWith('$')) return e;
  if (e.startsWith('.') || e.startsWith('[')) return `$${e}`;
  return `$.${e}`;
}

/** The actions of a template: `{…}` with quotes and brackets inside kept whole. */
function tokenize(source: string): Array<{ kind: 'text' | 'action'; value: string }> {
  const tokens: Array<{ kind: 'text' | 'action'; value: string }> = [];
  let i = 0;
  while (i < source.length) {
    const open = source.indexOf('{', i);
    if (open === -1) {
      tokens.push({ kind: 'text', value: source.slice(i) });
      break;
    }
    if (open > i) tokens.push({ kind: 'text', value: source.slice(i, open) });
    let j = open + 1;
    let quote: string | undefined;
    let depth = 0;
    for (; j < source.length; j++) {
      const c = source[j]!;
      if (quote !== undefined) {
        if (c === '\\') j++;
        else if (c === quote) quote = undefined;
        continue;
      }
      if (c === '"' || c === "'") quote = c;
      else if (c === '[' || c === '(') depth++;
      else if (c === ']' || c === ')') depth--;
      else if (c === '}' && depth <= 0) break;
      else if (c === '{') throw new JsonPathTemplateError(`unrecognized character in action: U+007B '{'`);
    }
    if (j >= source.length) throw new JsonPathTemplateError('unclosed action');
    tokens.push({ kind: 'action', value: source.slice(open + 1, j).trim() });
    i = j + 1;
  }
  return tokens;
}

/** Parses a template; errors name the problem as kubectl's parser does (`unclosed action`, …). */
export function parseJsonPathTemplate(source: string): JsonPathTemplate {
  const tokens = tokenize(source);
  let at = 0;
  const parseBlock = (inRange: boolean): TemplateNode[] => {
    const nodes: TemplateNode[] = [];
    while (at < tokens.length) {
      const token = tokens[at++]!;
      if (token.kind === 'text') {
        nodes.push({ kind: 'text', text: token.value });
        continue;
      }
      const action = token.value;
      if (action === 'end') {
        if (!inRange) throw new JsonPathTemplateError('not in range, nothing to end');
        return nodes;
      }
      const range = /^range\s+(.+)$/s.exec(action);
      if (range !== null) {
        const path = toPath(range[1]!);
        checkPath(path);
        nodes.push({ kind: 'range', path, body: parseBlock(true) });
        continue;
      }
      if (/^(['"]).*\1$/s.test(action)) {
        nodes.push({ kind: 'text', text: unquote(action) });
        continue;
      }
      const path = toPath(action);
      checkPath(path);
      nodes.push({ kind: 'expr', path });
    }
    // A range without {end} runs to the end of the template, as kubectl's does.
    return nodes;
  };
  return { source, nodes: parseBlock(false) };
}

/** jsonpath-plus parses lazily: a first evaluation on an empty object finds syntax errors. */
function checkPath(path: string): void {
  try {
    JSONPath({ path, json: {}, wrap: true, eval: 'safe' });
  } catch (err) {
    throw new JsonPathTemplateError(`invalid expression ${path.replace(/^\$/, '')}: ${(err as Error).message}`);
  }
}

function evaluate(path: string, data: unknown): unknown[] {
  if (path === '$') return [data];
  if (data === null || typeof data !== 'object') return [];
  const found = JSONPath({ path, json: data as object, wrap: true, eval: 'safe' }) as unknown[] | undefined;
  return found ?? [];
}

/** Go's json.Marshal: object keys sorted, `<`, `>`, `&` escaped as \u003c, \u003e, \u0026. */
export function goJson(value: unknown): string {
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])]));
    }
    return v;
  };
  return (JSON.stringify(sorted(value)) ?? 'null').replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
}

/** One result as PrintResults writes it: maps and lists as JSON, the rest as fmt.Fprint. */
function resultText(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'object') return goJson(value);
  return String(value);
}

/** fmt.Sprint of a decoded JSON value (custom-columns): `map[a:1 b:2]`, `[x y]`, `<nil>`. */
export function goSprint(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (Array.isArray(value)) return `[${value.map(goSprint).join(' ')}]`;
  if (typeof value === 'object') {
    const entries = Object.keys(value).sort().map((k) => `${k}:${goSprint((value as Record<string, unknown>)[k])}`);
    return `map[${entries.join(' ')}]`;
  }
  return String(value);
}

/** Every action's values, in template order (the raw results, for custom-columns). */
export function findResults(template: JsonPathTemplate, data: unknown): unknown[][] {
  const out: unknown[][] = [];
  const walk = (nodes: readonly TemplateNode[], current: unknown): void => {
    for (const node of nodes) {
      if (node.kind === 'text') out.push([node.text]);
      else if (node.kind === 'expr') out.push(evaluate(node.path, current));
      else for (const item of evaluate(node.path, current)) walk(node.body, item);
    }
  };
  walk(template.nodes, data);
  return out;
}

/** The template applied to `data`, as `kubectl get -o jsonpath=…` prints it (no newline added). */
export function executeJsonPathTemplate(template: JsonPathTemplate, data: unknown): string {
  let out = '';
  const walk = (nodes: readonly TemplateNode[], current: unknown): void => {
    for (const node of nodes) {
      if (node.kind === 'text') out += node.text;
      else if (node.kind === 'expr') out += evaluate(node.path, current).map(resultText).join(' ');
      else for (const item of evaluate(node.path, current)) walk(node.body, item);
    }
  };
  walk(template.nodes, data);
  return out;
}

/**
 * kubectl's RelaxedJSONPathExpression for custom columns: `metadata.name`, `.metadata.name`,
 * `{metadata.name}` and `{.metadata.name}` all mean `{.metadata.name}`.
 */
export function relaxedJsonPathExpression(expression: string): string {
  if (expression === '') return expression;
  const m = /^\{\.?([^{}]+)\}$|^\.?([^{}]+)$/.exec(expression);
  if (m === null) throw new JsonPathTemplateError("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'");
  return `{.${m[1] ?? m[2]}}`;
}
