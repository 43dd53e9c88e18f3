/**
 * The syntax tree of a shell script, as the grammar of POSIX sh builds it (XCU 2.10 Shell Grammar:
 * lists, AND-OR lists, pipelines, compound commands and simple commands with their redirections,
 * XCU 2.7), and the words of XCU 2.3/2.6: literal text (quoted or not), parameter expansions,
 * command substitutions and arithmetic expansions, expanded only when the command runs.
 */

export type Part =
  | { k: 'lit'; s: string; q: boolean }
  | { k: 'var'; name: string; q: boolean; fallback?: Part[] }
  | { k: 'cmd'; src: string; q: boolean }
  | { k: 'arith'; src: string; q: boolean };

export interface Word {
  parts: Part[];
}

export interface Redirect {
  fd: number;
  op: string;
  target: Word;
}

export type Command =
  | { k: 'simple'; assigns: { name: string; value: Word }[]; words: Word[]; redirects: Redirect[] }
  | { k: 'loop'; until: boolean; cond: List; body: List }
  | { k: 'for'; name: string; items: Word[] | undefined; body: List }
  | { k: 'if'; clauses: { cond: List; body: List }[]; otherwise: List | undefined }
  | { k: 'group'; body: List; subshell: boolean };

export interface Pipeline {
  negate: boolean;
  commands: Command[];
}
export interface AndOr {
  first: Pipeline;
  rest: { op: '&&' | '||'; pipeline: Pipeline }[];
}
export type List = AndOr[];

/** A script the lexer, parser or arithmetic cannot read; its message is the shell's diagnostic. */
export class ShellSyntaxError extends Error {}
