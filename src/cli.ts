#!/usr/bin/env node
// The build writes the node flags (src/tuning/node-flags.ts) into the line above: scripts/finish-build.mjs.
import { Command, CommanderError } from 'commander';
import { followLauncher } from './launcher-link.js';
import { runtimeCommand } from './commands/runtime.js';
import { kubeletCommand } from './commands/kubelet.js';
import { demoCommand } from './commands/demo.js';
import { completionCommand } from './commands/completion.js';
import { EXIT_FAILED, EXIT_USAGE, ExitStatusError, UsageError, errorDetails } from './commands/cli-errors.js';
import { withExamples } from './commands/help-examples.js';
import { DETAIL_VERBOSITY, verbosity } from './commands/log-flags.js';
import { nodeCommand } from './commands/node.js';
import { adCommand } from './commands/ad.js';
import { explainCommand } from './commands/explain.js';

/** The command tree; `cri-winsim completion` reads it to know every command and flag. */
function buildProgram(): Command {
  const program = new Command('cri-winsim')
    .description('A simulated Windows Kubernetes node: CRI runtime, GMSA and RunAsUserName, fake kubelet.')
    .version('0.1.0');
  program.addCommand(runtimeCommand());
  program.addCommand(kubeletCommand());
  program.addCommand(demoCommand());
  program.addCommand(nodeCommand());
  program.addCommand(adCommand());
  program.addCommand(explainCommand());
  program.addCommand(completionCommand(buildProgram));
  withExamples(program, [
    ['Run the bundled demo (a runtime, the kubelet, the example pods, a result table)', 'cri-winsim demo'],
    ['Serve CRI on a socket, then run a pod on it', 'cri-winsim runtime --listen unix:///tmp/cri.sock --state-dir /tmp/winsim &\n  cri-winsim kubelet run examples/pods/gmsa-pod-level.yaml --cluster examples/cluster --container-runtime-endpoint unix:///tmp/cri.sock'],
  ]);
  // Usage errors exit 2 (src/commands/cli-errors.ts), with kubectl's pointer to the help.
  const configure = (command: Command, path: string): void => {
    command.exitOverride().showHelpAfterError(`See '${path} --help' for usage.`);
    for (const sub of command.commands) configure(sub, `${path} ${sub.name()}`);
  };
  configure(program, program.name());
  return program;
}

async function main(): Promise<void> {
  const program = buildProgram();
  let action: Command | undefined;
  program.hook('preAction', (_root, actionCommand) => {
    action = actionCommand;
  });
  const path = (): string => {
    const names: string[] = [];
    for (let c: Command | null = action ?? null; c !== null; c = c.parent) names.unshift(c.name());
    return names.join(' ') || program.name();
  };
  const detailed = (): boolean => {
    try {
      return verbosity(action?.optsWithGlobals<{ v?: string }>().v) >= DETAIL_VERBOSITY;
    } catch {
      return false;
    }
  };
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander printed its message (or the help, or the version) already.
      process.exitCode = err.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\nSee '${path()} --help' for usage.\n`);
      process.exitCode = EXIT_USAGE;
      return;
    }
    const message = err instanceof Error ? err.message : String(err);
    // kubectl prints API errors as they come (`Error from server (NotFound): …`), the rest after `error: `.
    process.stderr.write(`${/^(error: |Error from server)/.test(message) || err instanceof ExitStatusError ? '' : 'error: '}${message}\n`);
    if (detailed()) process.stderr.write(`${errorDetails(err instanceof Error && err.cause !== undefined ? err.cause : err)}\n`);
    process.exitCode = err instanceof ExitStatusError ? err.exitCode : EXIT_FAILED;
  }
}

followLauncher();
await main();
