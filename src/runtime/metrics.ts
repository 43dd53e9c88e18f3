import type { ListMetricDescriptorsResponse } from '../generated/runtime/v1/ListMetricDescriptorsResponse.js';
import type { ListPodSandboxMetricsResponse } from '../generated/runtime/v1/ListPodSandboxMetricsResponse.js';
import type { Metric } from '../generated/runtime/v1/Metric.js';
import { nanosToWire } from './clock.js';
import type { RuntimeContext } from './runtime-context.js';
import { containerCpu, containerWorkingSet } from './stats.js';
import { ContainerState } from './store/container-store.js';
import { SandboxState } from './store/sandbox-store.js';
import type { RpcHandlers } from './rpc.js';

/** runtime.v1.MetricType */
const COUNTER = 0 as const;
const GAUGE = 1 as const;

const LABEL_KEYS = ['container', 'id', 'image', 'name', 'namespace', 'pod'];

/** The cAdvisor-named metrics the kubelet's CRI stats provider asks for. */
const DESCRIPTORS: { name: string; help: string; type: 0 | 1 }[] = [
  { name: 'container_cpu_usage_seconds_total', help: 'Cumulative cpu time consumed in seconds.', type: COUNTER },
  { name: 'container_memory_working_set_bytes', help: 'Current working set in bytes.', type: GAUGE },
  { name: 'container_processes', help: 'Number of processes running inside the container.', type: GAUGE },
];

export function listMetricDescriptors(): ListMetricDescriptorsResponse {
  return { descriptors: DESCRIPTORS.map((d) => ({ name: d.name, help: d.help, label_keys: LABEL_KEYS })) };
}

export function listPodSandboxMetrics(ctx: RuntimeContext): ListPodSandboxMetricsResponse {
  const now = ctx.clock.nowNanos();
  const timestamp = nanosToWire(now);
  return {
    pod_metrics: ctx.sandboxes.list({ state: SandboxState.READY }).map((sandbox) => ({
      pod_sandbox_id: sandbox.id,
      metrics: [],
      container_metrics: ctx.containers
        .inGroup(sandbox.id)
        .filter((c) => c.status.state === ContainerState.RUNNING)
        .map((c) => {
          const labels = [c.metadata?.name ?? '', c.id, c.imageName, c.name, sandbox.config.metadata?.namespace ?? '', sandbox.config.metadata?.name ?? ''];
          const values = [
            containerCpu(c, now).usageCoreNanos / 1_000_000_000n,
            BigInt(containerWorkingSet(c)),
            BigInt(c.processes.count(c.id)),
          ];
          const metrics: Metric[] = DESCRIPTORS.map((d, i) => ({
            name: d.name,
            timestamp,
            metric_type: d.type,
            label_values: labels,
            value: { value: (values[i] ?? 0n).toString() },
          }));
          return { container_id: c.id, metrics };
        }),
    })),
  };
}

/** The RPCs this file serves (see rpc.ts). */
export const metricsRpcs = { ListMetricDescriptors: listMetricDescriptors, ListPodSandboxMetrics: listPodSandboxMetrics } satisfies RpcHandlers;
