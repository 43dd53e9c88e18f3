/**
 * Files users write for the runtime (the node file, the images file): read and parsed as YAML or
 * JSON with one set of errors, each naming the file as the user gave it (our own texts).
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { MAX_YAML_NESTING, yamlNestingDepth } from '../../yaml-nesting.js';
import { RuntimeError } from '../errors.js';

/** Reads a user's file; `what` names it in the error (`node file`, `images file`). */
export async function readUserFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    throw new RuntimeError('InvalidArgument', `${path}: cannot read ${what}: ${reason}`, { cause: err });
  }
}

/** Parses YAML or JSON text; `source` is the path as the user gave it. */
export function parseUserYaml(text: string, source: string): unknown {
  if (yamlNestingDepth(text) > MAX_YAML_NESTING) {
    throw new RuntimeError('InvalidArgument', `${source}: not valid YAML: nested more than ${MAX_YAML_NESTING} levels deep`);
  }
  try {
    // logLevel error: a warning (an unknown directive) is not printed on the runtime's stderr.
    return parseYaml(text, { logLevel: 'error' });
  } catch (err) {
    if (err instanceof YAMLParseError) {
      const line = err.linePos?.[0]?.line;
      const firstLine = err.message.split('\n')[0] ?? err.message;
      throw new RuntimeError('InvalidArgument', `${source}${line === undefined ? '' : `:${line}`}: not valid YAML: ${firstLine}`);
    }
    // An alias bomb: the yaml package refuses it with a ReferenceError.
    throw new RuntimeError('InvalidArgument', `${source}: not valid YAML: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
}
