#!/usr/bin/env node
// The build writes the node flags (src/tuning/node-flags.ts) into the line above: scripts/finish-build.mjs.
import { Command, CommanderError } from 'commander';
import { followLauncher } from './launcher-link.js';
import { EXIT_FAILED, EXIT_USAGE, ExitStatusError, UsageError, errorDetails } from './commands/cli-errors.js';
import { withExamples } from './commands/help-examples.js';
import { DETAIL_VERBOSITY, verbosity } from './commands/log-flags.js';

/**
 * The commands, in the order of the help, each behind the import of its module. A module brings
 * what its command's flags and actions need (the runtime, the kubelet, the API client, gRPC), and
 * loading every one cost each process about a second of CPU before it did anything; so a command
 * line that names a command loads that command's module only. Nothing else of the tree takes part
 * in running it: the root has no flags but --help and --version, and commander dispatches on the
 * first word. `--version` needs none of them; the root's help, `help`, an unknown command and
 * `completion` load them all.
 */
const COMMANDS: readonly (readonly [string, () => Promise<Command>])[] = [
  ['runtime', async () => (await import('./commands/runtime.js')).runtimeCommand()],
  ['kubelet', async () => (await import('./commands/kubelet.js')).kubeletCommand()],
  ['demo', async () => (await import('./commands/demo.js')).demoCommand()],
  ['node', async () => (await import('./commands/node.js')).nodeCommand()],
  ['ad', async () => (await import('./commands/ad.js')).adCommand()],
  ['explain', async () => (await import('./commands/explain.js')).explainCommand()],
  ['completion', async () => (await import('./commands/completion.js')).completionCommand(() => buildProgram())],
];

/**
 * The command tree; `cri-winsim completion` reads it to know every command and flag. With `only`,
 * the tree has those commands alone.
 */
async function buildProgram(only?: readonly string[]): Promise<Command> {
  const program = new Command('cri-winsim')
    .description('A simulated Windows Kubernetes node: CRI runtime, GMSA and RunAsUserName, fake kubelet.')
    .version('0.1.0');
  for (const [name, load] of COMMANDS) {
    if (only === undefined || only.includes(name)) program.addCommand(await load());
  }
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

/** The commands a command line whose first word is `first` can run (undefined: every one). */
function commandsToLoad(first: string | undefined): readonly string[] | undefined {
  if (first === '--version' || first === '-V') return [];
  return COMMANDS.some(([name]) => name === first) ? [first!] : undefined;
}

async function main(): Promise<void> {
  const program = await buildProgram(commandsToLoad(process.argv[2]));
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
