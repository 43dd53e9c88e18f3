import { resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { combineObservers } from '../cri/call.js';
import { compactingCollection, DEFAULT_IDLE_GC_SECONDS, IdleCollector } from '../tuning/idle-collector.js';
import { tuneJitForRequestHandlers } from '../tuning/jit.js';
import { parseMetricsAddress, RuntimeMetrics, type MetricsEndpoint } from '../cri/metrics.js';
import { assertEndpointFree, CriServer } from '../cri/server.js';
import { createLogger, type LogFormat, type Logger } from '../log.js';
import { withExamples } from './help-examples.js';
import { addLogFlags, logSettings } from './log-flags.js';
import { addWindowsRuntimeFlags } from './windows-runtime-flags.js';
import type { NodeRuntime } from '../runtime/node-runtime.js';
import { untilSignal } from './shutdown-signal.js';
import { assertStateDirFree } from '../runtime/state-dir-lock.js';
import { leaseRuntimePodRange, rememberPodRange, type LeasedPodRange } from './pod-ranges.js';
import { addCallConditionFlags, callConditionOptions, type CallConditionFlags } from './call-condition-flags.js';
import { DEFAULT_ENDPOINT, DEFAULT_STATE_DIR } from './runtime-defaults.js';

export { DEFAULT_ENDPOINT, DEFAULT_STATE_DIR } from './runtime-defaults.js';
/** Logged once the socket accepts connections; scripts and tests wait for it. */
export const READY_MESSAGE = 'cri-winsim runtime listening';

function parseIdleGcSeconds(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > 3600) {
    throw new InvalidArgumentError(`--idle-gc-seconds must be a number of seconds from 0 to 3600, not "${value}"`);
  }
  return seconds;
}

export interface RuntimeCommandOptions extends CallConditionFlags {
  listen: string;
  stateDir: string;
  node?: string;
  /** windows-server (default) or gmsa-kep; strict and realistic are deprecated aliases. */
  adMode: string;
  /** dockershim-kep (default), cri-dockerd or containerd. */
  runtimeFlavor?: string;
  /** file or registry; the flavor's when absent. */
  credspecTransport?: 'file' | 'registry';
  /** `--images FILE`. */
  images?: string;
  /** `--unknown-images`. */
  unknownImages?: string;
  /** `--ad-scenario FILE`: timed changes of the simulated AD (its jitter drawn from `--seed`). */
  adScenario?: string;
  metricsAddr?: string;
  /** pino's level name (--log-level, or what --v asks for). */
  logLevel: string;
  loggingFormat?: LogFormat;
  /** Seconds without a changing RPC before one full garbage collection; 0: never. */
  idleGcSeconds: number;
  /** Loopback range pod IPs come from; absent: the first free /16 of 127.10.0.0 upwards (pod-ranges.ts). */
  podCidr?: string;
  /** Where the streaming server (exec, attach, port-forward) listens. */
  streamingAddress: string;
  /** False with --ephemeral: state in memory only, forgotten on restart. */
  durable: boolean;
  /** The node restarted: reloaded containers are EXITED, sandboxes NOTREADY. */
  simulateReboot?: boolean;
}

async function openNodeRuntime(options: RuntimeCommandOptions & { podCidr: string }, logger: Logger, metrics: RuntimeMetrics | undefined): Promise<NodeRuntime> {
  // Loaded on demand so `cri-winsim kubelet …` does not load the runtime.
  const { NodeRuntime } = await import('../runtime/node-runtime.js');
  return NodeRuntime.open({
    stateDir: resolve(options.stateDir),
    logger,
    podCidr: options.podCidr,
    streamingAddress: options.streamingAddress,
    durable: options.durable,
    simulateReboot: options.simulateReboot === true,
    images: { file: options.images === undefined ? undefined : resolve(options.images), unknownImages: options.unknownImages },
    windows: {
      nodeFile: options.node === undefined ? undefined : resolve(options.node),
      adMode: options.adMode,
      runtimeFlavor: options.runtimeFlavor,
      credentialSpecTransport: options.credspecTransport,
      credentialSpecMetrics: metrics?.credentialSpecs,
      adOperationMetrics: metrics?.adOperations,
      adScenario: options.adScenario === undefined ? undefined : { file: resolve(options.adScenario), seed: options.seed ?? 0 },
    },
    callConditions: { ...callConditionOptions(options), metrics: metrics?.callConditions },
  });
}

/**
 * Runs the runtime until SIGTERM or SIGINT: opens the node runtime, serves CRI on the socket
 * (and metrics when asked), then shuts down gracefully and removes the socket.
 */
export async function serveRuntime(options: RuntimeCommandOptions): Promise<void> {
  // Refuse bad addresses, a state directory or a socket another runtime uses, before anything
  // is opened or created (opening the runtime resets its state directory).
  const stateDir = resolve(options.stateDir);
  await assertStateDirFree(stateDir);
  await assertEndpointFree(options.listen);
  if (options.metricsAddr !== undefined) parseMetricsAddress(options.metricsAddr);
  // A pod range no other runtime of the machine hands out from, held until the process ends.
  const range = await leaseRuntimePodRange(options.podCidr, stateDir);
  try {
    await serveOnRange({ ...options, podCidr: range.podCidr }, range);
  } finally {
    await range.lease.release();
  }
}

async function serveOnRange(options: RuntimeCommandOptions & { podCidr: string }, range: LeasedPodRange): Promise<void> {
  tuneJitForRequestHandlers();
  // Batched: the runtime logs several lines per pod lifecycle (as containerd does at info).
  const logger = createLogger({ level: options.logLevel, name: 'cri-winsim', batch: true, ...(options.loggingFormat === undefined ? {} : { format: options.loggingFormat }) });
  // Assigned once, after the metrics that read it are built (they answer 0 until then).
  // eslint-disable-next-line prefer-const
  let runtime: NodeRuntime | undefined;
  const metrics = options.metricsAddr === undefined
    ? undefined
    : new RuntimeMetrics({
        liveSandboxes: () => runtime?.context.sandboxes.size ?? 0,
        liveContainers: () => runtime?.context.containers.size ?? 0,
        leakedCredentialSpecs: () => runtime?.credentialSpecLeaks() ?? Promise.resolve(0),
      });
  runtime = await openNodeRuntime(options, logger.child({ component: 'runtime' }), metrics);
  if (range.chosen) await rememberPodRange(runtime.context.settings.stateDir, range.lease);
  const idleCollector = options.idleGcSeconds > 0
    ? new IdleCollector(options.idleGcSeconds * 1000, compactingCollection(), logger.child({ component: 'gc' }))
    : undefined;
  const server = new CriServer({ runtime, logger: logger.child({ component: 'cri' }), observer: combineObservers(metrics, idleCollector) });
  let metricsEndpoint: MetricsEndpoint | undefined;
  let endpoint: string;
  try {
    endpoint = await server.listen(options.listen);
    if (metrics !== undefined && options.metricsAddr !== undefined) {
      metricsEndpoint = await metrics.serve(options.metricsAddr);
      logger.info({ url: metricsEndpoint.url }, 'serving metrics');
    }
  } catch (err) {
    await server.close();
    await runtime.close();
    throw err;
  }
  // Listening for SIGTERM/SIGINT before the ready line, so a signal sent on seeing it is never missed.
  const signal = untilSignal(logger);
  logger.info({ endpoint }, READY_MESSAGE);
  // Scripts and tests wait for the ready line: it must not wait in the batch.
  logger.flush();
  // What the first calls would otherwise make (the gRPC server behind the socket, the credential
  // spec schema) is made while the runtime waits for its first client; in node mode, where most
  // runtimes are never called over their socket, both stay made on first use.
  setImmediate(() => {
    server.prepare();
    runtime.prepareFirstCalls();
  });
  const received = await signal;

  logger.info({ signal: received }, 'shutting down');
  let failed = false;
  for (const [what, stop] of [
    ['CRI server', () => server.close()],
    ['idle collector', () => idleCollector?.close()],
    ['metrics endpoint', () => metricsEndpoint?.close()],
    ['runtime', () => runtime.close()],
  ] as const) {
    try {
      await stop();
    } catch (err) {
      failed = true;
      logger.error({ err }, `closing the ${what} failed`);
    }
  }
  await range.lease.release();
  logger.info({ endpoint }, 'cri-winsim runtime stopped');
  await new Promise<void>((done) => logger.flush(() => done()));
  process.exit(failed ? 1 : 0);
}

export function runtimeCommand(): Command {
  const command = new Command('runtime')
    .description('Serve the CRI v1 API of the simulated Windows node on a unix socket (crictl, critest, kubelet)')
    .option('--listen <endpoint>', 'CRI endpoint to listen on (unix:///absolute/path.sock)', DEFAULT_ENDPOINT)
    .option('--state-dir <dir>', 'directory for the runtime state (metadata database, logs, credential spec files)', DEFAULT_STATE_DIR)
    .option('--ephemeral', 'keep no state across restarts (in memory only; the state directory is reset at start)')
    .option('--simulate-reboot', 'start as after a node reboot: reloaded containers are exited (255, Unknown), sandboxes not ready')
    .option('--node <file>', 'node file: the node and its simulated Active Directory (default: the embedded WINNODE1)')
    .option('--ad-scenario <file>', 'timed changes of the simulated Active Directory, from start-up (docs/active-directory.md); jitter drawn from --seed (default 0)')
    .addOption(
      new Option('--credspec-transport <transport>', 'dockershim-kep only: a temporary file (default) or a simulated registry value')
        .choices(['file', 'registry']),
    )
    .option('--streaming-address <host:port>', 'loopback address of the streaming server for exec, attach and port-forward (port 0: a free one)', '127.0.0.1:0')
    .option('--pod-cidr <cidr>', 'loopback range pod IPs come from (inside 127.0.0.0/8; default: the first /16 from 127.10.0.0/16 up that no other runtime of the machine uses)')
    .option('--metrics-addr <host:port>', 'serve Prometheus metrics on this loopback address (default: off)');
  addCallConditionFlags(command);
  addWindowsRuntimeFlags(command);
  addLogFlags(command)
    .addOption(
      new Option('--idle-gc-seconds <seconds>', 'collect garbage once after this many seconds without a changing RPC (0: never)')
        .default(DEFAULT_IDLE_GC_SECONDS)
        .argParser(parseIdleGcSeconds),
    )
    .action(async (options: Omit<RuntimeCommandOptions, 'logLevel' | 'durable'> & { v?: string; logLevel?: string; ephemeral?: boolean }) => {
      if (options.ephemeral === true && options.simulateReboot === true) throw new InvalidArgumentError('--simulate-reboot needs the durable state that --ephemeral turns off');
      const log = logSettings(options);
      await serveRuntime({ ...options, durable: options.ephemeral !== true, logLevel: log.level, ...(log.format === undefined ? {} : { loggingFormat: log.format }) });
    });
  return withExamples(command, [
    ['Serve CRI on a socket in /tmp (crictl -r unix:///tmp/cri.sock …)', 'cri-winsim runtime --listen unix:///tmp/cri.sock --state-dir /tmp/winsim'],
    ['Reproduce containerd (credential spec string in the OCI spec), klog text logs at debug level', 'cri-winsim runtime --runtime-flavor containerd --logging-format text --v 4'],
    ['A team\'s own images and a private registry (crictl pull --creds user:pass …)', 'cri-winsim runtime --images images.yaml'],
    ['The GMSA KEP\'s AD checks: StartContainer fails when the node cannot use the gMSA', 'cri-winsim runtime --ad-mode gmsa-kep'],
    ['Windows Server 2019 timings; 30 % of StartContainer calls fail Unavailable (repeatable with --seed)', 'cri-winsim runtime --latency-profile windows-server-2019 --inject-fault StartContainer=Unavailable:0.3 --seed 7'],
  ]);
}
