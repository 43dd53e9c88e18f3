import type { Command } from 'commander';

/**
 * Adds kubectl's Examples section after a command's help: each example a `# comment` line and
 * the command, indented two spaces (kubectl's templates.Examples shape).
 */
export function withExamples(command: Command, examples: readonly (readonly [comment: string, line: string])[]): Command {
  const text = examples.map(([comment, line]) => `  # ${comment}\n  ${line}`).join('\n\n');
  return command.addHelpText('after', `\nExamples:\n${text}\n`);
}
