import type { PodSandboxConfig__Output } from '../../generated/runtime/v1/PodSandboxConfig.js';

/** runtime.v1.NamespaceMode NODE: the pod shares the node's network namespace. */
const NAMESPACE_MODE_NODE = 2;

/**
 * The node's own address as the simulator has it: every address it serves on is loopback, so a
 * pod in the node's network listens on, and is reached at, 127.0.0.1 (a real host-network nginx
 * binds 0.0.0.0, which 127.0.0.1 reaches as well).
 */
export const NODE_ADDRESS = '127.0.0.1';

/**
 * Whether a pod uses the node's network (hostNetwork: true): the Linux namespace option NODE, or a
 * Windows pod whose network namespace option is NODE or that is a HostProcess pod (which always
 * shares the node's network).
 */
export function isHostNetwork(config: PodSandboxConfig__Output): boolean {
  if (config.linux?.security_context?.namespace_options?.network === NAMESPACE_MODE_NODE) return true;
  const windows = config.windows?.security_context;
  return windows?.host_process === true || windows?.namespace_options?.network === NAMESPACE_MODE_NODE;
}

/**
 * Where the pod's servers listen and where port-forward connects: the pod IP, or the node's
 * address for a host-network pod (containerd's PortForward dials localhost in the sandbox's
 * network namespace, internal/cri/server/sandbox_portforward_linux.go, which for such a pod is
 * the node's).
 */
export function podListenAddress(sandbox: { ip: string; config: PodSandboxConfig__Output }): string {
  return isHostNetwork(sandbox.config) ? NODE_ADDRESS : sandbox.ip;
}
