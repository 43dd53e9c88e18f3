/**
 * The kubelet's Prometheus endpoints. /metrics: the server's own request metrics
 * (pkg/kubelet/server/metrics/metrics.go, v1.34: kubelet_http_requests_total,
 * kubelet_http_requests_duration_seconds, kubelet_http_inflight_requests, labelled method, path,
 * server_type, long_running) plus kubelet_node_name, kubelet_running_pods and
 * kubelet_running_containers (pkg/kubelet/metrics/metrics.go), one registry per server.
 * /metrics/resource: the resource metrics collector (pkg/kubelet/metrics/collectors/
 * resource_metrics.go, v1.34) over the stats summary, samples stamped with their stats' time.
 * component-base prefixes help texts with the stability level ("[STABLE] ", "[ALPHA] ").
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { unaryCall, type CriClient } from '../../cri/proto.js';
import type { Summary } from './stats-summary.js';

const LABELS = ['method', 'path', 'server_type', 'long_running'] as const;

/** Prometheus DefBuckets, which metrics.DefBuckets is. */
const DEF_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const METHOD_BUCKETS: ReadonlySet<string> = new Set(['OPTIONS', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'TRACE', 'CONNECT']);
const PATH_BUCKETS: ReadonlySet<string> = new Set(['healthz', 'pods', 'stats', 'metrics', 'metrics/cadvisor', 'metrics/probes', 'metrics/resource', 'run', 'exec', 'attach', 'portForward', 'containerLogs', 'configz', 'runningpods']);
// Upstream spells it "portforward": the portForward bucket is not counted as long-running there either.
const LONG_RUNNING: ReadonlySet<string> = new Set(['exec', 'attach', 'portforward', 'debug']);

/** getURLRootPath: "metrics/xxx" for metrics paths, else the first path segment. */
export function urlRootPath(path: string): string {
  const parts = path.replace(/^\//, '').split('/', 3);
  if (parts[0] === 'metrics' && parts.length > 1) return `${parts[0]}/${parts[1]}`;
  return parts[0] ?? path;
}

export class KubeletServerMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<(typeof LABELS)[number]>;
  private readonly duration: Histogram<(typeof LABELS)[number]>;
  private readonly inflight: Gauge<(typeof LABELS)[number]>;

  constructor(nodeName: string, cri: CriClient, callTimeoutMs: number) {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'kubelet_http_requests_total', help: '[ALPHA] Number of the http requests received since the server started', labelNames: LABELS, registers });
    this.duration = new Histogram({ name: 'kubelet_http_requests_duration_seconds', help: '[ALPHA] Duration in seconds to serve http requests', labelNames: LABELS, buckets: DEF_BUCKETS, registers });
    this.inflight = new Gauge({ name: 'kubelet_http_inflight_requests', help: '[ALPHA] Number of the inflight http requests', labelNames: LABELS, registers });
    new Gauge({ name: 'kubelet_node_name', help: '[ALPHA] The node\'s name. The count is always 1.', labelNames: ['node'], registers }).set({ node: nodeName }, 1);
    new Gauge({
      name: 'kubelet_running_pods',
      help: '[ALPHA] Number of pods that have a running pod sandbox',
      registers,
      async collect() {
        const { items } = await unaryCall(cri.runtime, 'ListPodSandbox', { filter: { state: { state: 0 } } }, { timeoutMs: callTimeoutMs });
        this.set(items.length);
      },
    });
    const states = ['created', 'running', 'exited', 'unknown'];
    new Gauge({
      name: 'kubelet_running_containers',
      help: '[ALPHA] Number of containers currently running',
      labelNames: ['container_state'],
      registers,
      async collect() {
        const { containers } = await unaryCall(cri.runtime, 'ListContainers', {}, { timeoutMs: callTimeoutMs });
        const counts = new Map(states.map((s) => [s, 0]));
        for (const c of containers) {
          const state = states[c.state] ?? 'unknown';
          counts.set(state, (counts.get(state) ?? 0) + 1);
        }
        for (const [state, n] of counts) this.set({ container_state: state }, n);
      },
    });
  }

  /** Counts a request and returns the function that ends it (ServeHTTP's deferred calls). */
  begin(method: string | undefined, path: string): () => void {
    const m = method !== undefined && METHOD_BUCKETS.has(method) ? method : 'other';
    const root = urlRootPath(path);
    const p = PATH_BUCKETS.has(root) ? root : 'other';
    const labels = { method: m, path: p, server_type: 'readwrite', long_running: String(LONG_RUNNING.has(p)) };
    this.requests.inc(labels);
    this.inflight.inc(labels);
    const start = process.hrtime.bigint();
    return () => {
      this.inflight.dec(labels);
      this.duration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    };
  }
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

const ms = (time: string): number => Date.parse(time);

/** The text of /metrics/resource for a summary (Prometheus text format 0.0.4). */
export function resourceMetricsText(summary: Summary): string {
  const out: string[] = [];
  const family = (name: string, help: string, type: 'counter' | 'gauge', samples: string[]): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
  };
  const labels = (pairs: Record<string, string>): string => `{${Object.entries(pairs).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;

  const startTimes: string[] = [];
  const containerCpu: string[] = [];
  const containerMemory: string[] = [];
  const podCpu: string[] = [];
  const podMemory: string[] = [];
  for (const pod of summary.pods) {
    const podLabels = { namespace: pod.podRef.namespace, pod: pod.podRef.name };
    for (const c of pod.containers) {
      const l = labels({ container: c.name, ...podLabels });
      const start = Date.parse(c.startTime);
      if (start > 0) startTimes.push(`container_start_time_seconds${l} ${start / 1000}`);
      if (c.cpu?.usageCoreNanoSeconds !== undefined) containerCpu.push(`container_cpu_usage_seconds_total${l} ${c.cpu.usageCoreNanoSeconds / 1e9} ${ms(c.cpu.time)}`);
      if (c.memory?.workingSetBytes !== undefined) containerMemory.push(`container_memory_working_set_bytes${l} ${c.memory.workingSetBytes} ${ms(c.memory.time)}`);
    }
    const l = labels(podLabels);
    if (pod.cpu?.usageCoreNanoSeconds !== undefined) podCpu.push(`pod_cpu_usage_seconds_total${l} ${pod.cpu.usageCoreNanoSeconds / 1e9} ${ms(pod.cpu.time)}`);
    if (pod.memory?.workingSetBytes !== undefined) podMemory.push(`pod_memory_working_set_bytes${l} ${pod.memory.workingSetBytes} ${ms(pod.memory.time)}`);
  }
  if (containerCpu.length > 0) family('container_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the container in core-seconds', 'counter', containerCpu);
  if (containerMemory.length > 0) family('container_memory_working_set_bytes', '[STABLE] Current working set of the container in bytes', 'gauge', containerMemory);
  if (startTimes.length > 0) family('container_start_time_seconds', '[STABLE] Start time of the container since unix epoch in seconds', 'gauge', startTimes);
  const n = summary.node;
  if (n.cpu?.usageCoreNanoSeconds !== undefined) family('node_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the node in core-seconds', 'counter', [`node_cpu_usage_seconds_total ${n.cpu.usageCoreNanoSeconds / 1e9} ${ms(n.cpu.time)}`]);
  if (n.memory?.workingSetBytes !== undefined) family('node_memory_working_set_bytes', '[STABLE] Current working set of the node in bytes', 'gauge', [`node_memory_working_set_bytes ${n.memory.workingSetBytes} ${ms(n.memory.time)}`]);
  if (podCpu.length > 0) family('pod_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', 'counter', podCpu);
  if (podMemory.length > 0) family('pod_memory_working_set_bytes', '[STABLE] Current working set of the pod in bytes', 'gauge', podMemory);
  family('resource_scrape_error', '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', 'gauge', ['resource_scrape_error 0']);
  return `${out.join('\n')}\n`;
}

/** /metrics/resource when the summary could not be had: only the scrape error. */
export function resourceScrapeErrorText(): string {
  return '# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n# TYPE resource_scrape_error gauge\nresource_scrape_error 1\n';
}
