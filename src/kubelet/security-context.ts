/**
 * The security context the kubelet hands to the runtime, computed as the kubelet does it
 * (kubernetes pkg/securitycontext/util.go DetermineEffectiveSecurityContext, and the Windows
 * parts of pkg/kubelet/kuberuntime). Pure functions, no I/O.
 */
import type { V1Container, V1Pod, V1SecurityContext, V1WindowsSecurityContextOptions } from '@kubernetes/client-node';
import { NamespaceMode } from '../generated/runtime/v1/NamespaceMode.js';
import type { LinuxPodSandboxConfig } from '../generated/runtime/v1/LinuxPodSandboxConfig.js';
import type { NamespaceOption } from '../generated/runtime/v1/NamespaceOption.js';
import type { WindowsContainerSecurityContext } from '../generated/runtime/v1/WindowsContainerSecurityContext.js';
import type { WindowsSandboxSecurityContext } from '../generated/runtime/v1/WindowsSandboxSecurityContext.js';

/** What the kubelet refuses at sandbox or container creation time; the text is the event message. */
export class KubeletConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeletConfigError';
  }
}

const copy = <T extends object>(value: T | undefined): T | undefined => (value === undefined ? undefined : { ...value });

/** securityContextFromPodSecurityContext: the pod-level fields a container inherits. */
function fromPodSecurityContext(pod: V1Pod): V1SecurityContext | undefined {
  const podSc = pod.spec?.securityContext;
  if (podSc === undefined || podSc === null) return undefined;
  const synthesized: V1SecurityContext = {};
  if (podSc.seLinuxOptions !== undefined) synthesized.seLinuxOptions = copy(podSc.seLinuxOptions);
  if (podSc.windowsOptions !== undefined) synthesized.windowsOptions = copy(podSc.windowsOptions);
  if (podSc.runAsUser !== undefined) synthesized.runAsUser = podSc.runAsUser;
  if (podSc.runAsGroup !== undefined) synthesized.runAsGroup = podSc.runAsGroup;
  if (podSc.runAsNonRoot !== undefined) synthesized.runAsNonRoot = podSc.runAsNonRoot;
  if (podSc.seccompProfile !== undefined) synthesized.seccompProfile = copy(podSc.seccompProfile);
  if (podSc.appArmorProfile !== undefined) synthesized.appArmorProfile = copy(podSc.appArmorProfile);
  return synthesized;
}

/**
 * DetermineEffectiveSecurityContext. Pod fields are the base and container fields override one by
 * one; in windowsOptions the two GMSA fields move as a pair (a container that sets either takes
 * both from itself, so naming a spec at container level drops the pod's inlined contents), while
 * runAsUserName and hostProcess override independently.
 */
export function determineEffectiveSecurityContext(pod: V1Pod, container: V1Container): V1SecurityContext | undefined {
  const effective = fromPodSecurityContext(pod);
  const containerSc = container.securityContext;
  if (effective === undefined && (containerSc === undefined || containerSc === null)) return undefined;
  if (containerSc === undefined || containerSc === null) return effective;
  if (effective === undefined) return { ...containerSc, windowsOptions: copy(containerSc.windowsOptions) };

  if (containerSc.seLinuxOptions !== undefined) effective.seLinuxOptions = copy(containerSc.seLinuxOptions);
  if (containerSc.windowsOptions !== undefined) {
    const podOptions: V1WindowsSecurityContextOptions = effective.windowsOptions ?? {};
    const own = containerSc.windowsOptions;
    const merged: V1WindowsSecurityContextOptions = { ...podOptions };
    if (own.gmsaCredentialSpecName !== undefined || own.gmsaCredentialSpec !== undefined) {
      setOrDelete(merged, 'gmsaCredentialSpecName', own.gmsaCredentialSpecName);
      setOrDelete(merged, 'gmsaCredentialSpec', own.gmsaCredentialSpec);
    }
    if (own.runAsUserName !== undefined) merged.runAsUserName = own.runAsUserName;
    if (own.hostProcess !== undefined) merged.hostProcess = own.hostProcess;
    effective.windowsOptions = merged;
  }
  if (containerSc.capabilities !== undefined) effective.capabilities = copy(containerSc.capabilities);
  if (containerSc.privileged !== undefined) effective.privileged = containerSc.privileged;
  if (containerSc.runAsUser !== undefined) effective.runAsUser = containerSc.runAsUser;
  if (containerSc.runAsGroup !== undefined) effective.runAsGroup = containerSc.runAsGroup;
  if (containerSc.runAsNonRoot !== undefined) effective.runAsNonRoot = containerSc.runAsNonRoot;
  if (containerSc.readOnlyRootFilesystem !== undefined) effective.readOnlyRootFilesystem = containerSc.readOnlyRootFilesystem;
  if (containerSc.allowPrivilegeEscalation !== undefined) effective.allowPrivilegeEscalation = containerSc.allowPrivilegeEscalation;
  if (containerSc.procMount !== undefined) effective.procMount = containerSc.procMount;
  if (containerSc.seccompProfile !== undefined) effective.seccompProfile = copy(containerSc.seccompProfile);
  if (containerSc.appArmorProfile !== undefined) effective.appArmorProfile = copy(containerSc.appArmorProfile);
  return effective;
}

function setOrDelete<K extends keyof V1WindowsSecurityContextOptions>(
  target: V1WindowsSecurityContextOptions,
  key: K,
  value: V1WindowsSecurityContextOptions[K] | undefined,
): void {
  if (value === undefined) delete target[key];
  else target[key] = value;
}

/** All containers the kubelet considers (init, regular, ephemeral), as podutil.VisitContainers. */
export function allContainers(pod: V1Pod): V1Container[] {
  const spec = pod.spec;
  if (spec === undefined) return [];
  return [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...((spec.ephemeralContainers ?? []) as V1Container[])];
}

/** HasWindowsHostProcessRequest: the container's effective hostProcess is true. */
export function isHostProcessContainer(pod: V1Pod, container: V1Container): boolean {
  return determineEffectiveSecurityContext(pod, container)?.windowsOptions?.hostProcess === true;
}

export const hasWindowsHostProcessContainer = (pod: V1Pod): boolean => allContainers(pod).some((c) => isHostProcessContainer(pod, c));
export const allContainersAreWindowsHostProcess = (pod: V1Pod): boolean => allContainers(pod).every((c) => isHostProcessContainer(pod, c));

/**
 * The sandbox's Windows security context as sent. The kubelet v1.34 never sets its
 * namespace_options (kuberuntime_sandbox.go generatePodSandboxWindowsConfig): the namespaces
 * travel in the Linux half of the config, which a Windows kubelet sends as well.
 */
export type SandboxWindowsSecurityContext = Required<Omit<WindowsSandboxSecurityContext, 'namespace_options'>>;

/** The container's Windows security context as sent, every field set. */
export type ContainerWindowsSecurityContext = Required<WindowsContainerSecurityContext>;

/**
 * generatePodSandboxWindowsConfig: the pod-level credential spec and runAsUserName; host_process
 * when any container is a HostProcess container, which then requires all of them to be and
 * hostNetwork; a pod that says hostProcess false cannot hold one.
 */
export function sandboxWindowsSecurityContext(pod: V1Pod): SandboxWindowsSecurityContext {
  const hostNetwork = pod.spec?.hostNetwork === true;
  const context: SandboxWindowsSecurityContext = { run_as_username: '', credential_spec: '', host_process: false };
  const hostProcess = hasWindowsHostProcessContainer(pod);
  if (hostProcess) {
    if (!allContainersAreWindowsHostProcess(pod)) {
      throw new KubeletConfigError('pod must not contain both HostProcess and non-HostProcess containers');
    }
    if (!hostNetwork) throw new KubeletConfigError('hostNetwork is required if Pod contains HostProcess containers');
    context.host_process = true;
  }
  const options = pod.spec?.securityContext?.windowsOptions;
  if (options === undefined) return context;
  if (options.gmsaCredentialSpec !== undefined) context.credential_spec = options.gmsaCredentialSpec;
  if (options.runAsUserName !== undefined) context.run_as_username = options.runAsUserName;
  if (hostProcess && options.hostProcess === false) {
    throw new KubeletConfigError("pod must not contain any HostProcess containers if Pod's WindowsOptions.HostProcess is set to false");
  }
  return context;
}

/**
 * NamespacesForPod (pkg/kubelet/kuberuntime/util/util.go, kubernetes v1.34.12): ipc NODE with
 * hostIPC, network NODE with hostNetwork, pid NODE with hostPID, POD with shareProcessNamespace,
 * else CONTAINER. No userns_options: the Windows user-namespace manager returns none.
 */
export function namespacesForPod(pod: V1Pod): NamespaceOption {
  const spec = pod.spec;
  const pid = spec?.hostPID === true ? NamespaceMode.NODE : spec?.shareProcessNamespace === true ? NamespaceMode.POD : NamespaceMode.CONTAINER;
  return {
    ipc: spec?.hostIPC === true ? NamespaceMode.NODE : NamespaceMode.POD,
    network: spec?.hostNetwork === true ? NamespaceMode.NODE : NamespaceMode.POD,
    pid,
  };
}

/**
 * generatePodSandboxLinuxConfig as a Windows kubelet v1.34 runs it (kuberuntime_sandbox.go): it is
 * sent for Windows pods too. No cgroup parent (the Windows pod container manager has none),
 * privileged only with a privileged container (which the API refuses on a Windows pod), seccomp
 * RuntimeDefault, the pod's sysctls (none allowed on Windows), and the namespace options: the API
 * server defaults a pod's securityContext to `{}`, so they are always there. The user and group
 * fields are skipped on Windows.
 */
export function linuxSandboxConfig(pod: V1Pod): LinuxPodSandboxConfig {
  const privileged = allContainers(pod).some((c) => c.securityContext?.privileged === true);
  const sysctls: Record<string, string> = {};
  for (const s of pod.spec?.securityContext?.sysctls ?? []) sysctls[s.name] = s.value;
  return {
    cgroup_parent: '',
    security_context: { privileged, seccomp: { profile_type: 'RuntimeDefault' }, namespace_options: namespacesForPod(pod) },
    sysctls,
  };
}

/**
 * The container's Windows security context from its effective context. The kubelet never reads
 * gmsaCredentialSpecName: only inlined contents reach the runtime, so a name alone means no gMSA.
 */
export function containerWindowsSecurityContext(pod: V1Pod, container: V1Container, imageUser = ''): ContainerWindowsSecurityContext {
  const options = determineEffectiveSecurityContext(pod, container)?.windowsOptions;
  return {
    // generateWindowsContainerConfig (kuberuntime_container_windows.go, kubernetes v1.34.12): the
    // image's user (getImageUser: ImageStatus username, '' when the image has a uid) is the base,
    // runAsUserName overrides it.
    run_as_username: options?.runAsUserName ?? imageUser,
    credential_spec: options?.gmsaCredentialSpec ?? '',
    host_process: options?.hostProcess === true,
  };
}

/** Windows' root identity; compared case-insensitively. */
export const windowsRootUserName = 'ContainerAdministrator';

/** format.Pod: `name_namespace(uid)`. */
export function formatPod(pod: V1Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

/**
 * verifyRunAsNonRoot (Windows): with runAsNonRoot, the effective runAsUserName, or else the image's
 * user, must not be ContainerAdministrator in any case. Returns the refusal text or undefined.
 */
export function verifyRunAsNonRoot(pod: V1Pod, container: V1Container, imageUser: string): string | undefined {
  const effective = determineEffectiveSecurityContext(pod, container);
  if (effective?.runAsNonRoot !== true) return undefined;
  const podRef = JSON.stringify(formatPod(pod));
  const runAsUserName = effective.windowsOptions?.runAsUserName;
  if (runAsUserName !== undefined) {
    if (runAsUserName.toLowerCase() === windowsRootUserName.toLowerCase()) {
      return `container's runAsUserName (${runAsUserName}) which will be regarded as root identity and will break non-root policy (pod: ${podRef}, container: ${container.name})`;
    }
    return undefined;
  }
  if (imageUser !== '' && imageUser.toLowerCase() === windowsRootUserName.toLowerCase()) {
    return `container's runAsUser (${imageUser}) which will be regarded as root identity and will break non-root policy (pod: ${podRef}, container: ${container.name})`;
  }
  return undefined;
}

/**
 * What the kubelet decided for a container's Windows identity, kept in the pod's record where it
 * decides it (pod-worker.ts), for `cri-winsim explain`: the effective windowsOptions and where each
 * came from, and what went into the CRI config. The credential spec itself is in the admitted pod;
 * here only its size and SHA-256, to compare with what the runtime received.
 */
export interface ContainerIdentityRecord {
  readonly effective: {
    readonly gmsaCredentialSpecName?: string;
    /** Where the credential spec pair came from: the container's own windowsOptions, the pod's, or neither. */
    readonly credentialSpecFrom: 'container' | 'pod' | 'none';
    readonly credentialSpecBytes: number;
    readonly runAsUserName?: string;
    readonly runAsUserNameFrom: 'container' | 'pod' | 'image' | 'none';
    readonly hostProcess: boolean;
  };
  readonly criConfig: {
    readonly credentialSpecBytes: number;
    /** Hex SHA-256 of credential_spec ('' when empty). */
    readonly credentialSpecSha256: string;
    readonly runAsUsername: string;
    readonly hostProcess: boolean;
  };
}

/** The record of a container's identity as the kubelet sends it (`imageUser`: the image's user, as for the config). */
export function containerIdentityRecord(pod: V1Pod, container: V1Container, sent: ContainerWindowsSecurityContext, sha256: (text: string) => string): ContainerIdentityRecord {
  const effective = determineEffectiveSecurityContext(pod, container)?.windowsOptions ?? {};
  const own = container.securityContext?.windowsOptions;
  const podOptions = pod.spec?.securityContext?.windowsOptions;
  const ownPair = own?.gmsaCredentialSpecName !== undefined || own?.gmsaCredentialSpec !== undefined;
  const podPair = podOptions?.gmsaCredentialSpecName !== undefined || podOptions?.gmsaCredentialSpec !== undefined;
  const runAsFrom = own?.runAsUserName !== undefined ? 'container' : podOptions?.runAsUserName !== undefined ? 'pod' : sent.run_as_username !== '' ? 'image' : 'none';
  return {
    effective: {
      ...(effective.gmsaCredentialSpecName === undefined ? {} : { gmsaCredentialSpecName: effective.gmsaCredentialSpecName }),
      credentialSpecFrom: ownPair ? 'container' : podPair ? 'pod' : 'none',
      credentialSpecBytes: Buffer.byteLength(effective.gmsaCredentialSpec ?? '', 'utf8'),
      ...(effective.runAsUserName === undefined ? {} : { runAsUserName: effective.runAsUserName }),
      runAsUserNameFrom: runAsFrom,
      hostProcess: effective.hostProcess === true,
    },
    criConfig: {
      credentialSpecBytes: Buffer.byteLength(sent.credential_spec, 'utf8'),
      credentialSpecSha256: sent.credential_spec === '' ? '' : sha256(sent.credential_spec),
      runAsUsername: sent.run_as_username,
      hostProcess: sent.host_process,
    },
  };
}
