import { Command } from 'commander';
import type { AdMode } from '../demo/example-manifest.js';
import type { RuntimeFlavorName } from '../runtime/flavors/flavor.js';
import { addWindowsRuntimeFlags } from './windows-runtime-flags.js';
import { withExamples } from './help-examples.js';
import { addLogFlags, logSettings } from './log-flags.js';
import { addCallConditionFlags, callConditionOptions, type CallConditionFlags } from './call-condition-flags.js';


interface DemoCommandOptions extends CallConditionFlags {
  keep?: boolean;
  example?: string;
  node?: string;
  adMode?: AdMode;
  runtimeFlavor?: RuntimeFlavorName;
  images?: string;
  unknownImages?: string;
  v?: string;
  logLevel?: string;
  loggingFormat?: 'json' | 'text';
  wide?: boolean;
}

/** The terminal's width, so the table fits it (unless --wide); undefined when stdout is not a terminal. */
function terminalWidth(): number | undefined {
  return process.stdout.isTTY === true ? process.stdout.columns : undefined;
}

export function demoCommand(): Command {
  const command = new Command('demo')
    .description(
      'Run the bundled examples on a simulated Windows node: a runtime on a temporary socket, the fake kubelet, a result table (exit 0 when every outcome is the expected one)',
    )
    .option('--keep', 'keep the runtime up after the table (until Ctrl-C) to explore it with crictl')
    .option('--example <path>', 'run this example (an expect.yaml or its directory, e.g. examples/stories/hostprocess) instead of the bundled demo')
    .option('--node <file>', "node file (default: the example's, else the embedded WINNODE1)")
    .option('--wide', 'never cut the MESSAGE column to fit the terminal');
  addCallConditionFlags(command);
  addWindowsRuntimeFlags(command, false);
  addLogFlags(command, 'silent')
    .action(async (options: DemoCommandOptions) => {
      const { runDemo } = await import('../demo/demo-session.js');
      const width = options.wide === true ? undefined : terminalWidth();
      const result = await runDemo({
        keep: options.keep === true,
        logLevel: logSettings(options, 'silent').level,
        ...(options.loggingFormat === undefined ? {} : { logFormat: options.loggingFormat }),
        ...(options.example === undefined ? {} : { example: options.example }),
        ...(options.node === undefined ? {} : { node: options.node }),
        ...(options.adMode === undefined ? {} : { adMode: options.adMode }),
        ...(options.runtimeFlavor === undefined ? {} : { runtimeFlavor: options.runtimeFlavor }),
        ...(options.images === undefined && options.unknownImages === undefined ? {} : { images: { file: options.images, unknownImages: options.unknownImages } }),
        ...(width === undefined ? {} : { tableWidth: width }),
        callConditions: callConditionOptions(options),
      });
      process.exitCode = result.exitCode;
    });
  return withExamples(command, [
    ['Run the bundled demo; exit 0 when every outcome is the expected one', 'cri-winsim demo'],
    ['Run another example, keeping the runtime up to explore it with crictl', 'cri-winsim demo --example examples/stories/hostprocess --keep'],
    ['Run the bundled demo as containerd would (the credential spec string in the OCI spec)', 'cri-winsim demo --runtime-flavor containerd'],
  ]);
}
