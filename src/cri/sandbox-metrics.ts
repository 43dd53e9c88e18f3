import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriBackend } from './backend.js';
import { streamUnimplemented, unary, type CallContext } from './call.js';

/** The CRI's own metrics RPCs (the kubelet's /metrics/cadvisor replacement), not our Prometheus endpoint. */
export function sandboxMetricsHandlers(
  runtime: CriBackend,
  ctx: CallContext,
): Pick<RuntimeServiceHandlers, 'ListMetricDescriptors' | 'ListPodSandboxMetrics' | 'StreamPodSandboxMetrics'> {
  return {
    ListMetricDescriptors: unary(ctx, 'ListMetricDescriptors', (req) => runtime.listMetricDescriptors(req)),
    ListPodSandboxMetrics: unary(ctx, 'ListPodSandboxMetrics', (req) => runtime.listPodSandboxMetrics(req)),
    StreamPodSandboxMetrics: streamUnimplemented(ctx, 'StreamPodSandboxMetrics', 'use ListPodSandboxMetrics'),
  };
}
