/**
 * How deeply a YAML (or JSON) text nests, measured before it is parsed. The `yaml` package parses
 * and composes recursively: about a thousand levels exhaust the stack, and when that happens while
 * V8 compiles one of the parser's regular expressions the process aborts ("RegExpCompiler
 * Allocation failed - process out of memory") instead of throwing. So the pod manifests and node
 * files a user hands in are refused above a fixed depth before they reach the parser; real ones
 * nest a dozen levels.
 */

/** The deepest nesting accepted (our own limit; pods nest about 12 levels, node files 6). */
export const MAX_YAML_NESTING = 100;

/**
 * An upper estimate of the nesting depth: flow collections (`[`, `{` outside quotes and
 * comments) plus block levels (increasing indentation and `- ` entries on a line). Block scalar
 * text may count a level too many, never too few.
 */
export function yamlNestingDepth(text: string): number {
  let deepest = 0;
  let flow = 0;
  const indents: number[] = [];
  let blockDepth = 0;
  let lineStart = true;
  let i = 0;
  const n = text.length;
  while (i < n) {
    if (lineStart) {
      lineStart = false;
      let indent = 0;
      while (i < n && (text[i] === ' ' || text[i] === '\t')) { i++; indent++; }
      if (i < n && text[i] !== '\n' && text[i] !== '\r' && text[i] !== '#' && flow === 0) {
        while (indents.length > 0 && (indents[indents.length - 1] as number) >= indent) indents.pop();
        indents.push(indent);
        // `- - - x` opens a sequence per dash.
        let dashes = 0;
        while (i + 1 < n && text[i] === '-' && (text[i + 1] === ' ' || text[i + 1] === '\t')) {
          dashes++;
          i += 2;
          while (i < n && text[i] === ' ') i++;
        }
        blockDepth = indents.length + dashes;
      }
      continue;
    }
    const c = text[i];
    if (c === '\n') {
      lineStart = true;
      i++;
    } else if (c === '"') {
      i++;
      while (i < n && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
    } else if (c === "'") {
      i++;
      while (i < n && !(text[i] === "'" && text[i + 1] !== "'")) i += text[i] === "'" ? 2 : 1;
      i++;
    } else if (c === '#' && (i === 0 || text[i - 1] === ' ' || text[i - 1] === '\t')) {
      while (i < n && text[i] !== '\n') i++;
    } else {
      if (c === '[' || c === '{') flow++;
      else if ((c === ']' || c === '}') && flow > 0) flow--;
      i++;
    }
    deepest = Math.max(deepest, blockDepth + flow);
  }
  return Math.max(deepest, blockDepth);
}
