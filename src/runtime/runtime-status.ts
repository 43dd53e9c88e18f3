import type { RuntimeConfigResponse } from '../generated/runtime/v1/RuntimeConfigResponse.js';
import type { StatusRequest__Output } from '../generated/runtime/v1/StatusRequest.js';
import type { StatusResponse } from '../generated/runtime/v1/StatusResponse.js';
import type { UpdateRuntimeConfigRequest__Output } from '../generated/runtime/v1/UpdateRuntimeConfigRequest.js';
import type { UpdateRuntimeConfigResponse } from '../generated/runtime/v1/UpdateRuntimeConfigResponse.js';
import { RuntimeError } from './errors.js';
import type { RuntimeContext } from './runtime-context.js';
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
        podCidr: ctx.network.podCidr,
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

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/** UpdateRuntimeConfig: the kubelet hands over the node's pod CIDR; new pod IPs come from it. */
export function updateRuntimeConfig(ctx: RuntimeContext, req: UpdateRuntimeConfigRequest__Output): UpdateRuntimeConfigResponse {
  const cidr = req.runtime_config?.network_config?.pod_cidr ?? '';
  if (cidr === '') return {};
  const first = cidr.split(',')[0]?.trim() ?? '';
  const m = CIDR.exec(first);
  if (m === null || m.slice(1, 5).some((o) => Number(o) > 255) || Number(m[5]) > 30) {
    throw new RuntimeError('InvalidArgument', `runtime_config.network_config.pod_cidr "${cidr}" is not an IPv4 CIDR`);
  }
  if (first !== ctx.network.podCidr) {
    ctx.network.podCidr = first;
    ctx.network.nextHost = 2;
    ctx.logger.info({ podCidr: first }, 'pod CIDR updated');
  }
  return {};
}

/** The next pod IP from the pod CIDR (hosts .2 upwards; wraps within the range). */
export function allocatePodIp(ctx: RuntimeContext): string {
  const m = CIDR.exec(ctx.network.podCidr);
  if (m === null) return '10.88.0.2';
  const base = m.slice(1, 5).reduce((acc, o) => acc * 256 + Number(o), 0);
  const bits = Number(m[5]);
  const size = 2 ** (32 - bits);
  const host = ctx.network.nextHost;
  ctx.network.nextHost = host + 1 >= size - 1 ? 2 : host + 1;
  const ip = (Math.floor(base / size) * size + (host % size)) >>> 0;
  return [24, 16, 8, 0].map((s) => (ip >>> s) & 255).join('.');
}

/** The RPCs this file serves (see rpc.ts). */
export const runtimeStatusRpcs = { Status: status, RuntimeConfig: runtimeConfig, UpdateRuntimeConfig: updateRuntimeConfig } satisfies RpcHandlers;
