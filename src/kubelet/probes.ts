/**
 * One run of a container probe, as the kubelet's prober runs it (pkg/kubelet/prober/prober.go
 * runProbe, and the handlers of pkg/probe/exec, http, tcp and grpc, kubernetes v1.34.12): the
 * result (success, warning, failure, unknown), the output the Unhealthy event quotes, or an error
 * (the probe could not be run: the kubelet retries and reports "errored").
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, isIPv6 } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { V1Container, V1Probe } from '@kubernetes/client-node';
import { expand } from './cri-config.js';

export type ProbeType = 'Readiness' | 'Liveness' | 'Startup';
/** probe.Result: its values are what the kubelet prints ("resulted in unknown state"). */
export type ProbeResult = 'success' | 'warning' | 'failure' | 'unknown';

export interface ProbeOutcome {
  readonly result: ProbeResult;
  readonly output: string;
  /** The probe could not be run (a port that does not resolve, a runtime error). */
  readonly error?: Error;
}

/** What a probe runs against: the container and the pod's IP. */
export interface ProbeTarget {
  readonly container: V1Container;
  readonly containerId: string;
  readonly podIp: string;
}

/** The kubelet's RunInContainer over CRI ExecSync: combined output, the exit code, or a thrown error. */
export type ExecInContainer = (containerId: string, command: readonly string[], timeoutSeconds: number) => Promise<{ exitCode: number; output: Buffer }>;

/** Thrown by an ExecInContainer whose command outlived its timeout (cri-client's ErrCommandTimedOut). */
export class CommandTimedOutError extends Error {}

/** The API server's defaults for a probe (pkg/apis/core/v1/defaults.go SetDefaults_Probe). */
export interface EffectiveProbe {
  readonly spec: V1Probe;
  readonly initialDelaySeconds: number;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly successThreshold: number;
  readonly failureThreshold: number;
}

export function effectiveProbe(spec: V1Probe): EffectiveProbe {
  return {
    spec,
    initialDelaySeconds: spec.initialDelaySeconds ?? 0,
    periodSeconds: spec.periodSeconds || 10,
    timeoutSeconds: spec.timeoutSeconds || 1,
    successThreshold: spec.successThreshold || 1,
    failureThreshold: spec.failureThreshold || 3,
  };
}

/** Response bodies and exec output beyond this are cut (maxRespBodyLength, maxReadLength: 10 KiB). */
const maxOutputBytes = 10 * 1024;
/** pkg/probe/http/request.go userAgent("probe") for kubernetes 1.34. */
export const probeUserAgent = 'kube-probe/1.34';

export async function runProbe(probe: EffectiveProbe, target: ProbeTarget, exec: ExecInContainer): Promise<ProbeOutcome> {
  const spec = probe.spec;
  const timeoutMs = probe.timeoutSeconds * 1000;
  try {
    if (spec.exec != null) return await execProbe(spec.exec.command ?? [], probe.timeoutSeconds, target, exec);
    if (spec.httpGet != null) {
      const port = resolveContainerPort(spec.httpGet.port, target.container);
      const scheme = (spec.httpGet.scheme ?? 'HTTP').toLowerCase() || 'http';
      const host = spec.httpGet.host || target.podIp;
      const url = new URL(spec.httpGet.path ?? '', `${scheme}://${joinHostPort(host, port)}`);
      const headers: [string, string][] = (spec.httpGet.httpHeaders ?? []).map((h) => [canonicalHeaderKey(h.name), h.value]);
      return await httpProbe(url, headers, timeoutMs);
    }
    if (spec.tcpSocket != null) {
      const port = resolveContainerPort(spec.tcpSocket.port, target.container);
      return await tcpProbe(spec.tcpSocket.host || target.podIp, port, timeoutMs);
    }
    if (spec.grpc != null) return await grpcProbe(target.podIp, spec.grpc.service ?? '', spec.grpc.port, timeoutMs);
  } catch (err) {
    return { result: 'unknown', output: '', error: err instanceof Error ? err : new Error(String(err)) };
  }
  return { result: 'unknown', output: '', error: new Error(`missing probe handler for ${target.container.name}`) };
}

/** probe.ResolveContainerPort: a number, a named container port, or a number written as a string. */
export function resolveContainerPort(param: number | string | undefined, container: V1Container): number {
  let port: number;
  if (typeof param === 'number') port = param;
  else if (typeof param === 'string') {
    const named = (container.ports ?? []).find((p) => p.name === param);
    if (named !== undefined) port = named.containerPort;
    else if (/^[+-]?\d+$/.test(param)) port = Number(param);
    else throw new Error(`strconv.Atoi: parsing ${JSON.stringify(param)}: invalid syntax`);
  } else throw new Error(`intOrString had no kind: ${JSON.stringify(param)}`);
  if (port > 0 && port < 65536) return port;
  throw new Error(`invalid port number: ${port}`);
}

const joinHostPort = (host: string, port: number): string => (isIPv6(host) || host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** textproto.CanonicalMIMEHeaderKey: `x-custom-header` → `X-Custom-Header`. */
function canonicalHeaderKey(name: string): string {
  if (!/^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/.test(name)) return name;
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

/** The environment a probe command is expanded with: literal values only (ExpandContainerCommandOnlyStatic). */
function staticEnv(container: V1Container): Map<string, string> {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) if (e.valueFrom == null) env.set(e.name, e.value ?? '');
  return env;
}

async function execProbe(command: readonly string[], timeoutSeconds: number, target: ProbeTarget, exec: ExecInContainer): Promise<ProbeOutcome> {
  const env = staticEnv(target.container);
  const expanded = command.map((arg) => expand(arg, (name) => env.get(name)));
  try {
    const { exitCode, output } = await exec(target.containerId, expanded, timeoutSeconds);
    const text = output.subarray(0, maxOutputBytes).toString('utf8');
    return { result: exitCode === 0 ? 'success' : 'failure', output: text };
  } catch (err) {
    // ExecProbeTimeout is GA: a command that times out is a failure, not an error.
    if (err instanceof CommandTimedOutError) return { result: 'failure', output: err.message };
    throw err;
  }
}

const redirectCodes = new Set([301, 302, 303, 307, 308]);

/**
 * pkg/probe/http DoHTTPProbe with the kubelet's client: no keep-alive, no proxy, no compression,
 * TLS unverified, redirects followed only to the same host name (at most 10); a redirect elsewhere
 * ends with the 3xx response itself, which is a warning. 200–399 succeed.
 */
async function httpProbe(url: URL, headers: [string, string][], timeoutMs: number): Promise<ProbeOutcome> {
  const names = new Set(headers.map(([k]) => k));
  const all: [string, string][] = [...headers];
  if (!names.has('User-Agent')) all.push(['User-Agent', probeUserAgent]);
  if (!names.has('Accept')) all.push(['Accept', '*/*']);
  const sent = all.filter(([k, v]) => !(k === 'Accept' && v === '' && names.has('Accept')));
  const hostHeader = sent.find(([k]) => k === 'Host')?.[1];
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const first = url;
  let current = url;
  try {
    for (let hops = 0; ; hops++) {
      let response: IncomingMessage;
      try {
        response = await get(current, sent, hostHeader, controller.signal);
      } catch (err) {
        return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: ${controller.signal.aborted ? 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)' : dialError(current, err)}` };
      }
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (redirectCodes.has(status) && location !== undefined) {
        const next = new URL(location, current);
        if (next.hostname === first.hostname && hops + 1 >= 10) {
          response.resume();
          return { result: 'failure', output: `Get ${JSON.stringify(next.href)}: stopped after 10 redirects` };
        }
        if (next.hostname === first.hostname) {
          response.resume();
          current = next;
          continue;
        }
      }
      const body = await readAtMost(response, maxOutputBytes);
      if (status >= 200 && status < 400) {
        if (status >= 300) return { result: 'warning', output: `Probe terminated redirects, Response body: ${body}` };
        return { result: 'success', output: body };
      }
      return { result: 'failure', output: `HTTP probe failed with statuscode: ${status}` };
    }
  } finally {
    clearTimeout(timer);
  }
}

function get(url: URL, headers: [string, string][], hostHeader: string | undefined, signal: AbortSignal): Promise<IncomingMessage> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const flat: string[] = [];
  for (const [k, v] of headers) if (k !== 'Host') flat.push(k, v);
  // Go sends the URL's host with its port unless a Host header was given.
  flat.push('Host', hostHeader ?? url.host + (url.port === '' ? `:${url.protocol === 'https:' ? 443 : 80}` : ''));
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', agent: false, headers: flat, signal, rejectUnauthorized: false }, resolve);
    req.on('error', reject);
    req.end();
  });
}

function readAtMost(response: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => resolve(Buffer.concat(chunks).subarray(0, limit).toString('utf8'));
    response.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) {
        response.destroy();
        done();
      }
    });
    response.on('end', done);
    response.on('error', done);
    response.on('close', done);
  });
}

/** Go's net.Dial error text for the common cases (`dial tcp 127.10.0.2:81: connect: connection refused`). */
function dialError(url: URL | { host: string }, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const host = url instanceof URL ? `${url.hostname.replace(/^\[|\]$/g, '')}:${url.port || (url.protocol === 'https:' ? 443 : 80)}` : url.host;
  const address = host.includes(':') && host.split(':').length > 2 ? `[${host.slice(0, host.lastIndexOf(':'))}]${host.slice(host.lastIndexOf(':'))}` : host;
  switch (code) {
    case 'ECONNREFUSED':
      return `dial tcp ${address}: connect: connection refused`;
    case 'EHOSTUNREACH':
      return `dial tcp ${address}: connect: no route to host`;
    case 'ENETUNREACH':
      return `dial tcp ${address}: connect: network is unreachable`;
    case 'ECONNRESET':
      return 'read: connection reset by peer';
    case 'ENOTFOUND':
      return `dial tcp: lookup ${address.slice(0, address.lastIndexOf(':'))}: no such host`;
    default:
      return err instanceof Error ? err.message : String(err);
  }
}

/** pkg/probe/tcp DoTCPProbe: a connection that opens (and is closed at once) succeeds. */
function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  const address = joinHostPort(host, port);
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ result: 'failure', output: `dial tcp ${address}: i/o timeout` });
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ result: 'success', output: '' });
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      resolve({ result: 'failure', output: dialError({ host: address }, err) });
    });
  });
}

const servingStatusNames = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** grpc.health.v1.HealthCheckRequest { string service = 1; }, encoded by hand (one field). */
function encodeHealthCheckRequest(service: string): Buffer {
  const bytes = Buffer.from(service, 'utf8');
  if (bytes.length === 0) return Buffer.alloc(0);
  const length: number[] = [];
  for (let n = bytes.length; ; n >>>= 7) {
    if (n < 0x80) {
      length.push(n);
      break;
    }
    length.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([0x0a, ...length]), bytes]);
}

/** HealthCheckResponse { ServingStatus status = 1; }: the varint of field 1 (0 when absent). */
function decodeServingStatus(buf: Buffer): number {
  let status = 0;
  let i = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; i < buf.length; shift += 7) {
      const b = buf[i++]!;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) break;
    }
    return value;
  };
  while (i < buf.length) {
    const key = varint();
    const wire = key & 7;
    if (key >>> 3 === 1 && wire === 0) status = varint();
    else if (wire === 0) varint();
    else if (wire === 2) i += varint();
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else break;
  }
  return status;
}

const grpcCodeNames = ['OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated'];

/** pkg/probe/grpc: grpc.health.v1.Health/Check on podIP:port, plaintext, within the timeout. */
async function grpcProbe(host: string, service: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  const address = joinHostPort(host, port);
  const timeout = `${timeoutMs / 1000}s`;
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), { 'grpc.primary_user_agent': probeUserAgent });
  const deadline = Date.now() + timeoutMs;
  try {
    const connected = await new Promise<Error | undefined>((resolve) => client.waitForReady(deadline, (err) => resolve(err ?? undefined)));
    if (connected !== undefined) return { result: 'failure', output: `timeout: failed to connect service ${JSON.stringify(address)} within ${timeout}: context deadline exceeded` };
    const reply = await new Promise<{ err: grpc.ServiceError | null; status?: number }>((resolve) => {
      client.makeUnaryRequest(
        '/grpc.health.v1.Health/Check',
        (s: string) => encodeHealthCheckRequest(s),
        (b: Buffer) => decodeServingStatus(b),
        service,
        new grpc.Metadata(),
        { deadline },
        (err, status) => resolve({ err, ...(status === undefined ? {} : { status }) }),
      );
    });
    if (reply.err !== null) {
      const { code, details } = reply.err;
      if (code === grpc.status.UNIMPLEMENTED) return { result: 'failure', output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${details}` };
      if (code === grpc.status.DEADLINE_EXCEEDED) return { result: 'failure', output: `timeout: health rpc did not complete within ${timeout}` };
      return { result: 'failure', output: `error: health rpc probe failed: rpc error: code = ${grpcCodeNames[code] ?? `Code(${code})`} desc = ${details}` };
    }
    if (reply.status !== 1) return { result: 'failure', output: `service unhealthy (responded with ${JSON.stringify(servingStatusNames[reply.status ?? 0] ?? String(reply.status))})` };
    return { result: 'success', output: 'service healthy' };
  } finally {
    client.close();
  }
}
