import { Command } from 'commander';

// Work in progress: replaced by the real command.
export function runtimeCommand(): Command {
  return new Command('runtime').action(() => {
    throw new Error('runtime: not implemented yet');
  });
}
