import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import type { CriBackend } from '../cri/backend.js';
import { parseMetricsAddress, RuntimeMetrics, type MetricsEndpoint } from '../cri/metrics.js';
import { unixSocketPath } from '../cri/endpoint.js';
import { CriServer } from '../cri/server.js';
import { createLogger, type Logger } from '../log.js';

export const DEFAULT_ENDPOINT = 'unix:///run/cri-winsim/cri.sock';
export const DEFAULT_STATE_DIR = '/var/lib/cri-winsim';
/** Logged once the socket accepts connections; scripts and tests wait for it. */
export const READY_MESSAGE = 'cri-winsim runtime listening';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface RuntimeCommandOptions {
  listen: string;
  stateDir: string;
  node?: string;
  adMode: 'strict' | 'realistic';
  credspecTransport: 'file' | 'registry';
  metricsAddr?: string;
  logLevel: string;
}

/** What the command needs of the runtime: the CRI methods plus close(). */
interface ServedRuntime extends CriBackend {
  close(): Promise<void>;
}

interface RuntimeModule {
  NodeRuntime: { open(options: Record<string, unknown>): Promise<ServedRuntime> };
}

async function openNodeRuntime(options: RuntimeCommandOptions, logger: Logger, metrics: RuntimeMetrics | undefined): Promise<ServedRuntime> {
  // Loaded on demand so `cri-winsim kubelet …` does not load the runtime.
  const modulePath = '../runtime/node-runtime.js';
  const { NodeRuntime } = (await import(modulePath)) as RuntimeModule;
  return NodeRuntime.open({
    stateDir: resolve(options.stateDir),
    logger,
    nodeFile: options.node === undefined ? undefined : resolve(options.node),
    adMode: options.adMode,
    credentialSpecTransport: options.credspecTransport,
    credentialSpecMetrics: metrics?.credentialSpecs,
  });
}

/**
 * Runs the runtime until SIGTERM or SIGINT: opens the node runtime, serves CRI on the socket
 * (and metrics when asked), then shuts down gracefully and removes the socket.
 */
export async function serveRuntime(options: RuntimeCommandOptions): Promise<void> {
  // Refuse bad addresses before anything is opened or created.
  unixSocketPath(options.listen);
  if (options.metricsAddr !== undefined) parseMetricsAddress(options.metricsAddr);
  const logger = createLogger({ level: options.logLevel, name: 'cri-winsim' });
  const metrics = options.metricsAddr === undefined ? undefined : new RuntimeMetrics();
  const runtime = await openNodeRuntime(options, logger.child({ component: 'runtime' }), metrics);
  const server = new CriServer({ runtime, logger: logger.child({ component: 'cri' }), observer: metrics });
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
  logger.info({ endpoint }, READY_MESSAGE);

  const signal = await new Promise<NodeJS.Signals>((resolveSignal) => {
    process.once('SIGTERM', () => resolveSignal('SIGTERM'));
    process.once('SIGINT', () => resolveSignal('SIGINT'));
  });
  // A second signal during shutdown means "now": exit without waiting.
  const force = (again: NodeJS.Signals): void => {
    logger.warn({ signal: again }, 'second signal during shutdown; exiting now');
    process.exit(1);
  };
  process.once('SIGTERM', force);
  process.once('SIGINT', force);

  logger.info({ signal }, 'shutting down');
  let failed = false;
  for (const [what, stop] of [
    ['CRI server', () => server.close()],
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
  logger.info({ endpoint }, 'cri-winsim runtime stopped');
  await new Promise<void>((done) => logger.flush(() => done()));
  process.exit(failed ? 1 : 0);
}

export function runtimeCommand(): Command {
  return new Command('runtime')
    .description('Serve the CRI v1 API of the simulated Windows node on a unix socket (crictl, critest, kubelet)')
    .option('--listen <endpoint>', 'CRI endpoint to listen on (unix:///absolute/path.sock)', DEFAULT_ENDPOINT)
    .option('--state-dir <dir>', 'directory for the runtime state (logs, credential spec files)', DEFAULT_STATE_DIR)
    .option('--node <file>', 'node file: the node and its simulated Active Directory (default: the embedded WINNODE1)')
    .addOption(
      new Option('--ad-mode <mode>', 'strict: the GMSA KEP (credential spec checked at start); realistic: what a WS2019 host does')
        .choices(['strict', 'realistic'])
        .default('strict'),
    )
    .addOption(
      new Option('--credspec-transport <transport>', 'how the credential spec reaches the runtime: a temporary file or a simulated registry value')
        .choices(['file', 'registry'])
        .default('file'),
    )
    .option('--metrics-addr <host:port>', 'serve Prometheus metrics on this loopback address (default: off)')
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info'))
    .action(async (options: RuntimeCommandOptions) => {
      await serveRuntime(options);
    });
}
