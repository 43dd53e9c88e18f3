/**
 * CRI configs from an admitted pod, as the kubelet builds them (pkg/kubelet/kuberuntime
 * generatePodSandboxConfig, generateContainerConfig and their Windows halves): metadata, hostname,
 * log paths, the kubelet's labels, annotations, environment, and the Windows security contexts.
 */
import { join } from 'node:path';
import type { V1ConfigMap, V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import type { ContainerConfig } from '../generated/runtime/v1/ContainerConfig.js';
import type { KeyValue } from '../generated/runtime/v1/KeyValue.js';
import type { PodSandboxConfig } from '../generated/runtime/v1/PodSandboxConfig.js';
import type { PortMapping } from '../generated/runtime/v1/PortMapping.js';
import type { WindowsContainerResources } from '../generated/runtime/v1/WindowsContainerResources.js';
import { containerWindowsSecurityContext, KubeletConfigError, linuxSandboxConfig, sandboxWindowsSecurityContext, verifyRunAsNonRoot } from './security-context.js';

/** The kubelet's own labels (pkg/kubelet/types/labels.go). */
export const KubernetesPodNameLabel = 'io.kubernetes.pod.name';
export const KubernetesPodNamespaceLabel = 'io.kubernetes.pod.namespace';
export const KubernetesPodUIDLabel = 'io.kubernetes.pod.uid';
export const KubernetesContainerNameLabel = 'io.kubernetes.container.name';

/** Where the kubelet keeps pod logs; configurable so tests write under a temporary directory. */
export const defaultPodLogsRoot = '/var/log/pods';

/** BuildPodLogsDirectory: `<root>/<namespace>_<name>_<uid>`. */
export function podLogsDirectory(podLogsRoot: string, pod: V1Pod): string {
  const m = pod.metadata ?? {};
  return join(podLogsRoot, `${m.namespace ?? ''}_${m.name ?? ''}_${m.uid ?? ''}`);
}

/** The container's log path, relative to the sandbox's log directory: `<name>/<attempt>.log`. */
export const containerLogPath = (containerName: string, attempt: number): string => join(containerName, `${attempt}.log`);

/** GeneratePodHostNameAndDomain: spec.hostname, else the pod name cut to a DNS label (63). */
export function podHostname(pod: V1Pod): string {
  const hostname = pod.spec?.hostname || pod.metadata?.name || '';
  return hostname.length <= 63 ? hostname : hostname.slice(0, 63).replace(/[-.]+$/, '');
}

const protocols: Record<string, 0 | 1 | 2> = { TCP: 0, UDP: 1, SCTP: 2 };

/** makePortMappings: every declared container port. */
function portMappings(pod: V1Pod): PortMapping[] {
  const hostNetwork = pod.spec?.hostNetwork === true;
  return (pod.spec?.containers ?? []).flatMap((c) =>
    (c.ports ?? []).map((p) => ({
      protocol: protocols[p.protocol ?? 'TCP'] ?? 0,
      container_port: p.containerPort,
      // API defaulting: with hostNetwork an unset hostPort is the containerPort.
      host_port: p.hostPort ?? (hostNetwork ? p.containerPort : 0),
      host_ip: p.hostIP ?? '',
    })),
  );
}

export interface SandboxConfigOptions {
  readonly podLogsRoot: string;
  readonly attempt?: number;
}

/** generatePodSandboxConfig for a Windows node. Throws KubeletConfigError on the HostProcess rules. */
export function buildPodSandboxConfig(pod: V1Pod, options: SandboxConfigOptions): PodSandboxConfig {
  const m = pod.metadata ?? {};
  const config: PodSandboxConfig = {
    metadata: { name: m.name ?? '', namespace: m.namespace ?? '', uid: m.uid ?? '', attempt: options.attempt ?? 0 },
    labels: { ...(m.labels ?? {}), [KubernetesPodNameLabel]: m.name ?? '', [KubernetesPodNamespaceLabel]: m.namespace ?? '', [KubernetesPodUIDLabel]: m.uid ?? '' },
    annotations: { ...(m.annotations ?? {}) },
    log_directory: podLogsDirectory(options.podLogsRoot, pod),
    port_mappings: portMappings(pod),
    linux: linuxSandboxConfig(pod),
    windows: { security_context: sandboxWindowsSecurityContext(pod) },
  };
  // A host-network pod keeps the node's hostname: the kubelet sends none.
  if (pod.spec?.hostNetwork !== true) config.hostname = podHostname(pod);
  return config;
}

// ---- quantities (resource limits) ----

const binarySuffixes: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const decimalSuffixes: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** A Kubernetes quantity ("500m", "2Gi", "1e3") as a number, or an error naming the value. */
export function parseQuantity(value: string | number, path: string): number {
  if (typeof value === 'number') return value;
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/.exec(value.trim());
  if (match === null) throw new KubeletConfigError(`${path}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`);
  const base = Number(match[1]);
  if (match[2] !== undefined) return base * 10 ** Number(match[2].slice(1));
  const suffix = match[3] ?? '';
  return base * (binarySuffixes[suffix] ?? decimalSuffixes[suffix] ?? 1);
}

/** calculateWindowsResources: CPU limit as a share of the node's processors, memory limit in bytes. */
export function windowsResources(container: V1Container, nodeCpuCount: number): WindowsContainerResources {
  const resources: WindowsContainerResources = {};
  const limits = container.resources?.limits ?? {};
  if (limits['cpu'] !== undefined) {
    const milli = Math.ceil(parseQuantity(limits['cpu'], 'resources.limits.cpu') * 1000);
    if (milli > 0) {
      const maximum = Math.floor((10000 * milli) / nodeCpuCount / 1000);
      resources.cpu_maximum = String(Math.min(10000, Math.max(1, maximum)));
    }
  }
  if (limits['memory'] !== undefined) {
    const bytes = Math.ceil(parseQuantity(limits['memory'], 'resources.limits.memory'));
    if (bytes > 0) resources.memory_limit_in_bytes = String(bytes);
  }
  return resources;
}

// ---- environment ----

/**
 * $(VAR) expansion (third_party/forked/golang/expansion): defined names are replaced, `$$` is a
 * literal `$`, anything else stays as written.
 */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    if (c !== '$' || i + 1 >= input.length) {
      out += c;
      continue;
    }
    const next = input[i + 1]!;
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const end = input.indexOf(')', i + 2);
      if (end === -1) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, end);
      const value = lookup(name);
      out += value ?? `$(${name})`;
      i = end;
    } else {
      out += c;
    }
  }
  return out;
}

/** Reads the object field a fieldRef names (the downward API subset a pod can see before it runs). */
function fieldRefValue(pod: V1Pod, fieldPath: string, nodeName: string): string {
  const m = pod.metadata ?? {};
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (keyed !== null) return (keyed[1] === 'labels' ? m.labels : m.annotations)?.[keyed[2]!] ?? '';
  switch (fieldPath) {
    case 'metadata.name':
      return m.name ?? '';
    case 'metadata.namespace':
      return m.namespace ?? '';
    case 'metadata.uid':
      return m.uid ?? '';
    case 'spec.nodeName':
      return pod.spec?.nodeName || nodeName;
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    default:
      throw new KubeletConfigError(`unsupported fieldPath: ${fieldPath}`);
  }
}

export interface EnvironmentSources {
  readonly configMaps: readonly V1ConfigMap[];
  readonly nodeName: string;
}

/** makeEnvironmentVariables: envFrom ConfigMaps, then env in order, each expanding the ones before. */
export function containerEnvironment(pod: V1Pod, container: V1Container, sources: EnvironmentSources): KeyValue[] {
  const namespace = pod.metadata?.namespace ?? '';
  const values = new Map<string, string>();
  const configMap = (name: string, optional: boolean): V1ConfigMap | undefined => {
    const found = sources.configMaps.find((c) => c.metadata?.namespace === namespace && c.metadata?.name === name);
    if (found === undefined && !optional) throw new KubeletConfigError(`configmap ${JSON.stringify(name)} not found`);
    return found;
  };
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef === undefined) continue;
    const found = configMap(from.configMapRef.name ?? '', from.configMapRef.optional === true);
    for (const [key, value] of Object.entries(found?.data ?? {})) values.set(`${from.prefix ?? ''}${key}`, value);
  }
  const lookup = (name: string): string | undefined => values.get(name);
  for (const env of container.env ?? []) values.set(env.name, envValue(pod, env, lookup, configMap, sources.nodeName));
  return [...values].map(([key, value]) => ({ key, value }));
}

function envValue(
  pod: V1Pod,
  env: V1EnvVar,
  lookup: (name: string) => string | undefined,
  configMap: (name: string, optional: boolean) => V1ConfigMap | undefined,
  nodeName: string,
): string {
  if (env.value !== undefined) return expand(env.value, lookup);
  const from = env.valueFrom;
  if (from === undefined) return '';
  if (from.fieldRef !== undefined) return fieldRefValue(pod, from.fieldRef.fieldPath, nodeName);
  if (from.configMapKeyRef !== undefined) {
    const ref = from.configMapKeyRef;
    const found = configMap(ref.name ?? '', ref.optional === true);
    const value = found?.data?.[ref.key];
    if (value === undefined && found !== undefined && ref.optional !== true) {
      throw new KubeletConfigError(`couldn't find key ${ref.key} in ConfigMap ${pod.metadata?.namespace}/${ref.name}`);
    }
    return value ?? '';
  }
  if (from.secretKeyRef !== undefined) {
    if (from.secretKeyRef.optional === true) return '';
    throw new KubeletConfigError(`secret ${JSON.stringify(from.secretKeyRef.name ?? '')} not found`);
  }
  throw new KubeletConfigError(`env ${env.name}: unsupported valueFrom`);
}

// ---- container config ----

/** FNV-1a (32 bit): the kubelet's container hash, which tells it when a spec changed. */
export function containerHash(container: V1Container): string {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(JSON.stringify(container), 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16);
}

export interface ContainerConfigOptions {
  /** The restart count: the container's attempt and its log file's number. */
  readonly attempt?: number;
  readonly configMaps?: readonly V1ConfigMap[];
  readonly nodeName?: string;
  readonly nodeCpuCount?: number;
  /**
   * The image's configured user as getImageUser reads it (ImageStatus username; '' when the image
   * has a uid or no user): the runAsNonRoot check and the default run_as_username.
   */
  readonly imageUser?: string;
  /** The image reference EnsureImageExists resolved (the image id); the spec's image when absent. */
  readonly imageRef?: string;
}

/** generateContainerConfig for a Windows node. Throws KubeletConfigError (CreateContainerConfigError). */
export function buildContainerConfig(pod: V1Pod, container: V1Container, options: ContainerConfigOptions = {}): ContainerConfig {
  const attempt = options.attempt ?? 0;
  const m = pod.metadata ?? {};
  const nonRootRefusal = verifyRunAsNonRoot(pod, container, options.imageUser ?? '');
  if (nonRootRefusal !== undefined) throw new KubeletConfigError(nonRootRefusal);
  const envs = containerEnvironment(pod, container, { configMaps: options.configMaps ?? [], nodeName: options.nodeName ?? '' });
  const envLookup = (name: string): string | undefined => envs.find((e) => e.key === name)?.value;
  const annotations: Record<string, string> = {
    'io.kubernetes.container.hash': containerHash(container),
    'io.kubernetes.container.restartCount': String(attempt),
    'io.kubernetes.container.terminationMessagePath': container.terminationMessagePath ?? '/dev/termination-log',
    'io.kubernetes.container.terminationMessagePolicy': container.terminationMessagePolicy ?? 'File',
    'io.kubernetes.pod.terminationGracePeriod': String(pod.spec?.terminationGracePeriodSeconds ?? 30),
  };
  if ((container.ports ?? []).length > 0) annotations['io.kubernetes.container.ports'] = JSON.stringify(container.ports);
  const config: ContainerConfig = {
    metadata: { name: container.name, attempt },
    // The kubelet sends the resolved image id and keeps what the user wrote beside it.
    image: { image: options.imageRef || (container.image ?? ''), user_specified_image: container.image ?? '' },
    command: (container.command ?? []).map((s) => expand(s, envLookup)),
    args: (container.args ?? []).map((s) => expand(s, envLookup)),
    working_dir: container.workingDir ?? '',
    envs,
    labels: {
      [KubernetesPodNameLabel]: m.name ?? '',
      [KubernetesPodNamespaceLabel]: m.namespace ?? '',
      [KubernetesPodUIDLabel]: m.uid ?? '',
      [KubernetesContainerNameLabel]: container.name,
    },
    annotations,
    log_path: containerLogPath(container.name, attempt),
    stdin: container.stdin === true,
    stdin_once: container.stdinOnce === true,
    tty: container.tty === true,
    windows: {
      resources: windowsResources(container, options.nodeCpuCount ?? 2),
      security_context: containerWindowsSecurityContext(pod, container, options.imageUser ?? ''),
    },
  };
  return config;
}
