/**
 * The syntax errors of Go's encoding/json (scanner.go, Go 1.24), for texts the kubelet and the
 * windows-gmsa webhook parse with json.Unmarshal: a user who gives broken JSON reads what a real
 * node or webhook prints ("invalid character 'x' looking for beginning of value", "unexpected end
 * of JSON input"), not JavaScript's wording. The scanner below walks the input as Go's state
 * machine does and names the first byte it refuses, in the state it refused it.
 */

/** quoteChar: the byte as a Go character literal ('\'' and '"' special, others strconv.Quote'd). */
function quoteChar(byte: number): string {
  if (byte === 0x27) return "'\\''";
  if (byte === 0x22) return `'"'`;
  const escapes: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 0x5c: '\\\\' };
  if (escapes[byte] !== undefined) return `'${escapes[byte]}'`;
  if (byte < 0x20 || byte === 0x7f) return `'\\x${byte.toString(16).padStart(2, '0')}'`;
  // string(c) of a byte ≥ 0x80 is the rune of that value; the C1 controls are not printable.
  if (byte >= 0x80 && byte < 0xa0) return `'\\u${byte.toString(16).padStart(4, '0')}'`;
  return `'${String.fromCharCode(byte)}'`;
}

class GoSyntaxError extends Error {}
const endOfInput = 'unexpected end of JSON input';

/** The error json.Unmarshal (checkValid) reports for `text`, or undefined when it is valid JSON. */
export function goJsonSyntaxError(text: string): string | undefined {
  const b = Buffer.from(text, 'utf8');
  let i = 0;
  const fail = (context: string): never => {
    if (i >= b.length) throw new GoSyntaxError(endOfInput);
    throw new GoSyntaxError(`invalid character ${quoteChar(b[i]!)} ${context}`);
  };
  const ws = (): void => {
    while (i < b.length && (b[i] === 0x20 || b[i] === 0x09 || b[i] === 0x0a || b[i] === 0x0d)) i++;
  };
  const digit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
  const hex = (c: number | undefined): boolean => c !== undefined && (digit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46));

  const string = (): void => {
    i++; // the opening quote
    for (;;) {
      const c = b[i];
      if (c === undefined) fail('');
      if (c === 0x22) {
        i++;
        return;
      }
      if (c! < 0x20) fail('in string literal');
      if (c === 0x5c) {
        i++;
        const e = b[i];
        if (e === 0x75) {
          i++;
          for (let k = 0; k < 4; k++, i++) if (!hex(b[i])) fail('in \\u hexadecimal character escape');
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(String.fromCharCode(e))) fail('in string escape code');
      }
      i++;
    }
  };
  const number = (): void => {
    if (b[i] === 0x2d) {
      i++;
      if (!digit(b[i])) fail('in numeric literal');
    }
    if (b[i] === 0x30) i++;
    else while (digit(b[i])) i++;
    if (b[i] === 0x2e) {
      i++;
      if (!digit(b[i])) fail('after decimal point in numeric literal');
      while (digit(b[i])) i++;
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      i++;
      if (b[i] === 0x2b || b[i] === 0x2d) i++;
      if (!digit(b[i])) fail('in exponent of numeric literal');
      while (digit(b[i])) i++;
    }
  };
  const literal = (word: string): void => {
    i++;
    for (const expected of word.slice(1)) {
      if (b[i] !== expected.charCodeAt(0)) fail(`in literal ${word} (expecting ${quoteChar(expected.charCodeAt(0))})`);
      i++;
    }
  };
  const value = (): void => {
    ws();
    const c = b[i];
    if (c === 0x7b) object();
    else if (c === 0x5b) array();
    else if (c === 0x22) string();
    else if (c === 0x2d || digit(c)) number();
    else if (c === 0x74) literal('true');
    else if (c === 0x66) literal('false');
    else if (c === 0x6e) literal('null');
    else fail('looking for beginning of value');
  };
  const object = (): void => {
    i++;
    ws();
    if (b[i] === 0x7d) {
      i++;
      return;
    }
    for (;;) {
      if (b[i] !== 0x22) fail('looking for beginning of object key string');
      string();
      ws();
      if (b[i] !== 0x3a) fail('after object key');
      i++;
      value();
      ws();
      if (b[i] === 0x7d) {
        i++;
        return;
      }
      if (b[i] !== 0x2c) fail('after object key:value pair');
      i++;
      ws();
    }
  };
  const array = (): void => {
    i++;
    ws();
    if (b[i] === 0x5d) {
      i++;
      return;
    }
    for (;;) {
      value();
      ws();
      if (b[i] === 0x5d) {
        i++;
        return;
      }
      if (b[i] !== 0x2c) fail('after array element');
      i++;
    }
  };

  try {
    value();
    ws();
    if (i < b.length) fail('after top-level value');
    return undefined;
  } catch (err) {
    if (err instanceof GoSyntaxError) return err.message;
    throw err;
  }
}

/** json.Unmarshal of `text` as Go would: the value, or an Error with Go's text. */
export function goJsonParse(text: string): unknown {
  const error = goJsonSyntaxError(text);
  if (error !== undefined) throw new Error(error);
  return JSON.parse(text) as unknown;
}
