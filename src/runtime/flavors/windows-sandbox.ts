import type { PodSandboxConfig__Output } from '../../generated/runtime/v1/PodSandboxConfig.js';
import type { SandboxRecord } from '../store/sandbox-store.js';

/** runtime.v1.NamespaceMode, by number. */
const NAMESPACE_MODES = ['POD', 'CONTAINER', 'NODE', 'TARGET'];

/** Where a Windows sandbox record keeps its security context (`crictl inspectp`: `info.platform.windowsSecurityContext`). */
export const WINDOWS_SANDBOX_SECURITY_KEY = 'windowsSecurityContext';

/**
 * The pod-level Windows security context as the runtime stores and shows it: the pod's run-as
 * user and credential spec (the kubelet sends the pod-level ones), whether the pod is a
 * HostProcess pod, and its network namespace mode.
 */
export interface WindowsSandboxSecurity {
  runAsUsername: string;
  /** The credential spec JSON the sandbox was created with ('' for none), shown as on a real node. */
  credentialSpec: string;
  hostProcess: boolean;
  namespaceOptions: { network: string };
}

export function windowsSandboxSecurity(config: PodSandboxConfig__Output): WindowsSandboxSecurity {
  const sc = config.windows?.security_context ?? null;
  const network = sc?.namespace_options?.network ?? 0;
  return {
    runAsUsername: sc?.run_as_username ?? '',
    credentialSpec: sc?.credential_spec ?? '',
    hostProcess: sc?.host_process ?? false,
    namespaceOptions: { network: NAMESPACE_MODES[network] ?? String(network) },
  };
}

/** The platform data of a new Windows sandbox record. */
export function windowsSandboxPlatform(config: PodSandboxConfig__Output): Record<string, unknown> {
  return { [WINDOWS_SANDBOX_SECURITY_KEY]: windowsSandboxSecurity(config) };
}

/** Whether the sandbox is a HostProcess pod (false for Linux sandboxes). */
export function sandboxHostProcess(sandbox: SandboxRecord): boolean {
  if (sandbox.os !== 'windows') return false;
  const security = sandbox.platform[WINDOWS_SANDBOX_SECURITY_KEY] as WindowsSandboxSecurity | undefined;
  return security?.hostProcess ?? sandbox.config.windows?.security_context?.host_process ?? false;
}
