/**
 * The routes that run something in a container (server.go, v1.34): POST /run (ExecSync, combined
 * output) and /exec, /attach, /portForward (CRI Exec/Attach/PortForward; the upgraded connection
 * is proxied to the streaming URL the runtime returns).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { unaryCall } from '../../../cri/proto.js';
import { grpcErrorString } from '../../cri-errors.js';
import { streamingError, text } from '../http-replies.js';
import { containerSpec, findPod, type Route, type RouteContext, type RouteRequest } from '../route-context.js';
import { isUpgradeRequest, proxyUpgrade } from '../upgrade-proxy.js';

/** `{ns}/{pod}/{container}` or `{ns}/{pod}/{uid}/{container}`. */
interface ContainerPath { namespace: string; podName: string; uid: string | undefined; containerName: string }

function containerPath(rest: readonly string[]): ContainerPath {
  return rest.length === 3
    ? { namespace: rest[0]!, podName: rest[1]!, uid: undefined, containerName: rest[2]! }
    : { namespace: rest[0]!, podName: rest[1]!, uid: rest[2]!, containerName: rest[3]! };
}

const threeOrFour = (rest: readonly string[]): boolean => rest.length === 3 || rest.length === 4;

export const runRoute: Route = {
  root: 'run',
  methods: ['POST'],
  matches: threeOrFour,
  handle: (ctx, { res, rest, query }) => run(ctx, res, containerPath(rest), query),
};

export const execRoute: Route = {
  root: 'exec',
  methods: ['GET', 'POST'],
  matches: threeOrFour,
  handle: (ctx, r) => streamCommand(ctx, r, 'exec', containerPath(r.rest)),
};

export const attachRoute: Route = {
  root: 'attach',
  methods: ['GET', 'POST'],
  matches: threeOrFour,
  handle: (ctx, r) => streamCommand(ctx, r, 'attach', containerPath(r.rest)),
};

export const portForwardRoute: Route = {
  root: 'portForward',
  methods: ['GET', 'POST'],
  matches: (rest) => rest.length === 2 || rest.length === 3,
  handle: (ctx, r) => portForward(ctx, r, r.rest[0]!, r.rest[1]!, r.rest[2]),
};

async function run(ctx: RouteContext, res: ServerResponse, at: ContainerPath, query: URLSearchParams): Promise<void> {
  const pod = findPod(ctx.pods(), at.namespace, at.podName);
  if (pod === undefined) return text(res, 404, 'pod does not exist');
  // For legacy reasons, run uses a different query parameter than exec.
  const cmd = (query.get('cmd') ?? '').split(' ');
  const container = await ctx.runtimePods.runningContainer(at.namespace, at.podName, at.uid, at.containerName);
  if (container === undefined) return text(res, 500, `container not found ("${at.containerName}")`);
  let response;
  try {
    response = await unaryCall(ctx.cri.runtime, 'ExecSync', { container_id: container.id, cmd, timeout: 0 }, { timeoutMs: 5 * 60_000 });
  } catch (err) {
    return text(res, 500, grpcErrorString(err));
  }
  const stdout = Buffer.from(response.stdout);
  const stderr = Buffer.from(response.stderr);
  if (response.exit_code !== 0) return text(res, 500, `command '${cmd.join(' ')}' exited with ${response.exit_code}: ${stderr.toString()}`);
  const data = Buffer.concat([stdout, stderr]);
  res.writeHead(200, data.length > 0 ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {});
  res.end(data);
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

async function streamCommand(ctx: RouteContext, r: RouteRequest, kind: 'exec' | 'attach', at: ContainerPath): Promise<void> {
  const { res } = r;
  const opts = streamOptions(r.query);
  if (typeof opts === 'string') return text(res, 400, opts);
  const pod = findPod(ctx.pods(), at.namespace, at.podName);
  if (pod === undefined) return text(res, 404, 'pod does not exist');
  const container = await ctx.runtimePods.runningContainer(at.namespace, at.podName, at.uid, at.containerName);
  const fullName = `${at.podName}_${at.namespace}`;
  let url: string;
  try {
    if (kind === 'exec') {
      if (container === undefined) return text(res, 500, `container not found ("${at.containerName}")`);
      url = (await unaryCall(ctx.cri.runtime, 'Exec', { container_id: container.id, cmd: r.query.getAll('command'), ...opts }, { timeoutMs: ctx.callTimeoutMs })).url;
    } else {
      if (container === undefined) return text(res, 500, `container ${at.containerName} not found in pod ${fullName}`);
      if (at.uid !== undefined && at.uid !== '' && pod.metadata?.uid !== at.uid) return text(res, 500, `pod ${fullName} not found`);
      const spec = containerSpec(pod, at.containerName);
      if (spec === undefined) return text(res, 500, `container ${at.containerName} not found in pod ${fullName}`);
      url = (await unaryCall(ctx.cri.runtime, 'Attach', { container_id: container.id, stdin: opts.stdin, stdout: opts.stdout, stderr: opts.stderr, tty: spec.tty === true }, { timeoutMs: ctx.callTimeoutMs })).url;
    }
  } catch (err) {
    return streamingError(res, err);
  }
  await proxyTo(r, url);
}

async function portForward(ctx: RouteContext, r: RouteRequest, namespace: string, podName: string, uid: string | undefined): Promise<void> {
  const { res } = r;
  const ports = portForwardPorts(r.req, r.query);
  if (typeof ports === 'string') return text(res, 400, ports);
  const pod = findPod(ctx.pods(), namespace, podName);
  if (pod === undefined) return text(res, 404, 'pod does not exist');
  if (uid !== undefined && uid !== '' && pod.metadata?.uid !== uid) return text(res, 404, 'pod not found');
  const [sandbox] = await ctx.runtimePods.readySandboxes(namespace, podName, pod.metadata?.uid);
  if (sandbox === undefined) return text(res, 500, `pod not found ("${podName}_${namespace}")`);
  let url: string;
  try {
    url = (await unaryCall(ctx.cri.runtime, 'PortForward', { pod_sandbox_id: sandbox.id, port: ports }, { timeoutMs: ctx.callTimeoutMs })).url;
  } catch (err) {
    return streamingError(res, err);
  }
  await proxyTo(r, url);
}

/** The upgraded connection, proxied to the runtime's streaming URL. */
async function proxyTo(r: RouteRequest, url: string): Promise<void> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return text(r.res, 500, `the runtime returned an invalid streaming URL ${JSON.stringify(url)}`);
  }
  if (r.upgrade === undefined || !isUpgradeRequest(r.req)) return text(r.res, 500, 'Upgrade request required');
  await proxyUpgrade(r.req, r.upgrade.socket, r.upgrade.head, target);
}
