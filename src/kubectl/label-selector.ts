/**
 * Label selectors (`-l, --selector`) as k8s.io/apimachinery/pkg/labels (v0.34.12) parses and
 * matches them: `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`,
 * `key`, `!key`, `key>N`, `key<N`, joined by commas (all must hold). Its lexer, parser and error
 * texts are reproduced (`unable to parse requirement: found '', expected: ',' or ')'`).
 */

export class LabelSelectorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabelSelectorError';
  }
}

type Operator = 'exists' | '!' | '=' | '==' | '!=' | 'in' | 'notin' | 'gt' | 'lt';

export interface Requirement {
  readonly key: string;
  readonly operator: Operator;
  readonly values: readonly string[];
}

export type LabelSelector = readonly Requirement[];

type TokenKind = 'end' | 'id' | ')' | ',' | '!' | '==' | '=' | '>' | 'in' | '<' | '!=' | 'notin' | '(' | 'error';
interface Token {
  readonly kind: TokenKind;
  readonly literal: string;
}

const literalTokens: Readonly<Record<string, TokenKind>> = { ')': ')', ',': ',', '!': '!', '==': '==', '=': '=', '>': '>', in: 'in', '<': '<', '!=': '!=', notin: 'notin', '(': '(' };
const isWhitespace = (c: string): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n';
const isSpecial = (c: string): boolean => '=!(),><'.includes(c);

function lex(s: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  for (;;) {
    while (pos < s.length && isWhitespace(s[pos]!)) pos++;
    if (pos >= s.length) {
      tokens.push({ kind: 'end', literal: '' });
      return tokens;
    }
    if (isSpecial(s[pos]!)) {
      // The longest run of special symbols that is still a token.
      let buffer = '';
      let last: Token | undefined;
      while (pos < s.length && isSpecial(s[pos]!)) {
        buffer += s[pos];
        const kind = literalTokens[buffer];
        if (kind !== undefined) last = { kind, literal: buffer };
        else if (last !== undefined) break;
        pos++;
      }
      tokens.push(last ?? { kind: 'error', literal: `error expected: keyword found '${buffer}'` });
      if (last === undefined) return tokens;
      continue;
    }
    let word = '';
    while (pos < s.length && !isSpecial(s[pos]!) && !isWhitespace(s[pos]!)) word += s[pos++];
    tokens.push({ kind: word === 'in' || word === 'notin' ? (word as TokenKind) : 'id', literal: word });
  }
}

const NAME_RE = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS1123_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const nameText =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const valueText =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/** validation.IsQualifiedName, as labels.validateLabelKey reports it. */
function validateKey(key: string): void {
  const invalid = (why: string) => new LabelSelectorError(`<nil>: Invalid value: ${JSON.stringify(key)}: ${why}`);
  const parts = key.split('/');
  let name = key;
  if (parts.length === 2) {
    const [prefix, rest] = parts as [string, string];
    if (prefix === '') throw invalid('prefix part must be non-empty');
    if (prefix.length > 253 || !DNS1123_SUBDOMAIN_RE.test(prefix)) {
      throw invalid(
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      );
    }
    name = rest;
  } else if (parts.length > 2) {
    throw invalid("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
  }
  if (name === '') throw invalid('name part must be non-empty');
  if (name.length > 63) throw invalid('name part must be no more than 63 characters');
  if (!NAME_RE.test(name)) throw invalid(nameText);
}

/** labels.NewRequirement's checks of the values. */
function newRequirement(key: string, operator: Operator, values: string[]): Requirement {
  if ((operator === 'in' || operator === 'notin') && values.length === 0) throw new LabelSelectorError("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty");
  if ((operator === '=' || operator === '==' || operator === '!=') && values.length !== 1) throw new LabelSelectorError("values: Invalid value: []string{}: exact-match compatibility requires one single value");
  if (operator === 'gt' || operator === 'lt') {
    if (values.length !== 1) throw new LabelSelectorError("values: Invalid value: []string{}: for 'Gt', 'Lt' operators, exactly one value is required");
    if (!/^[+-]?\d+$/.test(values[0]!)) throw new LabelSelectorError(`values[0]: Invalid value: ${JSON.stringify(values[0])}: for 'Gt', 'Lt' operators, the value must be an integer`);
  }
  for (const [i, v] of values.entries()) {
    if (operator === 'gt' || operator === 'lt') continue;
    if (v.length > 63) throw new LabelSelectorError(`values[${i}][${key}]: Invalid value: ${JSON.stringify(v)}: must be no more than 63 characters`);
    if (!VALUE_RE.test(v)) throw new LabelSelectorError(`values[${i}][${key}]: Invalid value: ${JSON.stringify(v)}: ${valueText}`);
  }
  return { key, operator, values };
}

/** labels.Parse. An empty selector selects everything. */
export function parseLabelSelector(selector: string): LabelSelector {
  const tokens = lex(selector);
  let position = 0;
  // In the "values" context `in` and `notin` are identifiers.
  const asValue = (t: Token): Token => (t.kind === 'in' || t.kind === 'notin' ? { kind: 'id', literal: t.literal } : t);
  const lookahead = (values = true): Token => (values ? asValue(tokens[position]!) : tokens[position]!);
  const consume = (values = true): Token => (values ? asValue(tokens[position++]!) : tokens[position++]!);

  const identifiersList = (): string[] => {
    const set = new Set<string>();
    for (;;) {
      const t = consume();
      if (t.kind === 'id') {
        set.add(t.literal);
        const t2 = lookahead();
        if (t2.kind === ',') continue;
        if (t2.kind === ')') return [...set];
        throw new LabelSelectorError(`found '${t2.literal}', expected: ',' or ')'`);
      } else if (t.kind === ',') {
        if (set.size === 0) set.add('');
        const t2 = lookahead();
        if (t2.kind === ')') {
          set.add('');
          return [...set];
        }
        if (t2.kind === ',') {
          consume();
          set.add('');
        }
      } else throw new LabelSelectorError(`found '${t.literal}', expected: ',', or identifier`);
    }
  };
  const values = (): string[] => {
    const open = consume();
    if (open.kind !== '(') throw new LabelSelectorError(`found '${open.literal}' expected: '('`);
    const t = lookahead();
    if (t.kind === 'id' || t.kind === ',') {
      const list = identifiersList();
      if (consume().kind !== ')') throw new LabelSelectorError(`found '${t.literal}', expected: ')'`);
      return list;
    }
    if (t.kind === ')') {
      consume();
      return [''];
    }
    throw new LabelSelectorError(`found '${t.literal}', expected: ',', ')' or identifier`);
  };
  const exactValue = (): string[] => {
    const t = lookahead();
    if (t.kind === 'end' || t.kind === ',') return [''];
    const v = consume();
    if (v.kind === 'id') return [v.literal];
    throw new LabelSelectorError(`found '${v.literal}', expected: identifier`);
  };
  const requirement = (): Requirement => {
    let t = consume();
    let operator: Operator | undefined;
    if (t.kind === '!') {
      operator = '!';
      t = consume();
    }
    if (t.kind !== 'id') throw new LabelSelectorError(`found '${t.literal}', expected: identifier`);
    const key = t.literal;
    validateKey(key);
    const next = lookahead();
    if (next.kind === 'end' || next.kind === ',') return newRequirement(key, operator ?? 'exists', []);
    if (operator === '!') return newRequirement(key, '!', []);
    const op = consume(false);
    const ops: Partial<Record<TokenKind, Operator>> = { in: 'in', '=': '=', '==': '==', '>': 'gt', '<': 'lt', notin: 'notin', '!=': '!=' };
    const parsed = ops[op.kind];
    if (parsed === undefined) throw new LabelSelectorError(`found '${op.literal}', expected: in, notin, =, ==, !=, gt, lt`);
    const vals = parsed === 'in' || parsed === 'notin' ? values() : exactValue();
    return newRequirement(key, parsed, [...new Set(vals)].sort());
  };

  const requirements: Requirement[] = [];
  for (;;) {
    const t = lookahead();
    if (t.kind === 'id' || t.kind === '!') {
      try {
        requirements.push(requirement());
      } catch (err) {
        if (err instanceof LabelSelectorError) throw new LabelSelectorError(`unable to parse requirement: ${err.message}`);
        throw err;
      }
      const after = consume();
      if (after.kind === 'end') return requirements;
      if (after.kind === ',') {
        const t2 = lookahead();
        if (t2.kind !== 'id' && t2.kind !== '!') throw new LabelSelectorError(`found '${t2.literal}', expected: identifier after ','`);
        continue;
      }
      throw new LabelSelectorError(`found '${after.literal}', expected: ',' or 'end of string'`);
    }
    if (t.kind === 'end') return requirements;
    throw new LabelSelectorError(`found '${t.literal}', expected: !, identifier, or 'end of string'`);
  }
}

/** Whether labels satisfy every requirement (labels.Requirement.Matches). */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const set = labels ?? {};
  const has = (k: string) => Object.prototype.hasOwnProperty.call(set, k);
  return selector.every(({ key, operator, values }) => {
    switch (operator) {
      case 'exists':
        return has(key);
      case '!':
        return !has(key);
      case '=':
      case '==':
      case 'in':
        return has(key) && values.includes(set[key]!);
      case '!=':
      case 'notin':
        return !has(key) || !values.includes(set[key]!);
      case 'gt':
      case 'lt': {
        if (!has(key) || !/^[+-]?\d+$/.test(set[key]!)) return false;
        const have = BigInt(set[key]!);
        const want = BigInt(values[0]!);
        return operator === 'gt' ? have > want : have < want;
      }
    }
  });
}
