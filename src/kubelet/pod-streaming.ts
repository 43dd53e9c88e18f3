import { createServer, type Server, type Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { WebSocket } from 'ws';
import { unaryCall, type CriClient } from '../cri/proto.js';
import { listNodePods, type NodePod } from './node-pods.js';

/**
 * exec, attach and port-forward into pods the kubelet ran: the CRI Exec/Attach/PortForward call
 * gives a URL of the runtime's streaming server, which the kubelet opens itself (WebSocket: the
 * remotecommand v5 protocol, port-forward's v4 channels), as its server proxies for kubectl.
 */

export interface PodRef {
  namespace: string;
  name: string;
  /** The container; default: the pod's first (kubectl's default container). */
  container?: string;
}

export interface StreamIo {
  stdin?: Readable;
  stdout: Writable;
  stderr: Writable;
  /** Told once which container was picked when none was named (kubectl's "Defaulted container" line). */
  notice?: (text: string) => void;
}

export interface StreamCallOptions {
  callTimeoutMs?: number;
}

/** The pod by namespace and name, with kubectl's texts when it or its container is missing. */
async function findPod(cri: CriClient, ref: PodRef, options: StreamCallOptions): Promise<NodePod> {
  const pods = await listNodePods(cri, options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs });
  const pod = pods.find((p) => p.namespace === ref.namespace && p.name === ref.name);
  if (pod === undefined) throw new Error(`pods "${ref.name}" not found`);
  return pod;
}

async function findContainer(cri: CriClient, ref: PodRef, io: StreamIo, options: StreamCallOptions): Promise<string> {
  const pod = await findPod(cri, ref, options);
  const running = pod.containers.filter((c) => c.state === 'Running');
  if (ref.container === undefined) {
    const first = running[0] ?? pod.containers[0];
    if (first === undefined) throw new Error(`pod ${ref.name} has no container`);
    if (pod.containers.length > 1) io.notice?.(`Defaulted container "${first.name}" out of: ${pod.containers.map((c) => c.name).join(', ')}\n`);
    if (first.state !== 'Running') throw new Error(`container ${first.name} is not valid for pod ${ref.name}`);
    return first.id;
  }
  const named = running.find((c) => c.name === ref.container) ?? pod.containers.find((c) => c.name === ref.container);
  if (named === undefined) throw new Error(`container ${ref.container} is not valid for pod ${ref.name}`);
  if (named.state !== 'Running') throw new Error(`unable to upgrade connection: container not found ("${ref.container}")`);
  return named.id;
}

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const CLOSE = 255;

/** Runs a remotecommand session over WebSocket v5; resolves with the exit code. */
function remoteCommand(url: string, io: StreamIo, flags: { stdin: boolean; tty: boolean; size?: () => { width: number; height: number } | undefined }): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v5.channel.k8s.io']);
    let status = '';
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      io.stdin?.off('data', onInput);
      io.stdin?.off('end', onEnd);
      fn();
    };
    const onInput = (chunk: Buffer | string): void => {
      if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.of(STDIN), Buffer.from(chunk)]));
    };
    const onEnd = (): void => {
      if (ws.readyState === ws.OPEN) ws.send(Buffer.of(CLOSE, STDIN));
    };
    ws.on('open', () => {
      const size = flags.size?.();
      if (flags.tty && size !== undefined) ws.send(Buffer.concat([Buffer.of(RESIZE), Buffer.from(JSON.stringify({ Width: size.width, Height: size.height }))]));
      if (flags.stdin && io.stdin !== undefined) {
        io.stdin.on('data', onInput);
        io.stdin.once('end', onEnd);
      }
    });
    ws.on('message', (raw: Buffer) => {
      const channel = raw[0];
      const data = raw.subarray(1);
      if (channel === STDOUT) io.stdout.write(data);
      else if (channel === STDERR) io.stderr.write(data);
      else if (channel === ERROR) status += data.toString('utf8');
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => finish(() => reject(new Error(`unable to upgrade connection: ${body.trim() || res.statusMessage}`))));
    });
    ws.on('error', (err) => finish(() => reject(err)));
    ws.on('close', () => finish(() => {
      if (status === '') {
        resolve(0);
        return;
      }
      const parsed = JSON.parse(status) as { status?: string; reason?: string; message?: string; details?: { causes?: { reason?: string; message?: string }[] } };
      if (parsed.status === 'Success') resolve(0);
      else if (parsed.reason === 'NonZeroExitCode') resolve(Number(parsed.details?.causes?.find((c) => c.reason === 'ExitCode')?.message ?? 1));
      else reject(new Error(parsed.message ?? status));
    }));
  });
}

/** `kubectl exec`: runs cmd in the pod's container with the caller's stdio; resolves with its exit code. */
export async function execInPod(cri: CriClient, ref: PodRef, cmd: string[], flags: { stdin: boolean; tty: boolean }, io: StreamIo, options: StreamCallOptions = {}): Promise<number> {
  const containerId = await findContainer(cri, ref, io, options);
  const { url } = await unaryCall(cri.runtime, 'Exec', { container_id: containerId, cmd, stdin: flags.stdin, stdout: true, stderr: !flags.tty, tty: flags.tty }, { timeoutMs: options.callTimeoutMs ?? 10_000 });
  return remoteCommand(url, io, flags);
}

/** `kubectl attach`: the container's main process output (and input with stdin); resolves with its exit code. */
export async function attachToPod(cri: CriClient, ref: PodRef, flags: { stdin: boolean; tty: boolean }, io: StreamIo, options: StreamCallOptions = {}): Promise<number> {
  const containerId = await findContainer(cri, ref, io, options);
  const { url } = await unaryCall(cri.runtime, 'Attach', { container_id: containerId, stdin: flags.stdin, stdout: true, stderr: !flags.tty, tty: flags.tty }, { timeoutMs: options.callTimeoutMs ?? 10_000 });
  return remoteCommand(url, io, flags);
}

export interface PortMappingArg {
  local: number;
  remote: number;
}

/** `LOCAL:REMOTE`, `:REMOTE` (a free local port) or `PORT`, as kubectl port-forward takes them. */
export function parsePortMapping(text: string): PortMappingArg {
  const m = /^(\d*):(\d+)$|^(\d+)$/.exec(text);
  const local = m?.[3] ?? m?.[1] ?? '';
  const remote = Number(m?.[3] ?? m?.[2]);
  if (m === null || !(remote >= 1 && remote <= 65535) || (local !== '' && !(Number(local) >= 0 && Number(local) <= 65535))) {
    throw new Error(`Error parsing local port '${text}': invalid port mapping`);
  }
  return { local: local === '' ? 0 : Number(local), remote };
}

export interface PortForwardSession {
  /** The local ports bound, in the order of the mappings. */
  readonly ports: readonly number[];
  close(): Promise<void>;
}

/**
 * `kubectl port-forward`: listens on 127.0.0.1 for each mapping and carries every connection to
 * the pod's port through a PortForward URL of its own (WebSocket, port-forward v4 channels).
 */
export async function portForwardPod(cri: CriClient, ref: PodRef, mappings: readonly PortMappingArg[], io: Pick<StreamIo, 'stdout' | 'stderr'>, options: StreamCallOptions = {}): Promise<PortForwardSession> {
  const pod = await findPod(cri, ref, options);
  if (!pod.sandboxReady) throw new Error(`unable to forward port because pod is not running. Current status=${pod.sandboxReady ? 'Running' : 'NotReady'}`);
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  const ports: number[] = [];
  try {
    for (const mapping of mappings) {
      const server = createServer((client) => {
        sockets.add(client);
        client.on('close', () => sockets.delete(client));
        client.pause();
        io.stdout.write(`Handling connection for ${(server.address() as { port: number }).port}\n`);
        void forwardConnection(cri, pod.sandboxId, mapping.remote, client, io, options);
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(mapping.local, '127.0.0.1', () => resolve());
      });
      servers.push(server);
      const port = (server.address() as { port: number }).port;
      ports.push(port);
      io.stdout.write(`Forwarding from 127.0.0.1:${port} -> ${mapping.remote}\n`);
    }
  } catch (err) {
    for (const s of servers) s.close();
    throw err;
  }
  return {
    ports,
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}

async function forwardConnection(cri: CriClient, sandboxId: string, port: number, client: Socket, io: Pick<StreamIo, 'stderr'>, options: StreamCallOptions): Promise<void> {
  let url: string;
  try {
    ({ url } = await unaryCall(cri.runtime, 'PortForward', { pod_sandbox_id: sandboxId, port: [port] }, { timeoutMs: options.callTimeoutMs ?? 10_000 }));
  } catch (err) {
    io.stderr.write(`E an error occurred forwarding ${port}: ${err instanceof Error ? err.message : String(err)}\n`);
    client.destroy();
    return;
  }
  const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v4.channel.k8s.io']);
  // The first message of each channel is its port (uint16 little-endian).
  const seen = [false, false];
  ws.on('message', (raw: Buffer) => {
    const channel = raw[0] as number;
    let data = raw.subarray(1);
    if (channel > 1) return;
    if (!seen[channel]) {
      seen[channel] = true;
      data = data.subarray(2);
    }
    if (data.length === 0) return;
    if (channel === 0) client.write(data);
    else io.stderr.write(`E an error occurred forwarding ${port}: ${data.toString('utf8')}\n`);
  });
  ws.on('open', () => {
    client.on('data', (chunk: Buffer) => ws.send(Buffer.concat([Buffer.of(0), chunk])));
    client.resume();
  });
  client.on('end', () => ws.close(1000));
  client.on('error', () => ws.terminate());
  ws.on('close', () => client.end());
  ws.on('error', () => client.destroy());
}
