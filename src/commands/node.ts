/**
 * `cri-winsim node`: simulated Windows nodes of a real cluster. Each node is a NodeRuntime served
 * on its own unix socket (`<state-dir>/cri.sock`, so crictl reaches it) and a kubelet (Node,
 * Lease, pods bound to it) talking to that runtime over CRI: in process by default, through the
 * socket with `--cri-transport grpc`.
 *
 *   node --kubeconfig FILE --hostname-override NAME [--state-dir DIR] [--node-file FILE]
 *   node --kubeconfig FILE --nodes N --node-name-prefix PREFIX     PREFIX-1 … PREFIX-N in one process
 *
 * Also the kubelet alone against a runtime started separately (`cri-winsim kubelet --kubeconfig
 * FILE --hostname-override NAME --container-runtime-endpoint E`): runNodeKubelets() below.
 * Flag names are the real kubelet's wherever it has one.
 */
import { gcOptions, type GcFlagValues } from './gc-flags.js';
// Apart from this module, so that the kubelet's command line has them without loading node mode.
import { nodeModeOptions } from './node-mode-flags.js';
export { nodeModeOptions };
import { parseNodeLabels, parseTaints } from './registration-flags.js';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { addCallConditionFlags, callConditionOptions, type CallConditionFlags } from './call-condition-flags.js';
import { createCriClient, unaryCall, type CriClient } from '../cri/proto.js';
import { assertEndpointFree, CriServer } from '../cri/server.js';
import { createLogger, type Logger } from '../log.js';
import { grpcErrorString } from '../kubelet/cri-errors.js';
import { ApiClient, ApiError, ApiUnreachableError } from '../kubelet/node/api-client.js';
import { KubeletNode } from '../kubelet/node/kubelet-node.js';
import { quantityBytes, type NodeIdentity } from '../kubelet/node/node-controller.js';
import { SyncLimiter } from '../kubelet/node/pod-controller.js';
import { NodeDeletionWatch, PodInformer } from '../kubelet/node/pod-informer.js';
import { DomainController, type DomainNode } from '../kubelet/node/domain-controller.js';
import { DEFAULT_DOMAIN_RESOURCE, DOMAIN_KIND } from '../kubelet/node/domain-resource.js';
import { TimerWheel } from '../kubelet/node/timer-wheel.js';
import type { NodeRuntime } from '../runtime/node-runtime.js';
import { DEFAULT_STATE_DIR } from './runtime.js';
import { withExamples } from './help-examples.js';
import { untilSignal } from './shutdown-signal.js';
import { addWindowsRuntimeFlags } from './windows-runtime-flags.js';
import { DEFAULT_OS_BUILD } from '../runtime/windows/default-node.js';
import { assertStateDirFree } from '../runtime/state-dir-lock.js';
import { leaseNodePodRanges, rememberPodRange } from './pod-ranges.js';
import { openNodeProcessShares, type NodeProcessShares } from './node-process-shares.js';

/** Logged once every node is registered and its pods are watched; scripts and tests wait for it. */
import { computerName, dns1123Subdomain, nodeAddress, nodeNames, parseDuration, podCidr } from './node-names.js';
export const NODE_READY_MESSAGE = 'cri-winsim node ready';

export interface NodeModeOptions extends GcFlagValues {
  kubeconfig?: string;
  inCluster?: boolean;
  context?: string;
  hostnameOverride?: string;
  nodes?: string;
  nodeNamePrefix?: string;
  /** With --nodes N: this process's slice of the names, PREFIX-(k·N+1) … PREFIX-(k·N+N). */
  nodeOrdinal?: string;
  port: string;
  nodeIp?: string;
  maxPods: string;
  nodeLabels?: string;
  registerWithTaints?: string;
  nodeStatusUpdateFrequency: string;
  runtimeRequestTimeout: string;
  kubeApiQps: string;
  kubeApiBurst: string;
  eventQps: string;
  eventBurst: string;
  cpu: string;
  memory: string;
  ephemeralStorage: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  anonymousAuth?: boolean;
  authorizationMode: string;
  logLevel: string;
}

export interface NodeCommandOptions extends NodeModeOptions, CallConditionFlags {
  stateDir: string;
  /** --ephemeral: the runtimes keep no state across restarts (as `runtime --ephemeral`). */
  ephemeral?: boolean;
  /** --simulate-reboot: reloaded containers are EXITED (255, Unknown), sandboxes NOTREADY. */
  simulateReboot?: boolean;
  nodeFile?: string;
  adMode: string;
  runtimeFlavor: string;
  credspecTransport?: 'file' | 'registry';
  /** --images FILE and --unknown-images, as `runtime` takes them. */
  images?: string;
  unknownImages?: string;
  /** --cri-transport: how each kubelet reaches its runtime in this process (our flag). */
  criTransport: CriTransport;
  /** --domain-resource NAME: the SimulatedDomain the nodes follow ('' for none). */
  domainResource: string;
}

/**
 * How a node's kubelet calls the runtime beside it: `inprocess` calls the runtime's CRI handlers
 * directly (src/cri/in-process-client.ts), `grpc` goes through the node's socket like crictl.
 * Either way the socket serves other clients.
 */
export type CriTransport = 'inprocess' | 'grpc';

/** The kubelet's CRI client for a runtime in this process, over the chosen transport. */
export async function colocatedCriClient(transport: CriTransport, runtime: NodeRuntime, endpoint: string, logger: Logger): Promise<CriClient> {
  if (transport === 'grpc') return createCriClient(endpoint);
  // Loaded by node mode only, like the runtime itself.
  const { createInProcessCriClient } = await import('../cri/in-process-client.js');
  return createInProcessCriClient({ runtime, endpoint, logger });
}

/** Loads the kubeconfig and checks that the API server answers, naming the file and server otherwise. */
export async function connectApi(options: Pick<NodeModeOptions, 'kubeconfig' | 'inCluster' | 'context'>): Promise<ApiClient> {
  if (options.inCluster === true && options.kubeconfig !== undefined) throw new Error('--in-cluster and --kubeconfig are mutually exclusive');
  if (options.inCluster !== true && options.kubeconfig === undefined) throw new Error('give --kubeconfig FILE (or --in-cluster in a pod)');
  const api = await ApiClient.load({ ...(options.kubeconfig === undefined ? {} : { kubeconfig: resolve(options.kubeconfig) }), ...(options.context === undefined ? {} : { context: options.context }) });
  try {
    await api.get('/version');
  } catch (err) {
    api.close();
    if (err instanceof ApiUnreachableError) throw err;
    if (err instanceof ApiError && err.status === 401) throw new Error(`${api.description}: the API server refused the credentials (401 Unauthorized)`, { cause: err });
    throw new Error(`${api.description}: ${(err as Error).message}`, { cause: err });
  }
  return api;
}

export interface NodePlan {
  readonly identity: NodeIdentity;
  readonly cri: CriClient;
  readonly podLogsRoot: string;
}

interface RunningNodes {
  stop(): Promise<void>;
}

/** Starts the kubelets of the planned nodes over one API client and one pod informer. */
async function startKubelets(api: ApiClient, plans: readonly NodePlan[], options: NodeModeOptions, logger: Logger): Promise<RunningNodes> {
  const { startKubeletServer } = await import('../kubelet/server/index.js');
  if (options.authorizationMode !== 'Webhook' && options.authorizationMode !== 'AlwaysAllow') {
    throw new Error(`--authorization-mode: ${JSON.stringify(options.authorizationMode)} is not Webhook or AlwaysAllow`);
  }
  const limits = clientLimits(options);
  const informer = new PodInformer(api, logger.child({ component: 'pod-informer' }));
  // Lease renewals and status checks of every node on one timer.
  const wheel = new TimerWheel();
  const nodeWatch = new NodeDeletionWatch(api, logger.child({ component: 'node-watch' }));
  // Pod syncs under way at once, across every node of the process.
  const limiter = new SyncLimiter(32);
  const statusUpdateMs = parseDuration('--node-status-update-frequency', options.nodeStatusUpdateFrequency);
  const callTimeoutMs = parseDuration('--runtime-request-timeout', options.runtimeRequestTimeout);
  const kubelets: KubeletNode[] = [];
  const servers: { close(): Promise<void> }[] = [];
  const stopAll = async (): Promise<void> => {
    for (const k of kubelets) k.stop();
    wheel.stop();
    await informer.stop();
    await nodeWatch.stop();
    await Promise.all(servers.map((s) => s.close().catch((err: unknown) => logger.error({ err }, 'closing a kubelet server failed'))));
  };
  try {
    for (const plan of plans) {
      // The kubelet's HTTPS server on the node's loopback address; the Node advertises its port.
      // Assigned once the server is up; the server's pods() reads it until then.
      // eslint-disable-next-line prefer-const
      let kubelet: KubeletNode | undefined;
      const server = await startKubeletServer({
        address: plan.identity.nodeIp,
        port: plan.identity.kubeletPort,
        ...(options.tlsCertFile === undefined ? {} : { tlsCertFile: resolve(options.tlsCertFile) }),
        ...(options.tlsPrivateKeyFile === undefined ? {} : { tlsPrivateKeyFile: resolve(options.tlsPrivateKeyFile) }),
        ...(options.clientCaFile === undefined ? {} : { clientCaFile: resolve(options.clientCaFile) }),
        anonymousAuth: options.anonymousAuth === true,
        authorizationMode: options.authorizationMode,
        kubeConfig: api.kubeConfig,
        nodeName: plan.identity.name,
        cri: plan.cri,
        pods: () => kubelet?.podController.runningPods() ?? [],
        podRecord: (namespace, name) => kubelet?.podController.podRecord(namespace, name),
        callTimeoutMs,
        memoryCapacityBytes: quantityBytes(plan.identity.memory),
        logger,
      }).catch((err: unknown) => {
        throw new Error(`node ${plan.identity.name}: kubelet server on ${plan.identity.nodeIp}:${plan.identity.kubeletPort}: ${(err as Error).message}`);
      });
      servers.push(server);
      kubelet = new KubeletNode({
        api,
        cri: plan.cri,
        identity: { ...plan.identity, kubeletPort: server.port },
        informer,
        nodeWatch,
        limiter,
        podLogsRoot: plan.podLogsRoot,
        callTimeoutMs,
        nodeCpuCount: Number(plan.identity.cpu),
        logger,
        nodeController: { statusUpdateMs, wheel },
        limits,
        garbageCollection: gcOptions(options, plan.identity.ephemeralStorage),
      });
      kubelets.push(kubelet);
    }
    // Registration with at most 50 under way, so a thousand nodes do not open a thousand requests
    // at once; each one done lets the next begin (no batch waits for its slowest). After a failure
    // no further node begins.
    let next = 0;
    let failed = false;
    const registrar = async (): Promise<void> => {
      while (!failed && next < kubelets.length) {
        await kubelets[next++]!.start().catch((err: unknown) => {
          failed = true;
          throw err;
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(50, kubelets.length) }, registrar));
    await informer.start();
    nodeWatch.start();
  } catch (err) {
    await stopAll();
    throw err;
  }
  return { stop: stopAll };
}

/** --kube-api-qps/--kube-api-burst and --event-qps/--event-burst, checked before anything starts. */
function clientLimits(options: NodeModeOptions): { qps: number; burst: number; eventQps: number; eventBurst: number } {
  return {
    qps: rate('--kube-api-qps', options.kubeApiQps),
    burst: burst('--kube-api-burst', options.kubeApiBurst),
    eventQps: rate('--event-qps', options.eventQps),
    eventBurst: burst('--event-burst', options.eventBurst),
  };
}

/** A QPS flag: a number; 0 is client-go's default (5), a negative one disables the limit. */
function rate(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new Error(`${flag}: ${JSON.stringify(value)} is not a number`);
  return n === 0 ? 5 : n;
}

/** A burst flag: a whole number ≥ 0; 0 is client-go's default (10). */
function burst(flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value)) throw new Error(`${flag}: ${JSON.stringify(value)} is not a whole number`);
  return n === 0 ? 10 : n;
}

function identityFor(name: string, index: number, count: number, osBuild: string, options: NodeModeOptions): NodeIdentity {
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: ${JSON.stringify(options.port)} is not a port number (0 picks a free one)`);
  const maxPods = Number(options.maxPods);
  if (!Number.isInteger(maxPods) || maxPods < 1) throw new Error(`--max-pods: ${JSON.stringify(options.maxPods)} is not a positive whole number`);
  for (const [flag, value] of [['--memory', options.memory], ['--ephemeral-storage', options.ephemeralStorage]] as const) {
    try {
      quantityBytes(value);
    } catch (err) {
      throw new Error(`${flag}: ${(err as Error).message}`, { cause: err });
    }
  }
  if (!/^\d+$/.test(options.cpu) || Number(options.cpu) < 1) throw new Error(`--cpu: ${JSON.stringify(options.cpu)} is not a whole number of processors`);
  return {
    name,
    osBuild,
    nodeIp: nodeAddress(index, count, options.nodeIp),
    kubeletPort: port,
    labels: parseNodeLabels(options.nodeLabels),
    taints: parseTaints(options.registerWithTaints),
    maxPods,
    cpu: options.cpu,
    memory: options.memory,
    ephemeralStorage: options.ephemeralStorage,
  };
}

/** The nodes of a `cri-winsim node` process, started; stop() takes them down. */
export type StartedNodes = { readonly names: readonly string[]; readonly stateRoot: string; readonly server: string; stop(): Promise<void> };

/**
 * Opens the runtimes and starts the kubelets of `cri-winsim node` in this process (also what
 * bench/node-memory.ts measures). `onRuntimesOpen` runs once every runtime serves, before the
 * kubelets start.
 */
export async function startNodes(options: NodeCommandOptions, logger: Logger, onRuntimesOpen: () => void = () => undefined): Promise<StartedNodes> {
  const names = nodeNames(options);
  clientLimits(options);
  const api = await connectApi(options);
  const { NodeRuntime } = await import('../runtime/node-runtime.js');
  const { openNodeDirectory, deriveNodeDirectory, renameComputerAccount } = await import('../runtime/windows/node-directory.js');
  const domainResource = options.domainResource.trim();
  if (domainResource !== '' && (domainResource.length > 253 || !dns1123Subdomain.test(domainResource))) {
    throw new Error(`--domain-resource: ${JSON.stringify(domainResource)} is not a ${DOMAIN_KIND} name (a lowercase RFC 1123 subdomain)`);
  }
  const { SimulatedRegistry } = await import('../runtime/images/catalogue.js');
  const template = await openNodeDirectory(options.nodeFile === undefined ? undefined : resolve(options.nodeFile));
  // The built-in image catalogue is immutable once built: one for every runtime of the process.
  const catalogue = new SimulatedRegistry();
  const osBuild = template.osBuild;
  const identities = names.map((name, i) => identityFor(name, i, names.length, osBuild, options));
  const stateRoot = resolve(options.stateDir);
  const stateDirOf = (name: string): string => (names.length === 1 ? stateRoot : join(stateRoot, name));
  // Another live process on these state directories is named before anything is opened.
  for (const name of names) await assertStateDirFree(join(stateDirOf(name), 'runtime'));
  const ranges = await leaseNodePodRanges(names.length, stateRoot);
  const opened: { runtime: NodeRuntime; server: CriServer; cri: CriClient }[] = [];
  let shares: NodeProcessShares | undefined;
  const closeAll = async (): Promise<void> => {
    for (const o of opened.reverse()) {
      o.cri.close();
      await o.server.close().catch((err: unknown) => logger.error({ err }, 'closing a CRI server failed'));
      await o.runtime.close().catch((err: unknown) => logger.error({ err }, 'closing a runtime failed'));
    }
    shares?.close();
    await ranges.lease.release();
  };
  const plans: NodePlan[] = [];
  const domainNodes: DomainNode[] = [];
  try {
    await mkdir(stateRoot, { recursive: true, mode: 0o700 });
    await rememberPodRange(stateRoot, ranges.lease);
    shares = await openNodeProcessShares(stateRoot, names.length, options.ephemeral !== true, logger);
    for (const [i, identity] of identities.entries()) {
      const stateDir = stateDirOf(identity.name);
      const endpoint = `unix://${join(stateDir, 'cri.sock')}`;
      await mkdir(stateDir, { recursive: true, mode: 0o700 });
      await assertEndpointFree(endpoint);
      // Each node its own computer account; one node keeps the node file's as it is.
      const directory = names.length === 1 ? template : deriveNodeDirectory(template, computerName(identity.name, i), identity.name);
      const runtimeLogger = logger.child({ node: identity.name, component: 'runtime' });
      const runtime = await NodeRuntime.open({
        stateDir: join(stateDir, 'runtime'),
        logger: runtimeLogger,
        // Pod IPs are loopback: the leased /16 for one node (127.10.0.0/16 when free), a /24 of
        // the leased /16s per node of several (from 127.11.0.0/16 when free).
        podCidr: podCidr(i, names.length, ranges.firstOctet),
        // Durable unless --ephemeral: a restarted node process finds its pods, and its kubelet
        // adopts them by their UID label instead of running them again.
        durable: options.ephemeral !== true,
        simulateReboot: options.simulateReboot === true,
        images: { file: options.images, unknownImages: options.unknownImages },
        registry: catalogue,
        // Most nodes are never exec'd into: their streaming servers listen on first use.
        streamingOnFirstUse: true,
        windows: { node: directory, adMode: options.adMode, runtimeFlavor: options.runtimeFlavor, credentialSpecTransport: options.credspecTransport },
        callConditions: callConditionOptions(options),
        ...shares.forNode(identity.name),
      });
      const criLogger = runtimeLogger.child({ subsystem: 'cri' });
      const server = new CriServer({ runtime, logger: criLogger });
      try {
        await server.listen(endpoint);
      } catch (err) {
        await runtime.close();
        throw err;
      }
      const cri = await colocatedCriClient(options.criTransport, runtime, endpoint, criLogger);
      opened.push({ runtime, server, cri });
      plans.push({ identity, cri, podLogsRoot: join(stateDir, 'pod-logs') });
      domainNodes.push({
        name: identity.name,
        domain: runtime.domain,
        // The shared resource names the node file's computer account; each node reads it as its own.
        view: (spec) => ({ domains: renameComputerAccount(spec.domains, template.name, directory.name), ...(spec.ccgPlugins === undefined ? {} : { ccgPlugins: spec.ccgPlugins }) }),
        nodeFile: { document: { domains: directory.file.domains }, source: directory.source },
      });
      logger.debug({ node: identity.name, endpoint, computer: directory.name }, 'runtime listening');
    }
  } catch (err) {
    await closeAll();
    api.close();
    throw err;
  }
  onRuntimesOpen();
  // One watch of the domain resource for every node of the process, before the kubelets start
  // pods, so that they start under the cluster's domain when it has one.
  const domains = domainResource === '' ? undefined : new DomainController(api, domainResource, domainNodes, logger.child({ component: 'domain-controller' }));
  let kubelets: RunningNodes;
  try {
    await domains?.start();
    kubelets = await startKubelets(api, plans, options, logger);
  } catch (err) {
    await domains?.stop();
    await closeAll();
    api.close();
    throw err;
  }
  const stop = async (): Promise<void> => {
    await domains?.stop();
    await kubelets.stop();
    await closeAll();
    api.close();
  };
  return { names, stateRoot, server: api.server.origin, stop };
}

/** `cri-winsim node`: runtimes and kubelets in one process until SIGTERM/SIGINT. */
export async function runNodes(options: NodeCommandOptions): Promise<void> {
  const logger = createLogger({ level: options.logLevel, name: 'cri-winsim-node' });
  let signal: Promise<NodeJS.Signals> | undefined;
  const nodes = await startNodes(options, logger, () => (signal = untilSignal(logger)));
  const { names, stateRoot } = nodes;
  logger.info({ nodes: names.length === 1 ? names[0] : `${names[0]} … ${names[names.length - 1]} (${names.length})`, stateDir: stateRoot, server: nodes.server }, NODE_READY_MESSAGE);
  const received = await signal!;
  logger.info({ signal: received }, 'shutting down');
  await nodes.stop();
  logger.info('cri-winsim node stopped');
  await new Promise<void>((done) => logger.flush(() => done()));
  process.exit(0);
}

/**
 * `cri-winsim kubelet --kubeconfig FILE --hostname-override NAME --container-runtime-endpoint E`:
 * the kubelet of one node against a runtime that runs on its own.
 */
export async function runNodeKubelet(options: NodeModeOptions & { containerRuntimeEndpoint: string; rootDir?: string }): Promise<void> {
  const names = nodeNames({ ...options, nodes: undefined });
  clientLimits(options);
  const logger = createLogger({ level: options.logLevel, name: 'cri-winsim-kubelet' });
  const api = await connectApi(options);
  const cri = createCriClient(options.containerRuntimeEndpoint);
  try {
    await unaryCall(cri.runtime, 'Version', { version: '' }, { timeoutMs: parseDuration('--runtime-request-timeout', options.runtimeRequestTimeout) });
  } catch (err) {
    cri.close();
    api.close();
    throw new Error(`the container runtime at ${options.containerRuntimeEndpoint} is not reachable: ${grpcErrorString(err)}`, { cause: err });
  }
  // CRI does not carry the OS build (a Windows kubelet reads it from the registry): the runtime's
  // node file is not at hand here, so the build of the embedded default node is reported.
  const identity = identityFor(names[0]!, 0, 1, DEFAULT_OS_BUILD, options);
  const rootDir = resolve(options.rootDir ?? join(DEFAULT_STATE_DIR, 'kubelet'));
  const signal = untilSignal(logger);
  const kubelets = await startKubelets(api, [{ identity, cri, podLogsRoot: join(rootDir, 'pod-logs') }], options, logger);
  logger.info({ nodes: identity.name, endpoint: options.containerRuntimeEndpoint, server: api.server.origin }, NODE_READY_MESSAGE);
  const received = await signal;
  logger.info({ signal: received }, 'shutting down');
  await kubelets.stop();
  cri.close();
  api.close();
  await new Promise<void>((done) => logger.flush(() => done()));
  process.exit(0);
}

export function nodeCommand(): Command {
  const command = new Command('node').description('Simulated Windows node(s) of a real cluster: runtime (CRI on <state-dir>/cri.sock) and kubelet in one process');
  addWindowsRuntimeFlags(nodeModeOptions(command))
    .option('--nodes <n>', 'run N nodes in this process, named PREFIX-1 … PREFIX-N (state in <state-dir>/<name>/)')
    .option('--node-name-prefix <prefix>', 'the prefix of the node names with --nodes')
    .option('--node-ordinal <k>', 'with --nodes N: run the slice PREFIX-(k*N+1) … PREFIX-(k*N+N); k may be a StatefulSet pod name ending in its ordinal (cri-winsim flag)')
    .option('--state-dir <dir>', 'state of the runtime(s) and kubelet(s), kept across restarts (metadata database, logs)', DEFAULT_STATE_DIR)
    .option('--ephemeral', 'keep no runtime state across restarts (in memory only; the runtime state is reset at start)')
    .option('--simulate-reboot', 'start as after a reboot of the node(s): reloaded containers are exited (255, Unknown), sandboxes not ready')
    .option('--node-file <file>', 'node file: the node and its simulated Active Directory (default: the embedded WINNODE1); with --nodes each node gets its own computer account with the same rights')
    .addOption(new Option('--cri-transport <transport>', "how each node's kubelet calls its runtime in this process: directly (inprocess) or over the node's CRI socket (grpc, as crictl does); the socket serves other clients either way (cri-winsim flag)").choices(['inprocess', 'grpc']).default('inprocess'))
    .option('--domain-resource <name>', `the ${DOMAIN_KIND} cluster resource whose spec is the domain of every node of the process (examples/cluster-mode/domain-crd.yaml); while it is absent, the node file's; "" ignores it`, DEFAULT_DOMAIN_RESOURCE)
    .addOption(new Option('--credspec-transport <transport>', 'dockershim-kep only: a temporary file (default) or a simulated registry value').choices(['file', 'registry']))
    .addOption(new Option('--log-level <level>', 'log level').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'));
  addCallConditionFlags(command)
    .action(async (options: NodeCommandOptions) => {
      if (options.ephemeral === true && options.simulateReboot === true) throw new InvalidArgumentError('--simulate-reboot needs the durable state that --ephemeral turns off');
      await runNodes(options);
    });
  return withExamples(command, [
    ['Join the cluster of a kubeconfig as the Windows node win-1 (Ctrl-C stops)', 'cri-winsim node --kubeconfig node.kubeconfig --hostname-override win-1 --state-dir /tmp/win-1'],
    ['Run 10 simulated Windows nodes, win-1 … win-10, in one process', 'cri-winsim node --kubeconfig admin.kubeconfig --nodes 10 --node-name-prefix win --state-dir /tmp/wins'],
    ['Share the domain of the SimulatedDomain "lab" (kubectl apply/edit changes it on every node)', 'cri-winsim node --kubeconfig admin.kubeconfig --nodes 10 --node-name-prefix win --domain-resource lab'],
  ]);
}
