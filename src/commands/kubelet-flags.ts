/**
 * The flags of `cri-winsim kubelet`, named as the real kubelet names them
 * (`--container-runtime-endpoint`, `--runtime-request-timeout`, `--hostname-override`,
 * `--root-dir`, `--pod-manifest-path`), and the names this command had before kept for one
 * release as hidden aliases that print pflag's deprecation line
 * (`Flag --runtime-endpoint has been deprecated, use --container-runtime-endpoint instead`).
 * What the cluster flags name is read in kubelet-cluster.ts, which loads the API objects' code.
 */
import { dirname, join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { unixSocketPath } from '../cri/endpoint.js';
import { defaultGmsaDesign, gmsaDesigns, type GmsaDesign } from '../apiserver/gmsa-designs.js';
import { UsageError, durationFlag, invalidFlagValue, positiveDurationFlag } from './cli-errors.js';
import { durationMs } from './go-duration.js';
import { addLogFlags, logSettings, type LogFlagValues, type LogSettings } from './log-flags.js';
import { DEFAULT_ENDPOINT } from './runtime-defaults.js';

/** The kubelet's default --runtime-request-timeout (pkg/kubelet/apis/config/v1beta1/defaults.go). */
export const DEFAULT_RUNTIME_REQUEST_TIMEOUT = '2m0s';
/** The embedded node's name: pods are bound to it unless --hostname-override says otherwise. */
export const DEFAULT_HOSTNAME = 'winnode1';

interface DeprecatedAlias {
  /** The old flag, e.g. `--runtime-endpoint`. */
  readonly flag: string;
  readonly key: string;
  /** The kubelet's flag that replaces it. */
  readonly replacement: string;
  readonly replacementKey: string;
}

/** Old names, hidden from --help and completion, still accepted for one release. */
export const DEPRECATED_ALIASES: readonly DeprecatedAlias[] = [
  { flag: '--runtime-endpoint', key: 'runtimeEndpoint', replacement: '--container-runtime-endpoint', replacementKey: 'containerRuntimeEndpoint' },
  { flag: '--request-timeout', key: 'requestTimeout', replacement: '--runtime-request-timeout', replacementKey: 'runtimeRequestTimeout' },
  { flag: '--node-name', key: 'nodeName', replacement: '--hostname-override', replacementKey: 'hostnameOverride' },
];

/** pflag's deprecation line (spf13/pflag v1.0.10 flag.go: "Flag --%s has been deprecated, %s"). */
export function deprecationText(alias: DeprecatedAlias): string {
  return `Flag ${alias.flag} has been deprecated, use ${alias.replacement} instead; ${alias.flag} will be removed in the next release`;
}

export function addNodeFlags(command: Command): Command {
  return command
    .option('--container-runtime-endpoint <endpoint>', 'the CRI endpoint of the runtime (env CONTAINER_RUNTIME_ENDPOINT)', process.env['CONTAINER_RUNTIME_ENDPOINT'] ?? DEFAULT_ENDPOINT)
    .option('--root-dir <dir>', "the kubelet's records of its pods (default: kubelet/ beside the runtime's socket)")
    .option('--hostname-override <name>', 'the node name pods are bound to (the embedded node is WINNODE1)', DEFAULT_HOSTNAME)
    .option('--runtime-request-timeout <duration>', 'deadline of each CRI call (Go duration: 30s, 2m0s, 1h)', DEFAULT_RUNTIME_REQUEST_TIMEOUT)
    .addOption(new Option('--runtime-endpoint <endpoint>').hideHelp())
    .addOption(new Option('--request-timeout <duration>').hideHelp())
    .addOption(new Option('--node-name <name>').hideHelp());
}

export function addClusterFlags(command: Command): Command {
  return command
    .option('--cluster <dir>', 'directory of cluster manifests (Namespaces, ServiceAccounts, ConfigMaps, Secrets, GMSACredentialSpecs, RuntimeClasses, RBAC)')
    .option('--kubeconfig <file>', 'read the cluster objects from the API server of this kubeconfig instead')
    .option('--context <name>', 'the kubeconfig context to use')
    .option('--as <user>', 'the requesting user admission sees (default: kubernetes-admin, in system:masters)')
    .option('--as-group <group>', 'a group of the requesting user (repeatable)', (value: string, previous: string[]) => [...previous, value], [] as string[])
    .addOption(
      new Option('--gmsa-design <design>', "the cluster's GMSA design: webhook (the shipped windows-gmsa webhook), kep-configmap (the GMSA KEP's ConfigMap design, never shipped), alpha-1.14 (the 1.14 annotations)")
        .choices([...gmsaDesigns])
        .default(defaultGmsaDesign),
    )
    .option(
      '--random-hostname',
      "the windows-gmsa webhook's RANDOM_HOSTNAME (also read from that variable): a pod with a gMSA and no spec.hostname gets a random 15-character hostname (webhook design; default false, as its chart)",
    )
    .option('--pod-logs-root <dir>', 'root of the pod log directories (default: pod-logs/ in --root-dir)');
}

export { addLogFlags };

interface RawNodeFlags extends LogFlagValues {
  containerRuntimeEndpoint: string;
  runtimeEndpoint?: string;
  rootDir?: string;
  podLogsRoot?: string;
  hostnameOverride: string;
  nodeName?: string;
  runtimeRequestTimeout: string;
  requestTimeout?: string;
}

export interface NodeSettings {
  readonly endpoint: string;
  readonly socketPath: string;
  readonly rootDir: string;
  readonly podLogsRoot: string;
  readonly hostname: string;
  readonly requestTimeoutNs: bigint;
  readonly callTimeoutMs: number;
  readonly log: LogSettings;
}

type Source = 'default' | 'config' | 'env' | 'cli' | 'implied' | undefined;

/**
 * The node flags of a parsed command (its own and its parent's), deprecated aliases folded in:
 * each alias used prints its deprecation line on stderr and counts unless the new flag was given too.
 */
export function nodeSettings(command: Command, warn: (line: string) => void): NodeSettings {
  const raw = command.optsWithGlobals<RawNodeFlags & Record<string, unknown>>();
  const source = (key: string): Source => command.getOptionValueSourceWithGlobals(key) as Source;
  const values: Record<string, string> = {
    containerRuntimeEndpoint: raw.containerRuntimeEndpoint,
    hostnameOverride: raw.hostnameOverride,
    runtimeRequestTimeout: raw.runtimeRequestTimeout,
  };
  let timeoutFlag = '--runtime-request-timeout';
  for (const alias of DEPRECATED_ALIASES) {
    const value = raw[alias.key];
    if (typeof value !== 'string') continue;
    warn(`${deprecationText(alias)}\n`);
    if (source(alias.replacementKey) !== 'cli') {
      values[alias.replacementKey] = value;
      if (alias.key === 'requestTimeout') timeoutFlag = '--request-timeout';
    }
  }
  const endpoint = values['containerRuntimeEndpoint']!;
  let socketPath: string;
  try {
    socketPath = unixSocketPath(endpoint);
  } catch (err) {
    throw invalidFlagValue('--container-runtime-endpoint', endpoint, (err as Error).message);
  }
  const requestTimeoutNs = requestTimeout(timeoutFlag, values['runtimeRequestTimeout']!);
  const rootDir = resolve(raw.rootDir ?? join(dirname(socketPath), 'kubelet'));
  return {
    endpoint,
    socketPath,
    rootDir,
    podLogsRoot: resolve(raw.podLogsRoot ?? join(rootDir, 'pod-logs')),
    hostname: values['hostnameOverride']!,
    requestTimeoutNs,
    callTimeoutMs: durationMs(requestTimeoutNs),
    log: logSettings(raw),
  };
}

/** The deprecated --request-timeout also took plain seconds (`30`), as before; the kubelet's flag takes Go durations only. */
function requestTimeout(flag: string, value: string): bigint {
  if (flag === '--request-timeout' && /^\d+(\.\d+)?$/.test(value)) return durationFlag(flag, `${value}s`);
  return positiveDurationFlag(flag, value);
}

export interface RawClusterFlags {
  gmsaDesign: GmsaDesign;
  randomHostname?: boolean;
  cluster?: string;
  kubeconfig?: string;
  context?: string;
  as?: string;
  asGroup: string[];
}

/** --gmsa-design: the GMSA design admission runs. */
export function gmsaDesign(command: Command): GmsaDesign {
  return command.optsWithGlobals<RawClusterFlags & Record<string, unknown>>().gmsaDesign;
}

/** Go's strconv.ParseBool, as the webhook reads RANDOM_HOSTNAME. */
const goBools: Record<string, boolean> = { '1': true, t: true, T: true, TRUE: true, true: true, True: true, '0': false, f: false, F: false, FALSE: false, false: false, False: false };

/**
 * --random-hostname, else the RANDOM_HOSTNAME variable read as the webhook reads it (Go's
 * ParseBool): the webhook's EnableRandomHostName; false when neither is given.
 */
export function randomHostname(command: Command, env: NodeJS.ProcessEnv = process.env): boolean {
  if (command.optsWithGlobals<RawClusterFlags & Record<string, unknown>>().randomHostname === true) return true;
  const value = env['RANDOM_HOSTNAME'];
  if (value === undefined) return false;
  const parsed = goBools[value];
  if (parsed === undefined) throw new UsageError(`unable to parse environment variable RANDOM_HOSTNAME with value ${value} to bool`);
  return parsed;
}

