import type { RuntimeConfigResponse } from '../generated/runtime/v1/RuntimeConfigResponse.js';
import type { StatusRequest__Output } from '../generated/runtime/v1/StatusRequest.js';
import type { StatusResponse } from '../generated/runtime/v1/StatusResponse.js';
import type { UpdateRuntimeConfigRequest__Output } from '../generated/runtime/v1/UpdateRuntimeConfigRequest.js';
import type { UpdateRuntimeConfigResponse } from '../generated/runtime/v1/UpdateRuntimeConfigResponse.js';
import { RuntimeError } from './errors.js';
import { isLoopbackCidr, parseIpv4Cidr } from './network/pod-ip-pool.js';
import type { RuntimeContext } from './runtime-context.js';

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
 */
export function updateRuntimeConfig(ctx: RuntimeContext, req: UpdateRuntimeConfigRequest__Output): UpdateRuntimeConfigResponse {
  const text = req.runtime_config?.network_config?.pod_cidr ?? '';
  if (text === '') return {};
  const first = text.split(',')[0]?.trim() ?? '';
  const cidr = parseIpv4Cidr(first);
  if (cidr === undefined) {
    throw new RuntimeError('InvalidArgument', `runtime_config.network_config.pod_cidr "${text}" is not an IPv4 CIDR`);
  }
  if (!isLoopbackCidr(cidr)) {
    if (ctx.network.kubeletPodCidr !== cidr.text) {
      ctx.network.kubeletPodCidr = cidr.text;
      ctx.logger.warn({ podCidr: cidr.text, used: ctx.network.podIps.range }, 'pod CIDR from the kubelet is not loopback: pod IPs stay in the runtime\'s range');
    }
    return {};
  }
  if (cidr.text !== ctx.network.podIps.range) {
    ctx.network.podIps.setRange(cidr);
    ctx.logger.info({ podCidr: cidr.text }, 'pod CIDR updated');
  }
  return {};
}
