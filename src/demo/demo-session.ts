/**
 * `cri-winsim demo`: a runtime in this process on a socket in a fresh temporary directory, the
 * bundled (or a chosen) example run through the fake kubelet over that socket, the result table,
 * and a clean shutdown — or, with `keep`, the runtime stays up for crictl until a signal. Every
 * resource is released by the cleanup stack declared where it is acquired, on every path.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCriClient } from '../cri/proto.js';
import { CriServer } from '../cri/server.js';
import { createLogger, silentLogger, type LogFormat, type Logger } from '../log.js';
import type { NodeRuntime } from '../runtime/node-runtime.js';
import { describeBlock, machinePodRangeRegistry } from '../runtime/network/pod-range-registry.js';
import type { CallConditionsOptions } from '../runtime/call-conditions/call-conditions.js';
import { loadExampleManifest, type AdMode, type ExampleManifest } from './example-manifest.js';
import type { RuntimeFlavorName } from '../runtime/flavors/flavor.js';
import { createProgress, type ProgressReporter } from './progress.js';
import { formatReport } from './result-table.js';
import { runExample, type ExampleReport } from './run-example.js';

/** The repository's examples/ (this file is compiled to dist/src/demo/). */
export const bundledExamplesDir = fileURLToPath(new URL('../../../examples/', import.meta.url));

/** The demo's own example: the bundled pods of examples/pods on the embedded node. */
export const bundledDemoExample = join(bundledExamplesDir, 'demo', 'expect.yaml');

export interface DemoOptions {
  /** An expect.yaml or a directory holding one (default: the bundled demo). */
  readonly example?: string;
  /** Node file overriding the example's (default: the example's, else the embedded WINNODE1). */
  readonly node?: string;
  /** AD mode overriding the example's. */
  readonly adMode?: AdMode;
  /** `--latency-profile`, `--seed`, `--inject-fault` (the node file's `timing` fills in the rest). */
  readonly callConditions?: CallConditionsOptions;
  /** Runtime flavor overriding the example's (`--runtime-flavor`). */
  readonly runtimeFlavor?: RuntimeFlavorName;
  /** `--images FILE` and `--unknown-images` (docs/images.md). */
  readonly images?: { readonly file?: string | undefined; readonly unknownImages?: string | undefined };
  /** Keep the runtime up after the table until `untilStopped` resolves (default: SIGINT/SIGTERM). */
  readonly keep?: boolean;
  /** Level of the runtime's own pino log on stderr (default `silent`). */
  readonly logLevel?: string;
  /** The runtime log's format on stderr (--logging-format). */
  readonly logFormat?: LogFormat;
  /** Fit the table into this many columns by cutting MESSAGE cells (default: no limit). */
  readonly tableWidth?: number;
  readonly stdout?: NodeJS.WritableStream;
  readonly stderr?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Pretty progress (default: when stderr is a terminal). */
  readonly pretty?: boolean;
  /** With `keep`: resolves when the user wants to stop (default: the first SIGINT or SIGTERM). */
  readonly untilStopped?: () => Promise<unknown>;
}

export interface DemoResult {
  readonly report?: ExampleReport;
  /** 0 when every result was the expected one and the shutdown was clean. */
  readonly exitCode: number;
  /** The temporary directory that held socket and state (removed by now). */
  readonly directory: string;
}

/**
 * SIGINT/SIGTERM for the whole session: the first one stops the demo (it ends the --keep wait, or
 * interrupts the run by closing the CRI connection) and lets the cleanup run; a second one exits
 * at once. Without this, Ctrl-C during the run would leave the socket and the temp dir behind.
 */
class SessionSignals {
  private received: NodeJS.Signals | undefined;
  private readonly listeners: Array<(signal: NodeJS.Signals) => void> = [];
  private readonly onSignal = (signal: NodeJS.Signals): void => {
    if (this.received !== undefined) process.exit(130);
    this.received = signal;
    for (const listener of this.listeners.splice(0)) listener(signal);
  };

  constructor() {
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
  }

  get signal(): NodeJS.Signals | undefined {
    return this.received;
  }

  /** Calls `listener` on the first signal (at once when one already came). */
  onFirst(listener: (signal: NodeJS.Signals) => void): void {
    if (this.received !== undefined) listener(this.received);
    else this.listeners.push(listener);
  }

  next(): Promise<NodeJS.Signals> {
    return new Promise((resolve) => this.onFirst(resolve));
  }

  dispose(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
  }
}

/** The crictl commands worth trying on this runtime, with real ids where the report has them. */
export function tryItYourself(endpoint: string, crictlConfig: string, report: ExampleReport | undefined, kept: boolean): string {
  const rows = report?.runs.flatMap((r) => r.verdicts.map((v) => v.row)).filter((r) => r !== undefined) ?? [];
  const withGmsa = rows.find((r) => r.outcome === 'Running' && r.gmsa !== undefined && r.gmsa !== 'none') ?? rows.find((r) => r.outcome === 'Running');
  // exec needs a container that still runs; one-shot commands have exited by now.
  const running = rows.find((r) => r.state === 'CONTAINER_RUNNING' && r.gmsa !== 'none') ?? rows.find((r) => r.state === 'CONTAINER_RUNNING') ?? withGmsa;
  const failed = rows.find((r) => r.containerId !== undefined && r.outcome !== 'Running');
  // Without --keep the runtime, its socket and these ids are gone when the demo ends, so the
  // commands are shown with placeholders rather than with ids that no longer exist.
  const id = (r: typeof running, fallback: string): string => (!kept || r?.containerId === undefined ? fallback : r.containerId.slice(0, 13));
  const lines = [
    kept ? 'Try it yourself — the runtime stays up until you press Ctrl-C:' : 'Try it yourself — run `npm start -- --keep` (or `cri-winsim demo --keep`) to keep the runtime up; it prints these with real ids:',
    kept ? `  export CRI_CONFIG_FILE=${crictlConfig}    # runtime-endpoint: ${endpoint}` : '  export CRI_CONFIG_FILE=<printed path>/crictl.yaml',
    '  crictl pods',
    '  crictl ps -a',
    `  crictl inspect ${id(withGmsa, '<container-id>')}    # info.runtimeSpec: process.user.username, windows.credentialSpec`,
    `  crictl logs ${id(withGmsa, '<container-id>')}`,
    `  crictl exec -s ${id(running, '<container-id>')} cmd /c whoami`,
    `  crictl exec -s ${id(running, '<container-id>')} cmd /c nltest /parentdomain`,
  ];
  if (failed !== undefined) lines.push(`  crictl inspect ${id(failed, '<container-id>')}    # status.reason and status.message of a failed start`);
  return lines.join('\n');
}

async function openRuntime(stateDir: string, podCidr: string, manifest: ExampleManifest, options: DemoOptions, logger: Logger): Promise<NodeRuntime> {
  // Loaded on demand, as `cri-winsim runtime` does.
  const { NodeRuntime } = await import('../runtime/node-runtime.js');
  const nodeFile = options.node ?? manifest.node;
  return NodeRuntime.open({
    stateDir,
    logger,
    podCidr,
    windows: {
      nodeFile,
      adMode: manifest.adMode,
      runtimeFlavor: manifest.runtimeFlavor,
    },
    ...(options.images === undefined ? {} : { images: { file: options.images.file, unknownImages: options.images.unknownImages } }),
    ...(options.callConditions === undefined ? {} : { callConditions: options.callConditions }),
  });
}

/** Runs the demo; resolves to the exit code the command should end with. Throws only for bad input or a runtime that cannot start. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const progress: ProgressReporter = createProgress(stderr, options.pretty ?? stderr.isTTY === true);
  const examplePath = options.example ?? bundledDemoExample;
  if (options.example === undefined && !existsSync(bundledDemoExample)) {
    throw new Error(`the bundled demo example ${bundledDemoExample} is missing (run the demo from the cri-winsim repository)`);
  }
  const loaded = await loadExampleManifest(examplePath);
  // The command line's settings win over the example's; the report and table show what ran.
  const manifest: ExampleManifest = {
    ...loaded,
    adMode: options.adMode ?? loaded.adMode,
    runtimeFlavor: options.runtimeFlavor ?? loaded.runtimeFlavor,
  };
  const nodeFile = options.node ?? manifest.node;
  const adMode = manifest.adMode;
  progress.step(`example: ${manifest.title} (${relative(process.cwd(), manifest.file) || manifest.file})`);

  // Short prefix: the socket path must stay under the 108-byte sun_path limit.
  const directory = await mkdtemp(join(tmpdir(), 'cri-winsim-demo-'));
  const cleanups: Array<[string, () => Promise<void> | void]> = [];
  cleanups.push(['remove the temporary directory', () => rm(directory, { recursive: true, force: true })]);
  const logLevel = options.logLevel ?? 'silent';
  const logger = logLevel === 'silent' ? silentLogger() : createLogger({ level: logLevel, name: 'cri-winsim', ...(options.logFormat === undefined ? {} : { format: options.logFormat }) });
  cleanups.push(['flush the log', () => new Promise<void>((done) => logger.flush(() => done()))]);

  const signals = new SessionSignals();
  cleanups.push(['stop listening for signals', () => signals.dispose()]);

  let report: ExampleReport | undefined;
  let failure: unknown;
  try {
    const endpoint = `unix://${join(directory, 'cri.sock')}`;
    progress.step(`starting the runtime on ${endpoint} (node ${nodeFile === undefined ? 'WINNODE1, embedded' : relative(process.cwd(), nodeFile)}; --ad-mode ${adMode}; --runtime-flavor ${manifest.runtimeFlavor})`);
    // A pod range no runtime of the machine uses: the example's IIS binds port 80 on its pod IP.
    const range = await machinePodRangeRegistry().claimFree(1, 10, join(directory, 'state'));
    cleanups.push(['release the pod range', () => range.release()]);
    const runtime = await openRuntime(join(directory, 'state'), describeBlock(range.block), manifest, options, logger.child({ component: 'runtime' }));
    cleanups.push(['close the runtime', () => runtime.close()]);
    const server = new CriServer({ runtime, logger: logger.child({ component: 'cri' }) });
    cleanups.push(['close the CRI server', () => server.close()]);
    await server.listen(endpoint);
    // A crictl config beside the socket, so crictl needs neither /etc/crictl.yaml nor flags.
    const crictlConfig = join(directory, 'crictl.yaml');
    await writeFile(crictlConfig, `runtime-endpoint: ${endpoint}\nimage-endpoint: ${endpoint}\ntimeout: 10\n`);
    const cri = createCriClient(endpoint);
    cleanups.push(['close the CRI client', () => cri.close()]);
    // Ctrl-C during the run: pending CRI calls fail (CANCELLED) and the run ends with an error.
    signals.onFirst((signal) => {
      if (report === undefined) {
        progress.warn(`${signal}: interrupting the run`);
        cri.close();
      }
    });

    // On a cri-dockerd node the spec is Docker's (`docker inspect`), not in the CRI's verbose info.
    const inspectContainer = (id: string) => {
      const record = runtime.context.containers.get(id);
      return record === undefined ? undefined : runtime.context.containers.specOf(record);
    };
    const result = await runExample(cri, manifest, { podLogsRoot: join(directory, 'pods'), progress, inspectContainer });
    if (signals.signal !== undefined) throw new Error(`interrupted by ${signals.signal}; everything was cleaned up`);
    report = result;
    stdout.write(`\n${manifest.title}\n\n${formatReport(report, options.tableWidth === undefined ? {} : { tableWidth: options.tableWidth })}\n\n`);
    stdout.write(`USER and GMSA are the runtime's view: ContainerStatus verbose info.runtimeSpec (process.user.username, windows.credentialSpec; with cri-dockerd, whose info has no spec, the container's spec as docker inspect shows it); "-" where no container was created.\n\n`);
    stdout.write(`${tryItYourself(endpoint, crictlConfig, report, options.keep === true)}\n`);
    if (options.keep === true) {
      progress.step(`runtime up on ${endpoint}; press Ctrl-C to stop`);
      await (options.untilStopped ?? (() => signals.next()))();
    }
  } catch (err) {
    failure = signals.signal !== undefined && report === undefined ? new Error(`interrupted by ${signals.signal}; everything was cleaned up`) : err;
  } finally {
    progress.step('shutting down');
    let cleanupFailed = false;
    for (const [what, run] of cleanups.reverse()) {
      try {
        await run();
      } catch (err) {
        cleanupFailed = true;
        progress.warn(`could not ${what}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (failure === undefined && cleanupFailed) failure = new Error('the demo did not shut down cleanly');
  }
  if (failure !== undefined) throw failure;
  progress.result(report!.ok ? 'every example had its expected outcome' : 'some examples did not have their expected outcome', report!.ok);
  return { report: report!, exitCode: report!.ok ? 0 : 1, directory };
}
