/**
 * One line per step on stderr while the demo works: symbols and colour in a terminal, plain
 * prefixed lines otherwise (CI logs, pipes, tests), so stdout carries only the result table.
 */
import type { ExampleProgress } from './run-example.js';

export interface ProgressReporter extends ExampleProgress {
  /** A problem outside the example's results (a failed shutdown step, a bad option). */
  warn(text: string): void;
}

const colour = (code: number, text: string): string => `\u001b[${code}m${text}\u001b[0m`;

export function createProgress(stream: NodeJS.WritableStream & { isTTY?: boolean }, pretty = stream.isTTY === true): ProgressReporter {
  const write = (line: string): void => {
    stream.write(`${line}\n`);
  };
  if (pretty) {
    return {
      step: (text) => write(`${colour(36, '›')} ${text}`),
      result: (text, ok) => write(`  ${ok ? colour(32, '✓') : colour(31, '✗')} ${text}`),
      warn: (text) => write(`${colour(33, '!')} ${text}`),
    };
  }
  return {
    step: (text) => write(`demo: ${text}`),
    result: (text, ok) => write(`demo:   ${ok ? 'ok' : 'UNEXPECTED'}: ${text}`),
    warn: (text) => write(`demo: warning: ${text}`),
  };
}
