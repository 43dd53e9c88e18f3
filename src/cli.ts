#!/usr/bin/env -S node --single-threaded-gc --max-semi-space-size=4
import { Command } from 'commander';
import { runtimeCommand } from './commands/runtime.js';
import { kubeletCommand } from './commands/kubelet.js';
import { demoCommand } from './commands/demo.js';
import { nodeCommand } from './commands/node.js';

const program = new Command('cri-winsim')
  .description('A simulated Windows Kubernetes node: CRI runtime, GMSA and RunAsUserName, fake kubelet.')
  .version('0.1.0')
  .showHelpAfterError();

program.addCommand(runtimeCommand());
program.addCommand(kubeletCommand());
program.addCommand(demoCommand());
program.addCommand(nodeCommand());

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`cri-winsim: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
