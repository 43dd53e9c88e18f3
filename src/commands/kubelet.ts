import { Command } from 'commander';

// Work in progress: replaced by the real command.
export function kubeletCommand(): Command {
  return new Command('kubelet').action(() => {
    throw new Error('kubelet: not implemented yet');
  });
}
