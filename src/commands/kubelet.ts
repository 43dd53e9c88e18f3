/**
 * `cri-winsim kubelet`: the fake kubelet's command line.
 *
 *   kubelet run POD.yaml… (--cluster DIR | --kubeconfig FILE) [--as USER --as-group G] [-o wide|yaml|json] [--wait-ready]
 *   kubelet --pod-manifest-path DIR (--cluster DIR | --kubeconfig FILE)   the static-pod sync loop, until SIGTERM/SIGINT
 *   kubelet get [pods] [NAME…] [-n NS] [-o wide|yaml|json]
 *   kubelet delete NAME… | --all [-n NS]
 *   kubelet describe NAME [-n NS]
 *
 * All talk to the runtime over CRI only (--runtime-endpoint). What the runtime cannot tell (the
 * admitted spec, why a container never started, events) is kept under --root-dir, which defaults
 * to a `kubelet` directory beside the runtime's socket, so the commands find each other's pods.
 * Exit status: 0 when every pod is running or completed, 1 when a file, an admission or a pod failed.
 */
import { readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { unixSocketPath } from '../cri/endpoint.js';
import { createCriClient, unaryCall, type CriClient } from '../cri/proto.js';
import { createLogger } from '../log.js';
import { defaultRequestingUser } from '../kubelet/admission.js';
import { DirectoryClusterSource, KubeconfigClusterSource, type ClusterSource } from '../kubelet/cluster.js';
import { ManifestErrors } from '../kubelet/manifests.js';
import { deleteNodePod } from '../kubelet/node-pods.js';
import { grpcErrorString } from '../kubelet/pod-worker.js';
import {
  admissionErrorText,
  alreadyExistsText,
  describePod,
  formatObjects,
  formatPodTable,
  manifestErrorTexts,
  podObject,
  type TableRow,
} from '../kubelet/pod-printers.js';
import { PodRecordStore } from '../kubelet/pod-records.js';
import { podFailed, podSettled } from '../kubelet/pod-status.js';
import { readPodViews, selectPods, type PodView } from '../kubelet/pod-views.js';
import { requestingUser, type UserInfo } from '../kubelet/rbac.js';
import { defaultPodWorkers, maxPodWorkers, runPods } from '../kubelet/run-pods.js';
import { StaticPodSyncLoop, type SyncReport } from '../kubelet/static-pods.js';
import { DEFAULT_ENDPOINT } from './runtime.js';
import { nodeModeOptions, runNodeKubelet, type NodeModeOptions } from './node.js';
import { kubeletStreamingCommands } from './kubelet-streaming.js';

type OutputFormat = 'wide' | 'yaml' | 'json';

interface NodeOptions {
  runtimeEndpoint: string;
  rootDir?: string;
  podLogsRoot?: string;
  nodeName: string;
  requestTimeout: string;
}

interface ClusterOptions {
  cluster?: string;
  kubeconfig?: string;
  context?: string;
  as?: string;
  asGroup: string[];
}

/** Where the kubelet's records live: --root-dir, else `kubelet/` beside the runtime's socket. */
function rootDir(options: NodeOptions): string {
  return resolve(options.rootDir ?? join(dirname(unixSocketPath(options.runtimeEndpoint)), 'kubelet'));
}

function podLogsRoot(options: NodeOptions): string {
  return resolve(options.podLogsRoot ?? join(rootDir(options), 'pod-logs'));
}

function callTimeoutMs(options: NodeOptions): number {
  const seconds = Number(options.requestTimeout);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`--request-timeout: ${JSON.stringify(options.requestTimeout)} is not a positive number of seconds`);
  return seconds * 1000;
}

function clusterSource(options: ClusterOptions): ClusterSource {
  if (options.cluster !== undefined && options.kubeconfig !== undefined) throw new Error('--cluster and --kubeconfig are mutually exclusive');
  if (options.kubeconfig !== undefined) return new KubeconfigClusterSource(resolve(options.kubeconfig), options.context);
  if (options.cluster !== undefined) return new DirectoryClusterSource(resolve(options.cluster));
  throw new Error('the cluster objects are needed for admission: give --cluster DIR or --kubeconfig FILE');
}

/** kubectl's impersonation: --as-group without --as is refused, as kubectl refuses it. */
function requestUser(options: ClusterOptions): UserInfo {
  if (options.as === undefined) {
    if (options.asGroup.length > 0) throw new Error('requesting groups or user-extra for test without impersonating a user');
    return defaultRequestingUser;
  }
  return requestingUser(options.as, options.asGroup);
}

/** Connects and probes the runtime with Version, as the kubelet does at start-up. */
async function connect(options: NodeOptions): Promise<CriClient> {
  const cri = createCriClient(options.runtimeEndpoint);
  try {
    await unaryCall(cri.runtime, 'Version', { version: '' }, { timeoutMs: callTimeoutMs(options) });
  } catch (err) {
    cri.close();
    throw new Error(`the container runtime at ${options.runtimeEndpoint} is not reachable: ${grpcErrorString(err)}`);
  }
  return cri;
}

/** Pod files from the arguments: files as given, directories by their *.yaml, *.yml, *.json (like kubectl -f DIR). */
async function podFiles(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const path of paths) {
    const info = await stat(path).catch(() => undefined);
    if (info?.isDirectory()) {
      const entries = (await readdir(path)).filter((f) => /\.(ya?ml|json)$/.test(f)).sort();
      files.push(...entries.map((f) => join(path, f)));
    } else files.push(path); // a missing file is reported by the loader with its name
  }
  return files;
}

const write = (text: string): void => {
  process.stdout.write(text);
};
const writeError = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function tableRow(view: PodView, nodeName: string): TableRow {
  return { ...view.row, ...(view.status.startTime === undefined ? {} : { startTime: view.status.startTime }), nodeName };
}

function printViews(views: readonly PodView[], format: OutputFormat | undefined, nodeName: string, single: boolean): void {
  if (format === 'yaml' || format === 'json') {
    write(formatObjects(views.map((v) => podObject(v.pod, v.status, nodeName)), format, single));
    return;
  }
  write(formatPodTable(views.map((v) => tableRow(v, nodeName)), { wide: format === 'wide' }));
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- run ----

interface RunOptions extends NodeOptions, ClusterOptions {
  output?: OutputFormat;
  waitReady?: boolean;
  timeout: string;
  podWorkers?: string;
}

/** --pod-workers: a whole number from 1 to maxPodWorkers. */
function podWorkers(options: RunOptions): number {
  if (options.podWorkers === undefined) return defaultPodWorkers;
  const workers = Number(options.podWorkers);
  if (!/^\d+$/.test(options.podWorkers) || workers < 1 || workers > maxPodWorkers) {
    throw new Error(`--pod-workers: ${JSON.stringify(options.podWorkers)} is not a whole number from 1 to ${maxPodWorkers}`);
  }
  return workers;
}

export async function kubeletRun(files: string[], options: RunOptions): Promise<number> {
  const cluster = clusterSource(options);
  const user = requestUser(options);
  const workers = podWorkers(options);
  const cri = await connect(options);
  try {
    const records = new PodRecordStore(rootDir(options));
    const callTimeout = callTimeoutMs(options);
    let results;
    try {
      results = await runPods(cri, await podFiles(files), {
        cluster,
        user,
        podLogsRoot: podLogsRoot(options),
        nodeName: options.nodeName,
        callTimeoutMs: callTimeout,
        records,
        podWorkers: workers,
      });
    } catch (err) {
      // A broken cluster stops everything before any pod is touched.
      if (err instanceof ManifestErrors) {
        for (const e of err.errors) writeError(`error: ${e.message}`);
        writeError(`error: ${cluster.description} is invalid; no pod was started`);
        return 1;
      }
      throw err;
    }

    let failed = false;
    const manifestErrors: Error[] = [];
    const started: string[] = [];
    for (const result of results) {
      if (result.stage === 'manifest') manifestErrors.push(result.error);
      else if (result.stage === 'admission') writeError(admissionErrorText(result.error, result.pod.metadata?.name ?? '', result.source.file));
      else if (result.stage === 'exists') writeError(alreadyExistsText(result.pod.metadata?.name ?? '', result.source.file));
      else started.push(result.pod.metadata!.uid!);
      if (result.stage !== 'runtime') failed = true;
    }
    for (const line of manifestErrorTexts(manifestErrors)) writeError(line);

    const ours = async () => (await readPodViews(cri, records, { callTimeoutMs: callTimeout })).filter((v) => started.includes(v.pod.metadata?.uid ?? ''));
    let views = await ours();
    if (options.waitReady === true && views.length > 0) {
      const timeoutSeconds = Number(options.timeout);
      if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) throw new Error(`--timeout: ${JSON.stringify(options.timeout)} is not a positive number of seconds`);
      const deadline = Date.now() + timeoutSeconds * 1000;
      while (!views.every((v) => podSettled(v.status, v.record)) && Date.now() < deadline) {
        await delay(200);
        views = await ours();
      }
      const waiting = views.filter((v) => !podSettled(v.status, v.record));
      for (const v of waiting) writeError(`error: timed out after ${timeoutSeconds}s waiting for pod ${v.row.namespace}/${v.row.name} to be ready (${v.row.status})`);
      if (waiting.length > 0) failed = true;
    }
    if (views.length > 0) printViews(views, options.output, options.nodeName, views.length === 1);
    if (views.some((v) => podFailed(v.status, v.record))) failed = true;
    return failed ? 1 : 0;
  } finally {
    cri.close();
  }
}

// ---- get, describe, delete ----

interface SelectOptions extends NodeOptions {
  namespace?: string;
}

export async function kubeletGet(args: string[], options: SelectOptions & { output?: OutputFormat }): Promise<number> {
  const names = args[0] !== undefined && ['pods', 'pod', 'po'].includes(args[0]) ? args.slice(1) : args;
  const cri = await connect(options);
  try {
    const views = await readPodViews(cri, new PodRecordStore(rootDir(options)), { callTimeoutMs: callTimeoutMs(options) });
    if (names.length === 0) {
      const listed = views.filter((v) => options.namespace === undefined || v.row.namespace === options.namespace);
      if (listed.length === 0 && options.output !== 'yaml' && options.output !== 'json') {
        writeError(options.namespace === undefined ? 'No resources found' : `No resources found in ${options.namespace} namespace.`);
        return 0;
      }
      printViews(listed, options.output, options.nodeName, false);
      return 0;
    }
    const { found, errors } = selectPods(views, names, options.namespace);
    if (found.length > 0) printViews(found, options.output, options.nodeName, names.length === 1);
    errors.forEach(writeError);
    return errors.length > 0 ? 1 : 0;
  } finally {
    cri.close();
  }
}

export async function kubeletDescribe(names: string[], options: SelectOptions): Promise<number> {
  const cri = await connect(options);
  try {
    const views = await readPodViews(cri, new PodRecordStore(rootDir(options)), { callTimeoutMs: callTimeoutMs(options) });
    const { found, errors } = selectPods(views, names, options.namespace);
    write(found.map((v) => describePod({ pod: v.pod, status: v.status, events: v.record?.events ?? [], nodeName: options.nodeName })).join('\n\n'));
    errors.forEach(writeError);
    return errors.length > 0 ? 1 : 0;
  } finally {
    cri.close();
  }
}

export async function kubeletDelete(names: string[], options: SelectOptions & { all?: boolean; gracePeriod: string }): Promise<number> {
  if (options.all === true && names.length > 0) throw new Error('names cannot be provided when --all is specified');
  if (options.all !== true && names.length === 0) throw new Error('give pod names or --all');
  const grace = Number(options.gracePeriod);
  if (!Number.isInteger(grace) || grace < 0) throw new Error(`--grace-period: ${JSON.stringify(options.gracePeriod)} is not a whole number of seconds`);
  const cri = await connect(options);
  try {
    const records = new PodRecordStore(rootDir(options));
    const views = await readPodViews(cri, records, { callTimeoutMs: callTimeoutMs(options) });
    const { found, errors } =
      options.all === true ? { found: views.filter((v) => options.namespace === undefined || v.row.namespace === options.namespace), errors: [] } : selectPods(views, names, options.namespace);
    let failed = errors.length > 0;
    for (const view of found) {
      try {
        if (view.nodePod !== undefined) await deleteNodePod(cri, view.nodePod, { gracePeriodSeconds: grace, callTimeoutMs: callTimeoutMs(options) });
        await records.remove(view.pod.metadata?.uid ?? view.row.name);
        write(`pod ${JSON.stringify(view.row.name)} deleted${found.some((o) => o !== view && o.row.name === view.row.name) ? ` from ${view.row.namespace} namespace` : ''}\n`);
      } catch (err) {
        failed = true;
        writeError(`error: ${(err as Error).message}`);
      }
    }
    errors.forEach(writeError);
    if (options.all === true && found.length === 0) writeError('No resources found');
    return failed ? 1 : 0;
  } finally {
    cri.close();
  }
}

// ---- the static-pod sync loop ----

interface SyncOptions extends NodeOptions, ClusterOptions {
  podManifestPath?: string;
  logLevel: string;
}

/** Logged once the loop watches the directory; scripts and tests wait for it. */
export const SYNC_LOOP_READY_MESSAGE = 'cri-winsim kubelet watching the pod manifest path';

export async function kubeletSyncLoop(options: SyncOptions): Promise<number> {
  if (options.podManifestPath === undefined) throw new Error('give a subcommand (run, get, describe, delete) or --pod-manifest-path DIR');
  const manifestDir = resolve(options.podManifestPath);
  const info = await stat(manifestDir).catch(() => undefined);
  if (info?.isDirectory() !== true) throw new Error(`--pod-manifest-path ${manifestDir}: not a directory`);
  const cluster = clusterSource(options);
  const user = requestUser(options);
  const logger = createLogger({ level: options.logLevel, name: 'cri-winsim-kubelet' });
  const cri = await connect(options);
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    logger.info({ signal: sig }, 'stopping the sync loop');
    controller.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    const loop = new StaticPodSyncLoop(cri, {
      manifestDir,
      cluster,
      user,
      podLogsRoot: podLogsRoot(options),
      nodeName: options.nodeName,
      callTimeoutMs: callTimeoutMs(options),
      records: new PodRecordStore(rootDir(options)),
    });
    let lastTable = '';
    const reported = new Set<string>();
    const onPass = (report: SyncReport | Error): void => {
      if (report instanceof Error) {
        logger.error({ err: report }, 'sync pass failed');
        return;
      }
      // Each refusal is reported once, not on every pass.
      for (const message of report.refused) {
        if (!reported.has(message)) logger.warn({ refused: message }, 'pod not started');
      }
      reported.clear();
      report.refused.forEach((m) => reported.add(m));
      for (const e of report.events) logger[e.type === 'Warning' ? 'warn' : 'info']({ pod: e.pod, container: e.container, reason: e.reason }, e.message);
      for (const p of report.deleted) logger.info({ pod: p }, 'pod removed: its file is gone or changed');
      // The table is printed when a pod's state changed, not because its AGE moved on.
      const state = JSON.stringify(report.pods.map(({ startTime: _, ...rest }) => rest));
      if (state !== lastTable) write(formatPodTable(report.pods.map((p) => ({ ...p, podIP: '' })), { namespaceColumn: true }));
      lastTable = state;
    };
    logger.info({ manifestDir, endpoint: options.runtimeEndpoint }, SYNC_LOOP_READY_MESSAGE);
    await loop.run(controller.signal, onPass);
    logger.info('sync loop stopped');
    await new Promise<void>((done) => logger.flush(() => done()));
    return 0;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    cri.close();
  }
}

// ---- commander wiring ----

const collect = (value: string, previous: string[]): string[] => [...previous, value];

function nodeOptions(command: Command): Command {
  return command
    .option('--runtime-endpoint <endpoint>', 'CRI endpoint of the runtime', process.env['CONTAINER_RUNTIME_ENDPOINT'] ?? DEFAULT_ENDPOINT)
    .option('--root-dir <dir>', "the kubelet's records of its pods (default: kubelet/ beside the runtime's socket)")
    .option('--node-name <name>', 'the node name pods are bound to (the embedded node is WINNODE1)', 'winnode1')
    .option('--request-timeout <seconds>', 'deadline of each CRI call', '30');
}

function clusterOptions(command: Command): Command {
  return command
    .option('--cluster <dir>', 'directory of cluster manifests (Namespaces, ServiceAccounts, ConfigMaps, GMSACredentialSpecs, RBAC)')
    .option('--kubeconfig <file>', 'read the cluster objects from the API server of this kubeconfig instead')
    .option('--context <name>', 'the kubeconfig context to use')
    .option('--as <user>', 'the requesting user admission sees (default: kubernetes-admin, in system:masters)')
    .option('--as-group <group>', 'a group of the requesting user (repeatable)', collect, [] as string[])
    .option('--pod-logs-root <dir>', 'root of the pod log directories (default: pod-logs/ in --root-dir)');
}

const outputOption = () => new Option('-o, --output <format>', 'output format').choices(['wide', 'yaml', 'json']);
const namespaceOption = () => new Option('-n, --namespace <namespace>', 'only pods of this namespace');

function exitWith(code: number): void {
  if (code !== 0) process.exitCode = code;
}

/** Options of the kubelet command itself, which its subcommands share (commander's global options). */
const merged = <T>(command: Command): T => command.optsWithGlobals<T & Record<string, unknown>>();

export function kubeletCommand(): Command {
  const kubelet = clusterOptions(nodeOptions(new Command('kubelet')))
    .description('The fake kubelet: run pod YAML on the simulated Windows node over CRI, or sync a static pod directory')
    .option('--pod-manifest-path <dir>', 'run the static-pod sync loop on this directory until SIGTERM/SIGINT')
    .addOption(new Option('--log-level <level>', 'log level of the sync loop').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'))
    .configureHelp({ showGlobalOptions: true })
    .action(async (_options: SyncOptions, command: Command) => {
      const options = merged<SyncOptions & NodeModeOptions & { containerRuntimeEndpoint?: string; hostnameOverride?: string }>(command);
      // With a cluster to join (--kubeconfig without --pod-manifest-path, or --in-cluster): node mode.
      if (options.podManifestPath === undefined && (options.kubeconfig !== undefined || options.inCluster === true)) {
        const endpoint = options.containerRuntimeEndpoint ?? options.runtimeEndpoint;
        return runNodeKubelet({ ...options, containerRuntimeEndpoint: endpoint, ...(options.rootDir === undefined ? {} : { rootDir: options.rootDir }) });
      }
      exitWith(await kubeletSyncLoop(options));
    });
  nodeModeOptions(kubelet);
  if (!kubelet.options.some((o) => o.long === '--container-runtime-endpoint')) {
    kubelet.option('--container-runtime-endpoint <endpoint>', 'CRI endpoint of the runtime (node mode; the same as --runtime-endpoint)');
  }

  kubelet.addCommand(
    new Command('run')
      .description('Validate, admit and start the pods of the given files (directories: their YAML/JSON files), then print their status')
      .argument('<files...>', 'pod manifests (Pod, or the pod template of a Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob)')
      .addOption(outputOption())
      .option('--wait-ready', 'wait until every pod is ready, completed or failed')
      .option('--timeout <seconds>', 'how long --wait-ready waits', '60')
      .option('--pod-workers <n>', `how many pods are started at the same time (1 to ${maxPodWorkers}); results keep the order of the files`, String(defaultPodWorkers))
      .action(async (files: string[], _options: unknown, command: Command) => exitWith(await kubeletRun(files, merged<RunOptions>(command)))),
  );
  kubelet.addCommand(
    new Command('get')
      .description('List the pods on the node, like kubectl get pods')
      .argument('[names...]', '`pods`, then pod names (NAME or NAMESPACE/NAME)')
      .addOption(outputOption())
      .addOption(namespaceOption())
      .action(async (names: string[], _options: unknown, command: Command) => exitWith(await kubeletGet(names, merged<SelectOptions & { output?: OutputFormat }>(command)))),
  );
  kubelet.addCommand(
    new Command('describe')
      .description('Show a pod with its containers, conditions and events, like kubectl describe pod')
      .argument('<names...>', 'pod names (NAME or NAMESPACE/NAME; a leading `pod` is ignored)')
      .addOption(namespaceOption())
      .action(async (names: string[], _options: unknown, command: Command) =>
        exitWith(await kubeletDescribe(names[0] === 'pod' || names[0] === 'pods' ? names.slice(1) : names, merged<SelectOptions>(command))),
      ),
  );
  kubelet.addCommand(
    new Command('delete')
      .description('Stop and remove pods: every container and sandbox, and the kubelet record')
      .argument('[names...]', 'pod names (NAME or NAMESPACE/NAME; a leading `pod` is ignored)')
      .option('--all', 'every pod (of the namespace, with -n)')
      .option('--grace-period <seconds>', 'StopContainer timeout', '30')
      .addOption(namespaceOption())
      .action(async (names: string[], _options: unknown, command: Command) =>
        exitWith(await kubeletDelete(names[0] === 'pod' || names[0] === 'pods' ? names.slice(1) : names, merged<SelectOptions & { all?: boolean; gracePeriod: string }>(command))),
      ),
  );
  for (const sub of kubeletStreamingCommands<NodeOptions>({ connect, callTimeoutMs, options: (c) => merged(c) })) kubelet.addCommand(sub);
  for (const sub of kubelet.commands) sub.configureHelp({ showGlobalOptions: true });
  return kubelet;
}
