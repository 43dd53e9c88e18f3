import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  exponentialBuckets,
  type Counter as CounterType,
  type Histogram as HistogramType,
} from 'prom-client';

/** Prefix of every metric this runtime serves. */
export const METRIC_PREFIX = 'cri_winsim_';

/**
 * Counters the Windows credential spec layer (dockershim temp files / simulated registry values)
 * increments. Kept this small so src/runtime can depend on the interface without importing
 * prom-client or anything of gRPC.
 */
export interface CredentialSpecMetrics {
  /** A credential spec file (or registry value) was written for a container. */
  onWritten(): void;
  /** A credential spec file (or registry value) was removed (after start, on error, on removal, by the sweep). */
  onRemoved(): void;
}

/**
 * Counters of the latency and faults the runtime was asked to simulate (`--latency-profile`,
 * `--inject-fault`); structurally src/runtime/call-conditions CallConditionCounters.
 */
export interface CallConditionMetrics {
  /** A call of `method` failed with an injected fault; `code` as Go names it ('Unavailable'). */
  onFaultInjected(method: string, code: string): void;
  /** A call of `method` waited `seconds` of simulated latency. */
  onLatencyInjected(method: string, seconds: number): void;
}

/** Go's name of a code ('DeadlineExceeded', 'Canceled') → grpc's constant ('DEADLINE_EXCEEDED', 'CANCELLED'). */
function grpcConstantOfGoName(code: string): string {
  if (code === 'Canceled') return 'CANCELLED';
  return code.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

/**
 * Identity operations inside containers that ask the simulated domain (nltest, klist), by
 * operation and result; structurally src/runtime/windows AdOperationCounters.
 */
export interface AdOperationMetrics {
  onOperation(op: string, result: string, seconds: number): void;
}

export interface RuntimeMetricsOptions {
  /** Number of live pod sandboxes, read at scrape time. */
  liveSandboxes?: () => number;
  /** Number of live containers, read at scrape time. */
  liveContainers?: () => number;
  /** Credential specs left behind that no container operation will remove, counted at scrape time. */
  leakedCredentialSpecs?: () => Promise<number>;
  /** Also export prom-client's process metrics (RSS, CPU, event loop lag). Default true. */
  processMetrics?: boolean;
}

/** An HTTP endpoint serving the registry at /metrics. */
export interface MetricsEndpoint {
  /** e.g. http://127.0.0.1:9090/metrics */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Kubelet names its runtime operations in snake case with "podsandbox" as one word
 * (pkg/kubelet/kuberuntime/instrumented_services.go); the only name that does not follow
 * from the RPC name is UpdateContainerResources.
 */
const OPERATION_NAME_EXCEPTIONS: Readonly<Record<string, string>> = {
  UpdateContainerResources: 'update_container',
};

/** The kubelet's operation_type for a CRI method ("RunPodSandbox" -> "run_podsandbox"). */
export function operationType(method: string): string {
  const exception = OPERATION_NAME_EXCEPTIONS[method];
  if (exception !== undefined) return exception;
  return method
    .replace(/PodSandbox/g, 'Podsandbox')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();
}

const GRPC_CODE_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(GrpcStatus)
    .filter((entry): entry is [string, number] => typeof entry[1] === 'number')
    .map(([name, code]) => [code, name]),
);

/** A gRPC status as its canonical name (0 -> "OK", 5 -> "NOT_FOUND"); names pass through upper-cased. */
export function grpcCodeName(code: number | string): string {
  if (typeof code === 'number') return GRPC_CODE_NAMES.get(code) ?? `CODE_${code}`;
  return code.toUpperCase();
}

/**
 * The runtime's Prometheus metrics: a kubelet-style latency histogram and error counter per CRI
 * method, live object gauges read through callbacks, and the credential spec file counters.
 * One instance per runtime; it owns its registry, so tests can create as many as they like.
 */
export class RuntimeMetrics {
  readonly registry: Registry;
  readonly credentialSpecs: CredentialSpecMetrics;
  readonly callConditions: CallConditionMetrics;
  readonly adOperations: AdOperationMetrics;

  private readonly operations: CounterType<'operation_type'>;
  private readonly durations: HistogramType<'operation_type'>;
  private readonly errors: CounterType<'operation_type' | 'code'>;
  // Children cached per method: onCall runs around every RPC and label hashing is not free.
  private readonly durationChildren = new Map<string, { observe(value: number): void }>();
  private readonly operationChildren = new Map<string, { inc(): void }>();
  private readonly inFlight: { inc(): void; dec(): void };
  private liveSandboxes: (() => number) | undefined;
  private liveContainers: (() => number) | undefined;
  private leakedCredentialSpecs: (() => Promise<number>) | undefined;

  constructor(options: RuntimeMetricsOptions = {}) {
    this.registry = new Registry();
    const registers = [this.registry];

    this.operations = new Counter({
      name: `${METRIC_PREFIX}runtime_operations_total`,
      help: 'Cumulative number of runtime operations by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.durations = new Histogram({
      name: `${METRIC_PREFIX}runtime_operations_duration_seconds`,
      help: 'Duration in seconds of runtime operations. Broken down by operation type.',
      labelNames: ['operation_type'],
      // The kubelet's buckets for the same histogram: 5 ms growing by 2.5, 14 buckets.
      buckets: exponentialBuckets(0.005, 2.5, 14),
      registers,
    });
    this.errors = new Counter({
      name: `${METRIC_PREFIX}runtime_operations_errors_total`,
      help: 'Cumulative number of runtime operation errors by operation type and gRPC status code.',
      labelNames: ['operation_type', 'code'],
      registers,
    });

    // Load tests wait on this (0: every call answered) instead of on a guessed pause.
    this.inFlight = new Gauge({
      name: `${METRIC_PREFIX}runtime_operations_in_flight`,
      help: 'Number of runtime operations (unary CRI calls) received and not yet answered.',
      registers,
    });

    this.liveSandboxes = options.liveSandboxes;
    this.liveContainers = options.liveContainers;
    this.leakedCredentialSpecs = options.leakedCredentialSpecs;
    // Arrow functions inside collect() would lose the gauge as `this`; read the sources through self.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    new Gauge({
      name: `${METRIC_PREFIX}runtime_live_pod_sandboxes`,
      help: 'Number of pod sandboxes the runtime holds (ready or not ready, not yet removed).',
      registers,
      collect() {
        if (self.liveSandboxes !== undefined) this.set(self.liveSandboxes());
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}runtime_live_containers`,
      help: 'Number of containers the runtime holds (any state, not yet removed).',
      registers,
      collect() {
        if (self.liveContainers !== undefined) this.set(self.liveContainers());
      },
    });

    const written = new Counter({
      name: `${METRIC_PREFIX}credential_spec_files_written_total`,
      help: 'Credential spec files (or registry values) written for containers.',
      registers,
    });
    const removed = new Counter({
      name: `${METRIC_PREFIX}credential_spec_files_removed_total`,
      help: 'Credential spec files (or registry values) removed.',
      registers,
    });
    new Gauge({
      name: `${METRIC_PREFIX}credential_spec_files_leaked`,
      help: 'Credential spec files (or registry values) left behind that no operation will remove.',
      registers,
      // Counted when scraped (a directory listing and a walk over the containers), not on every
      // credential spec operation.
      async collect() {
        if (self.leakedCredentialSpecs !== undefined) this.set(await self.leakedCredentialSpecs());
      },
    });
    this.credentialSpecs = {
      onWritten: () => written.inc(),
      onRemoved: () => removed.inc(),
    };

    const injectedFaults = new Counter({
      name: `${METRIC_PREFIX}injected_faults_total`,
      help: 'Runtime operations failed on purpose by --inject-fault, by operation type and gRPC status code.',
      labelNames: ['operation_type', 'code'],
      registers,
    });
    const injectedLatency = new Histogram({
      name: `${METRIC_PREFIX}injected_latency_seconds`,
      help: 'Simulated latency (--latency-profile) runtime operations waited before their work, by operation type.',
      labelNames: ['operation_type'],
      // As runtime_operations_duration_seconds: the kubelet's buckets, 5 ms growing by 2.5.
      buckets: exponentialBuckets(0.005, 2.5, 14),
      registers,
    });
    this.callConditions = {
      onFaultInjected: (method, code) => injectedFaults.labels(operationType(method), grpcConstantOfGoName(code)).inc(),
      onLatencyInjected: (method, seconds) => injectedLatency.labels(operationType(method)).observe(seconds),
    };

    const adOperations = new Counter({
      name: `${METRIC_PREFIX}ad_operations_total`,
      help: 'Identity operations inside containers that asked the simulated Active Directory (nltest, klist), by operation and result (success or the failure reason).',
      labelNames: ['op', 'result'],
      registers,
    });
    const adDurations = new Histogram({
      name: `${METRIC_PREFIX}ad_operation_duration_seconds`,
      help: 'Duration in seconds of identity operations that asked the simulated Active Directory, by operation.',
      labelNames: ['op'],
      buckets: exponentialBuckets(0.0001, 4, 10),
      registers,
    });
    this.adOperations = {
      onOperation: (op, result, seconds) => {
        adOperations.labels(op, result).inc();
        adDurations.labels(op).observe(seconds);
      },
    };

    if (options.processMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    }
  }

  /**
   * Sets the callbacks the live gauges read at scrape time, for when the runtime is opened after
   * the metrics (the credential spec counters must exist before the runtime opens).
   */
  setLiveObjectSources(sources: { sandboxes?: () => number; containers?: () => number; leakedCredentialSpecs?: () => Promise<number> }): void {
    if (sources.sandboxes !== undefined) this.liveSandboxes = sources.sandboxes;
    if (sources.containers !== undefined) this.liveContainers = sources.containers;
    if (sources.leakedCredentialSpecs !== undefined) this.leakedCredentialSpecs = sources.leakedCredentialSpecs;
  }

  /**
   * Records one CRI call. The gRPC server calls this around every handler, with the method name
   * as in the proto ("RunPodSandbox") and the status it answered with (0 / "OK" on success).
   */
  onCall(method: string, durationSeconds: number, code: number | string): void {
    let duration = this.durationChildren.get(method);
    let count = this.operationChildren.get(method);
    if (duration === undefined || count === undefined) {
      const operation = operationType(method);
      duration = this.durations.labels(operation);
      count = this.operations.labels(operation);
      this.durationChildren.set(method, duration);
      this.operationChildren.set(method, count);
    }
    count.inc();
    duration.observe(durationSeconds);
    if (code !== 0 && code !== 'OK' && code !== 'ok') {
      this.errors.labels(operationType(method), grpcCodeName(code)).inc();
    }
  }

  onCallStarted(): void {
    this.inFlight.inc();
  }

  onCallEnded(): void {
    this.inFlight.dec();
  }

  /** The text exposition of every metric, as served at /metrics. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * Serves /metrics over HTTP on a loopback address ("127.0.0.1:9090", "localhost:0", ":9090" or
   * "9090"; port 0 picks a free port). Other hosts are refused: the project's servers listen on
   * unix sockets or loopback only.
   */
  async serve(addr: string): Promise<MetricsEndpoint> {
    const { host, port } = parseMetricsAddress(addr);
    const server = createServer((req, res) => {
      void this.handle(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const bound = (server.address() as AddressInfo).port;
    const urlHost = host.includes(':') ? `[${host}]` : host;
    return {
      url: `http://${urlHost}:${bound}/metrics`,
      port: bound,
      close: () =>
        new Promise<void>((resolve, reject) => {
          server.closeAllConnections();
          server.close((err) => (err ? reject(err) : resolve()));
        }),
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: only /metrics is served\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' }).end('method not allowed\n');
      return;
    }
    try {
      const body = await this.registry.metrics();
      res.writeHead(200, { 'content-type': this.registry.contentType });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`collecting metrics failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);

/** Parses a --metrics-addr value; throws an Error naming the flag and the value when it is not a loopback address. */
export function parseMetricsAddress(addr: string): { host: string; port: number } {
  const trimmed = addr.trim();
  let host = '127.0.0.1';
  let portText = trimmed;
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(trimmed);
  if (bracketed) {
    host = bracketed[1];
    portText = bracketed[2];
  } else if (trimmed.includes(':')) {
    const at = trimmed.lastIndexOf(':');
    host = trimmed.slice(0, at) === '' ? '127.0.0.1' : trimmed.slice(0, at);
    portText = trimmed.slice(at + 1);
  }
  if (!/^\d+$/.test(portText) || Number(portText) > 65535) {
    throw new Error(`--metrics-addr ${JSON.stringify(addr)}: port must be a number from 0 to 65535`);
  }
  if (!LOOPBACK_HOSTS.has(host)) {
    throw new Error(
      `--metrics-addr ${JSON.stringify(addr)}: host must be a loopback address (127.0.0.1, ::1 or localhost)`,
    );
  }
  return { host: host === 'localhost' ? '127.0.0.1' : host, port: Number(portText) };
}
