import { Command } from 'commander';

// Work in progress: replaced by the real command.
export function demoCommand(): Command {
  return new Command('demo').action(() => {
    throw new Error('demo: not implemented yet');
  });
}
