/**
 * The kubelet's HTTPS server (pkg/kubelet/server/server.go and auth.go, v1.34): what the API
 * server, metrics-server and kubectl reach on a node's daemon endpoint. Every request is
 * authenticated (client certificate, bearer token via TokenReview, or anonymous when allowed) and
 * authorized (SubjectAccessReview on nodes/<subresource>, or AlwaysAllow) before it is routed:
 *
 *   /healthz                                  ok
 *   /pods                                     PodList of the pods bound to the node
 *   /containerLogs/{ns}/{pod}/{container}     the CRI log file (follow, previous, since…, tail…, limitBytes)
 *   /stats/summary                            Summary API from CRI stats
 *   /metrics, /metrics/resource               Prometheus text
 *   POST /run/{ns}/{pod}[/{uid}]/{container}  ExecSync, combined output
 *   /exec, /attach, /portForward              CRI Exec/Attach/PortForward, the upgraded connection
 *                                             proxied to the streaming URL the runtime returns
 *
 * The server talks to the runtime through a CRI client only, and holds no module-level state:
 * one process may run many of them (one per simulated node).
 */
import { createServer, type Server } from 'node:https';
import { ServerResponse, type IncomingMessage } from 'node:http';
import { isIP, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { unaryCall, type CriClient } from '../../cri/proto.js';
import { silentLogger, type Logger } from '../../log.js';
import { grpcErrorString } from '../pod-worker.js';
import { ClientCertificateAuthenticator, KubeletAuthenticator, TokenReviewAuthenticator, type RequestAuthenticator } from './authentication.js';
import { AlwaysAllowAuthorizer, requestAttributes, SubjectAccessReviewAuthorizer, type Authorizer } from './authorization.js';
import { parseLogOptions, readLogs, type LogSink } from './container-logs.js';
import { RuntimePods } from './runtime-pods.js';
import { KubeletServerMetrics, resourceMetricsText, resourceScrapeErrorText } from './server-metrics.js';
import { readPemFile, selfSignedServingCertificate } from './serving-certificate.js';
import { statsSummary } from './stats-summary.js';
import { isUpgradeRequest, proxyUpgrade } from './upgrade-proxy.js';

export type { UserInfo } from './authentication.js';

export interface KubeletServerOptions {
  /** --address; loopback only (127.0.0.0/8 or ::1). Default 127.0.0.1. */
  readonly address?: string;
  /** --port, default 10250; 0 picks a free port. */
  readonly port?: number;
  /** --tls-cert-file and --tls-private-key-file; without them a self-signed certificate is made. */
  readonly tlsCertFile?: string;
  readonly tlsPrivateKeyFile?: string;
  /** --client-ca-file: client certificates signed by it authenticate (user = CN, groups = O). */
  readonly clientCaFile?: string;
  /** --anonymous-auth (the kubelet's default is false in its config file, true as a flag). */
  readonly anonymousAuth: boolean;
  /** --authorization-mode. */
  readonly authorizationMode: 'Webhook' | 'AlwaysAllow';
  /** The node's client configuration, for TokenReview and SubjectAccessReview. */
  readonly kubeConfig?: KubeConfig;
  readonly nodeName: string;
  readonly cri: CriClient;
  /** The pods bound to the node (the kubelet's pod manager). */
  pods(): readonly V1Pod[];
  /** Deadline of each CRI call (default 10 s). */
  readonly callTimeoutMs?: number;
  /** When the node started, for /stats/summary (default: when the server started). */
  readonly nodeStartTime?: Date;
  /** The node's memory capacity, for the summary's availableBytes. */
  readonly memoryCapacityBytes?: number;
  /** authentication.webhook.cacheTTL (default 2 min). */
  readonly tokenReviewCacheTtlMs?: number;
  /** authorization.webhook.cacheAuthorizedTTL / cacheUnauthorizedTTL (default 5 min / 30 s). */
  readonly authorizedCacheTtlMs?: number;
  readonly unauthorizedCacheTtlMs?: number;
  /** The sync loop's health for /healthz (an error text when unhealthy). */
  readonly syncLoopHealth?: () => string | undefined;
  readonly logger?: Logger;
}

export interface KubeletServer {
  readonly address: string;
  readonly port: number;
  /** Stops listening and ends every connection, upgraded ones included. */
  close(): Promise<void>;
}

/** Whether an address is loopback (127.0.0.0/8 or ::1). */
export function isLoopbackAddress(address: string): boolean {
  if (isIP(address) === 4) return address.startsWith('127.');
  if (isIP(address) === 6) return address === '::1' || address === '0:0:0:0:0:0:0:1';
  return false;
}

const DEFAULT_PORT = 10250;

/** A reply to a request that arrived as an upgrade: an HTTP response written on its socket. */
function responseOnSocket(req: IncomingMessage, socket: Duplex): ServerResponse {
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  res.on('finish', () => {
    res.detachSocket(socket as Socket);
    socket.end();
  });
  return res;
}

/** go-restful's WriteErrorString / http.Error: the text as it is, as text/plain. */
function text(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end(body);
    return;
  }
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', ...headers });
  res.end(body);
}

/** metav1.Time in JSON: RFC3339 at second precision (a Date's own toJSON would add milliseconds). */
function timeReplacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  return original instanceof Date ? original.toISOString().replace(/\.\d{3}Z$/, 'Z') : value;
}

function json(res: ServerResponse, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body, timeReplacer));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': data.length });
  res.end(data);
}

/** The path's segments, percent-decoded; undefined when one cannot be decoded. */
function segments(pathname: string): string[] | undefined {
  try {
    return pathname.split('/').slice(1).map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

function findPod(pods: readonly V1Pod[], namespace: string, name: string): V1Pod | undefined {
  return pods.find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
}

/** kubecontainer.GetContainerSpec: containers, init containers, ephemeral containers. */
function containerSpec(pod: V1Pod, name: string): V1Container | undefined {
  const spec = pod.spec;
  return spec?.containers.find((c) => c.name === name)
    ?? spec?.initContainers?.find((c) => c.name === name)
    ?? (spec?.ephemeralContainers?.find((c) => c.name === name) as V1Container | undefined);
}

/** remotecommand NewOptions (k8s.io/kubelet pkg/cri/streaming/remotecommand, v0.34). */
function streamOptions(query: URLSearchParams): { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean } | string {
  const tty = query.get('tty') === '1';
  const stdin = query.get('input') === '1';
  const stdout = query.get('output') === '1';
  // tty with stderr is not supported: stderr is bypassed
  const stderr = query.get('error') === '1' && !tty;
  if (!stdin && !stdout && !stderr) return 'you must specify at least 1 of stdin, stdout, stderr';
  return { stdin, stdout, stderr, tty };
}

/** portforward NewV4Options: WebSocket requests name their ports in the query; SPDY ones in streams. */
function portForwardPorts(req: IncomingMessage, query: URLSearchParams): number[] | string {
  const websocket = String(req.headers.upgrade ?? '').toLowerCase() === 'websocket';
  if (!websocket) return [];
  const values = query.getAll('port');
  if (values.length === 0) return 'query parameter "port" is required';
  const ports: number[] = [];
  for (const value of values) {
    for (const p of value.split(',')) {
      if (!/^\d+$/.test(p) || Number(p) > 65535) return `unable to parse "${p}" as a port: strconv.ParseUint: parsing "${p}": ${/^\d+$/.test(p) ? 'value out of range' : 'invalid syntax'}`;
      if (Number(p) < 1) return `port "${p}" must be > 0`;
      ports.push(Number(p));
    }
  }
  return ports;
}

/** streaming.WriteError: NotFound → 404, ResourceExhausted → 429, anything else 500; the error's text. */
function streamingError(res: ServerResponse, err: unknown): void {
  const code = (err as { code?: unknown }).code;
  const status = code === 5 ? 404 : code === 8 ? 429 : 500;
  text(res, status, grpcErrorString(err), code === 8 ? { 'Retry-After': '60' } : {});
}

export async function startKubeletServer(options: KubeletServerOptions): Promise<KubeletServer> {
  const address = options.address ?? '127.0.0.1';
  if (!isLoopbackAddress(address)) throw new Error(`--address: ${address} is not a loopback address (cri-winsim serves on 127.0.0.0/8 or ::1 only)`);
  const port = options.port ?? DEFAULT_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: ${port} is not a port number (0-65535)`);
  if (options.nodeName === '') throw new Error('nodeName must not be empty');
  if ((options.tlsCertFile === undefined) !== (options.tlsPrivateKeyFile === undefined)) {
    throw new Error('--tls-cert-file and --tls-private-key-file must be given together');
  }
  const log = (options.logger ?? silentLogger()).child({ component: 'kubelet-server', node: options.nodeName });
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  const cri = options.cri;

  // Authentication (BuildAuthn) and authorization (BuildAuthz), with the kubelet's errors.
  const authenticators: RequestAuthenticator[] = [];
  let clientCa: string | undefined;
  if (options.clientCaFile !== undefined) {
    clientCa = await readPemFile('--client-ca-file', options.clientCaFile, 'certificate');
    authenticators.push(new ClientCertificateAuthenticator());
  }
  if (options.kubeConfig !== undefined) {
    authenticators.push(new TokenReviewAuthenticator(options.kubeConfig.makeApiClient(AuthenticationV1Api), { ...(options.tokenReviewCacheTtlMs !== undefined ? { cacheTtlMs: options.tokenReviewCacheTtlMs } : {}) }));
  }
  if (authenticators.length === 0 && !options.anonymousAuth) throw new Error('no authentication method configured');
  const authenticator = new KubeletAuthenticator(authenticators, options.anonymousAuth);
  let authorizer: Authorizer;
  if (options.authorizationMode === 'AlwaysAllow') {
    authorizer = new AlwaysAllowAuthorizer();
  } else if (options.authorizationMode === 'Webhook') {
    if (options.kubeConfig === undefined) throw new Error('no client provided, cannot use webhook authorization');
    authorizer = new SubjectAccessReviewAuthorizer(options.kubeConfig.makeApiClient(AuthorizationV1Api), {
      ...(options.authorizedCacheTtlMs !== undefined ? { cacheAuthorizedTtlMs: options.authorizedCacheTtlMs } : {}),
      ...(options.unauthorizedCacheTtlMs !== undefined ? { cacheUnauthorizedTtlMs: options.unauthorizedCacheTtlMs } : {}),
    });
  } else {
    throw new Error(`unknown authorization mode ${String(options.authorizationMode)}`);
  }

  let cert: string;
  let key: string;
  if (options.tlsCertFile !== undefined && options.tlsPrivateKeyFile !== undefined) {
    cert = await readPemFile('--tls-cert-file', options.tlsCertFile, 'certificate');
    key = await readPemFile('--tls-private-key-file', options.tlsPrivateKeyFile, 'private key');
  } else {
    ({ cert, key } = await selfSignedServingCertificate(options.nodeName, [address]));
  }

  const runtimePods = new RuntimePods(cri, callTimeoutMs);
  const metrics = new KubeletServerMetrics(options.nodeName, cri, callTimeoutMs);
  const nodeStartTime = options.nodeStartTime ?? new Date();
  const upgraded = new Set<Duplex>();
  const callOptions = { timeoutMs: callTimeoutMs };

  // ---- routes ----

  const healthz = (res: ServerResponse, sub: string | undefined, query: URLSearchParams): void => {
    const syncloop = options.syncLoopHealth?.();
    const checks: [string, string | undefined][] = [['ping', undefined], ['log', undefined], ['syncloop', syncloop]];
    if (sub !== undefined) {
      const check = checks.find(([name]) => name === sub);
      if (check === undefined) return text(res, 404, '404 page not found\n');
      if (check[1] !== undefined) return text(res, 500, `internal server error: ${check[1]}\n`);
      return text(res, 200, 'ok');
    }
    const failed = checks.filter(([, error]) => error !== undefined);
    if (failed.length > 0 || query.has('verbose')) {
      const lines = checks.map(([name, error]) => (error === undefined ? `[+]${name} ok` : `[-]${name} failed: reason withheld`));
      const tail = failed.length > 0 ? 'healthz check failed' : 'healthz check passed';
      return text(res, failed.length > 0 ? 500 : 200, `${lines.join('\n')}\n${tail}\n`);
    }
    text(res, 200, 'ok');
  };

  const containerLogs = async (req: IncomingMessage, res: ServerResponse, namespace: string, podName: string, containerName: string, query: URLSearchParams): Promise<void> => {
    if (podName === '') return text(res, 400, '{"message": "Missing podID."}');
    if (containerName === '') return text(res, 400, '{"message": "Missing container name."}');
    if (namespace === '') return text(res, 400, '{"message": "Missing podNamespace."}');
    const parsed = parseLogOptions(query);
    if (!parsed.ok) return text(res, parsed.status, parsed.message);
    const pod = findPod(options.pods(), namespace, podName);
    if (pod === undefined) return text(res, 404, `pod "${podName}" does not exist`);
    if (containerSpec(pod, containerName) === undefined) return text(res, 404, `container "${containerName}" not found in pod "${podName}"`);

    // validateContainerLogStatus, from the runtime's containers of this name (newest first).
    const candidates = await runtimePods.containersByName(pod.metadata?.uid ?? '', containerName);
    let containerId: string | undefined;
    if (parsed.options.previous) {
      containerId = candidates[1]?.id;
      if (containerId === undefined) return text(res, 400, `previous terminated container "${containerName}" in pod "${podName}" not found`);
    } else {
      const current = candidates[0];
      if (current === undefined || current.state === 0) {
        const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
        const reason = statuses.find((s) => s.name === containerName)?.state?.waiting?.reason ?? (current !== undefined ? 'ContainerCreating' : undefined);
        if (reason === 'ErrImagePull') return text(res, 400, `container "${containerName}" in pod "${podName}" is waiting to start: image can't be pulled`);
        if (reason === 'ImagePullBackOff') return text(res, 400, `container "${containerName}" in pod "${podName}" is waiting to start: trying and failing to pull image`);
        if (reason !== undefined) return text(res, 400, `container "${containerName}" in pod "${podName}" is waiting to start: ${reason}`);
        return text(res, 400, `container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`);
      }
      containerId = current.id;
    }

    // From here the kubelet has written a zero-byte chunk: the status is 200 and later errors
    // end up in the body.
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    let clientGone = false;
    res.on('close', () => { clientGone = true; });
    const sink: LogSink = {
      get closed() { return clientGone || res.destroyed; },
      onClose: (listener) => res.on('close', listener),
      write: (_stream, data) => new Promise((resolve) => {
        if (res.write(data)) resolve();
        else {
          const go = (): void => { res.off('drain', go); res.off('close', go); resolve(); };
          res.on('drain', go);
          res.on('close', go);
        }
      }),
    };
    try {
      let logPath: string;
      try {
        const { status } = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId, verbose: false }, callOptions);
        if (status === null) throw new Error('status is nil');
        logPath = status.log_path;
      } catch {
        throw new Error(`unable to retrieve container logs for ${await runtimeName()}://${containerId}`);
      }
      await readLogs(logPath, sink, {
        options: parsed.options,
        nowNanos: BigInt(Date.now()) * 1_000_000n,
        isRunning: async () => {
          try {
            const { status } = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId!, verbose: false }, callOptions);
            return status?.state === 1;
          } catch (err) {
            // Unavailable: assume still running, as cri-client does.
            if ((err as { code?: number }).code === 14) return true;
            throw err;
          }
        },
      });
    } catch (err) {
      log.warn({ err, namespace, pod: podName, container: containerName }, 'container logs failed');
      if (!sink.closed) res.write((err as Error).message);
    }
    res.end();
  };

  let runtimeNameCache: string | undefined;
  const runtimeName = async (): Promise<string> => {
    if (runtimeNameCache === undefined) {
      try {
        runtimeNameCache = (await unaryCall(cri.runtime, 'Version', { version: '' }, callOptions)).runtime_name;
      } catch {
        return 'cri';
      }
    }
    return runtimeNameCache;
  };

  const run = async (res: ServerResponse, namespace: string, podName: string, uid: string | undefined, containerName: string, query: URLSearchParams): Promise<void> => {
    const pod = findPod(options.pods(), namespace, podName);
    if (pod === undefined) return text(res, 404, 'pod does not exist');
    // For legacy reasons, run uses a different query parameter than exec.
    const cmd = (query.get('cmd') ?? '').split(' ');
    const container = await runtimePods.runningContainer(namespace, podName, uid, containerName);
    if (container === undefined) return text(res, 500, `container not found ("${containerName}")`);
    let response;
    try {
      response = await unaryCall(cri.runtime, 'ExecSync', { container_id: container.id, cmd, timeout: 0 }, { timeoutMs: 5 * 60_000 });
    } catch (err) {
      return text(res, 500, grpcErrorString(err));
    }
    const stdout = Buffer.from(response.stdout);
    const stderr = Buffer.from(response.stderr);
    if (response.exit_code !== 0) return text(res, 500, `command '${cmd.join(' ')}' exited with ${response.exit_code}: ${stderr.toString()}`);
    const data = Buffer.concat([stdout, stderr]);
    res.writeHead(200, data.length > 0 ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {});
    res.end(data);
  };

  const streaming = async (
    req: IncomingMessage, res: ServerResponse, upgrade: { socket: Duplex; head: Buffer } | undefined,
    kind: 'exec' | 'attach' | 'portForward', namespace: string, podName: string, uid: string | undefined, containerName: string, query: URLSearchParams,
  ): Promise<void> => {
    let url: string;
    if (kind === 'portForward') {
      const ports = portForwardPorts(req, query);
      if (typeof ports === 'string') return text(res, 400, ports);
      const pod = findPod(options.pods(), namespace, podName);
      if (pod === undefined) return text(res, 404, 'pod does not exist');
      if (uid !== undefined && uid !== '' && pod.metadata?.uid !== uid) return text(res, 404, 'pod not found');
      const [sandbox] = await runtimePods.readySandboxes(namespace, podName, pod.metadata?.uid);
      if (sandbox === undefined) return text(res, 500, `pod not found ("${podName}_${namespace}")`);
      try {
        url = (await unaryCall(cri.runtime, 'PortForward', { pod_sandbox_id: sandbox.id, port: ports }, callOptions)).url;
      } catch (err) {
        return streamingError(res, err);
      }
    } else {
      const opts = streamOptions(query);
      if (typeof opts === 'string') return text(res, 400, opts);
      const pod = findPod(options.pods(), namespace, podName);
      if (pod === undefined) return text(res, 404, 'pod does not exist');
      const container = await runtimePods.runningContainer(namespace, podName, uid, containerName);
      const fullName = `${podName}_${namespace}`;
      try {
        if (kind === 'exec') {
          if (container === undefined) return text(res, 500, `container not found ("${containerName}")`);
          url = (await unaryCall(cri.runtime, 'Exec', { container_id: container.id, cmd: query.getAll('command'), ...opts }, callOptions)).url;
        } else {
          if (container === undefined) return text(res, 500, `container ${containerName} not found in pod ${fullName}`);
          if (uid !== undefined && uid !== '' && pod.metadata?.uid !== uid) return text(res, 500, `pod ${fullName} not found`);
          const spec = containerSpec(pod, containerName);
          if (spec === undefined) return text(res, 500, `container ${containerName} not found in pod ${fullName}`);
          url = (await unaryCall(cri.runtime, 'Attach', { container_id: container.id, stdin: opts.stdin, stdout: opts.stdout, stderr: opts.stderr, tty: spec.tty === true }, callOptions)).url;
        }
      } catch (err) {
        return streamingError(res, err);
      }
    }
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return text(res, 500, `the runtime returned an invalid streaming URL ${JSON.stringify(url)}`);
    }
    if (upgrade === undefined || !isUpgradeRequest(req)) return text(res, 500, 'Upgrade request required');
    await proxyUpgrade(req, upgrade.socket, upgrade.head, target);
  };

  const route = async (req: IncomingMessage, res: ServerResponse, upgrade: { socket: Duplex; head: Buffer } | undefined, url: URL): Promise<void> => {
    const parts = segments(url.pathname);
    if (parts === undefined) return text(res, 400, 'malformed path');
    const method = req.method ?? 'GET';
    const [root, ...rest] = parts;
    const notAllowed = (): void => text(res, 405, '405: Method Not Allowed');
    switch (root) {
      case 'healthz':
        if (rest.length > 1) break;
        return healthz(res, rest[0] === '' ? undefined : rest[0], url.searchParams);
      case 'pods':
        if (rest.length > 1 || (rest.length === 1 && rest[0] !== '')) break;
        if (method !== 'GET') return notAllowed();
        return json(res, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: options.pods() });
      case 'stats':
        if (rest.length !== 1 || rest[0] !== 'summary') break;
        if (method !== 'GET' && method !== 'POST') return notAllowed();
        try {
          return json(res, await statsSummary(cri, { nodeName: options.nodeName, startTime: nodeStartTime, ...(options.memoryCapacityBytes !== undefined ? { memoryCapacityBytes: options.memoryCapacityBytes } : {}) }, callTimeoutMs, url.searchParams.getAll('only_cpu_and_memory').length === 1 && url.searchParams.get('only_cpu_and_memory') === 'true'));
        } catch (err) {
          return text(res, 500, `Internal Error: ${grpcErrorString(err)}`);
        }
      case 'metrics': {
        if (rest.length === 0 || (rest.length === 1 && rest[0] === '')) {
          res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
          return void res.end(await metrics.registry.metrics());
        }
        if (rest.length === 1 && rest[0] === 'resource') {
          let body: string;
          try {
            body = resourceMetricsText(await statsSummary(cri, { nodeName: options.nodeName, startTime: nodeStartTime }, callTimeoutMs, true));
          } catch (err) {
            log.warn({ err }, 'resource metrics: no stats summary');
            body = resourceScrapeErrorText();
          }
          res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
          return void res.end(body);
        }
        if (rest.length === 1 && (rest[0] === 'cadvisor' || rest[0] === 'probes')) {
          return text(res, 501, `/metrics/${rest[0]} is not implemented by cri-winsim: a simulated node has no cAdvisor or probers; use /metrics/resource and /stats/summary\n`);
        }
        break;
      }
      case 'containerLogs':
        if (rest.length !== 3) break;
        if (method !== 'GET') return notAllowed();
        return containerLogs(req, res, rest[0]!, rest[1]!, rest[2]!, url.searchParams);
      case 'run':
        if (rest.length !== 3 && rest.length !== 4) break;
        if (method !== 'POST') return notAllowed();
        return rest.length === 3
          ? run(res, rest[0]!, rest[1]!, undefined, rest[2]!, url.searchParams)
          : run(res, rest[0]!, rest[1]!, rest[2]!, rest[3]!, url.searchParams);
      case 'exec':
      case 'attach':
        if (rest.length !== 3 && rest.length !== 4) break;
        if (method !== 'GET' && method !== 'POST') return notAllowed();
        return rest.length === 3
          ? streaming(req, res, upgrade, root, rest[0]!, rest[1]!, undefined, rest[2]!, url.searchParams)
          : streaming(req, res, upgrade, root, rest[0]!, rest[1]!, rest[2]!, rest[3]!, url.searchParams);
      case 'portForward':
        if (rest.length !== 2 && rest.length !== 3) break;
        if (method !== 'GET' && method !== 'POST') return notAllowed();
        return streaming(req, res, upgrade, 'portForward', rest[0]!, rest[1]!, rest[2], '', url.searchParams);
      default:
        break;
    }
    text(res, 404, '404 page not found\n');
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, upgrade?: { socket: Duplex; head: Buffer }): Promise<void> => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'https://kubelet');
    } catch {
      return text(res, 400, 'malformed request URL');
    }
    const end = metrics.begin(req.method, url.pathname);
    try {
      // InstallAuthFilter: authenticate, then authorize every attribute set until one is allowed.
      const authn = await authenticator.authenticate(req);
      if (!authn.ok) {
        if (authn.error !== undefined) log.info({ reason: authn.error, path: url.pathname }, 'Unable to authenticate the request due to an error');
        return text(res, 401, 'Unauthorized');
      }
      const attributes = requestAttributes(authn.user, req.method, url.pathname, options.nodeName);
      let allowed = false;
      for (const a of attributes) {
        let decision;
        try {
          decision = await authorizer.authorize(a);
        } catch (err) {
          log.error({ err, user: a.user.name, verb: a.verb, resource: a.resource, subresource: a.subresource }, 'Authorization error');
          return text(res, 500, `Authorization error (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource=${a.subresource})`);
        }
        if (decision === 'allow') {
          allowed = true;
          break;
        }
      }
      if (!allowed) {
        const a = attributes[0]!;
        log.debug({ user: a.user.name, verb: a.verb, resource: a.resource, subresources: attributes.map((x) => x.subresource) }, 'Forbidden');
        // Go's %v of a []string: [a b].
        return text(res, 403, `Forbidden (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=[${attributes.map((x) => x.subresource).join(' ')}])\n`);
      }
      await route(req, res, upgrade, url);
    } catch (err) {
      log.error({ err, path: url.pathname }, 'request failed');
      text(res, 500, grpcErrorString(err));
    } finally {
      end();
    }
  };

  const server: Server = createServer({
    cert,
    key,
    ...(clientCa !== undefined ? { ca: clientCa, requestCert: true, rejectUnauthorized: false } : {}),
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void handle(req, res);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    upgraded.add(socket);
    socket.on('close', () => upgraded.delete(socket));
    const res = responseOnSocket(req, socket);
    void handle(req, res, { socket, head });
  });
  server.on('tlsClientError', (err) => log.debug({ err }, 'TLS handshake failed'));
  // http.Server in the kubelet: 4 h read/write timeouts for long-running requests.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(new Error(`kubelet server: cannot listen on ${address}:${port}: ${err.message}`));
    server.once('error', onError);
    server.listen(port, address, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  log.info({ address: bound.address, port: bound.port }, 'Starting to listen');

  let closing: Promise<void> | undefined;
  return {
    address: bound.address,
    port: bound.port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of upgraded) socket.destroy();
      });
      return closing;
    },
  };
}

