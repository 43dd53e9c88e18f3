import type { RuntimeConfigResponse } from '../generated/runtime/v1/RuntimeConfigResponse.js';
import type { StatusRequest__Output } from '../generated/runtime/v1/StatusRequest.js';
import type { StatusResponse } from '../generated/runtime/v1/StatusResponse.js';
import type { UpdateRuntimeConfigRequest__Output } from '../generated/runtime/v1/UpdateRuntimeConfigRequest.js';
import type { UpdateRuntimeConfigResponse } from '../generated/runtime/v1/UpdateRuntimeConfigResponse.js';
import { RuntimeError } from './errors.js';
import { isLoopbackCidr, parseIpv4Cidr, type Ipv4Cidr } from './network/pod-ip-pool.js';
import type { NetworkSettings, RuntimeContext } from './runtime-context.js';
import type { RpcHandlers } from './rpc.js';

/** Status: RuntimeReady and NetworkReady (critest and crictl need both, true). */
export function status(ctx: RuntimeContext, req: StatusRequest__Output): StatusResponse {
  const response: StatusResponse = {
    status: {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: true, reason: '', message: '' },
      ],
    },
    runtime_handlers: ctx.settings.runtimeHandlers.map((name) => ({
      name,
      features: { recursive_read_only_mounts: false, user_namespaces: false },
    })),
    features: { supplemental_groups_policy: false, user_namespaces_host_network: false },
  };
  if (req.verbose) {
    response.info = {
      config: JSON.stringify({
        stateDir: ctx.settings.stateDir,
        runtimeHandlers: ctx.settings.runtimeHandlers,
        defaultSandboxOs: ctx.settings.defaultSandboxOs,
        cgroupDriver: ctx.settings.cgroupDriver,
        podCidr: ctx.network.podIps.range,
        ...(ctx.network.kubeletPodCidr !== '' ? { kubeletPodCidr: ctx.network.kubeletPodCidr } : {}),
      }),
      lastCNILoadStatus: 'OK',
      sandboxes: String(ctx.sandboxes.size),
      containers: String(ctx.containers.size),
      images: String(ctx.images.size),
    };
  }
  return response;
}

/** runtime.v1.CgroupDriver */
const CGROUP_DRIVER = { systemd: 0, cgroupfs: 1 } as const;

export function runtimeConfig(ctx: RuntimeContext): RuntimeConfigResponse {
  return { linux: { cgroup_driver: CGROUP_DRIVER[ctx.settings.cgroupDriver] } };
}

/**
 * UpdateRuntimeConfig: the kubelet hands over the node's pod CIDR; new pod IPs come from it when
 * it is a loopback range. Any other range (a cluster's 10.244.x.0/24) is recorded and not used:
 * this simulator hands out loopback addresses only, from `--pod-cidr`.
 *
 * A durable runtime keeps what this set across a restart (`onPodCidrChange`, docs/durability.md),
 * as containerd v2's UpdateRuntimeConfig (internal/cri/server/update_runtime_config.go) writes
 * the pod CIDR into a CNI config file in the CNI conf dir, which the restarted containerd loads.
 */
export function updateRuntimeConfig(ctx: RuntimeContext, req: UpdateRuntimeConfigRequest__Output): UpdateRuntimeConfigResponse {
  const text = req.runtime_config?.network_config?.pod_cidr ?? '';
  if (text === '') return {};
  const first = text.split(',')[0]?.trim() ?? '';
  const cidr = parseIpv4Cidr(first);
  if (cidr === undefined) {
    throw new RuntimeError('InvalidArgument', `runtime_config.network_config.pod_cidr "${text}" is not an IPv4 CIDR`);
  }
  const applied = applyPodCidr(ctx.network, cidr);
  if (applied === 'recorded') {
    ctx.logger.warn({ podCidr: cidr.text, used: ctx.network.podIps.range }, 'pod CIDR from the kubelet is not loopback: pod IPs stay in the runtime\'s range');
  } else if (applied === 'adopted') {
    ctx.logger.info({ podCidr: cidr.text }, 'pod CIDR updated');
  }
  if (applied !== undefined) ctx.network.onPodCidrChange?.();
  return {};
}

/**
 * Takes a pod CIDR the kubelet gave (UpdateRuntimeConfig, or the one a durable runtime stored
 * before its restart): a loopback range becomes the pool's range ('adopted'), any other is
 * recorded only ('recorded'); undefined when it is what the runtime has already.
 */
export function applyPodCidr(network: NetworkSettings, cidr: Ipv4Cidr): 'adopted' | 'recorded' | undefined {
  if (!isLoopbackCidr(cidr)) {
    if (network.kubeletPodCidr === cidr.text) return undefined;
    network.kubeletPodCidr = cidr.text;
    return 'recorded';
  }
  if (network.updatedPodCidr === cidr.text && network.podIps.range === cidr.text) return undefined;
  network.updatedPodCidr = cidr.text;
  network.podIps.setRange(cidr);
  return 'adopted';
}

/** The RPCs this file serves (see rpc.ts). */
export const runtimeStatusRpcs = { Status: status, RuntimeConfig: runtimeConfig, UpdateRuntimeConfig: updateRuntimeConfig } satisfies RpcHandlers;
