import { connect, type Socket } from 'node:net';
import type { PortForwardRequest__Output } from '../generated/runtime/v1/PortForwardRequest.js';
import type { PortForwardResponse } from '../generated/runtime/v1/PortForwardResponse.js';
import { RuntimeError } from './errors.js';
import { podListenAddress } from './network/host-network.js';
import type { RpcHandlers } from './rpc.js';
import type { RuntimeContext } from './runtime-context.js';
import { SandboxState } from './store/sandbox-store.js';
import type { PortStream } from './streaming/websocket-port-forward.js';

/** PortForward: hands out a streaming URL whose streams connect to the sandbox's listeners on its pod IP. */
export async function portForward(ctx: RuntimeContext, req: PortForwardRequest__Output): Promise<PortForwardResponse> {
  if (req.pod_sandbox_id === '') throw new RuntimeError('InvalidArgument', 'missing required pod_sandbox_id');
  const sandbox = ctx.sandboxes.mustFind(req.pod_sandbox_id);
  if (sandbox.status.state !== SandboxState.READY) {
    // containerd's check (internal/cri/server/sandbox_portforward.go).
    throw new RuntimeError('FailedPrecondition', `sandbox container ${JSON.stringify(sandbox.id)} is not running`);
  }
  const id = sandbox.id;
  return { url: await ctx.streaming.register({ kind: 'portforward', ports: [...req.port], forward: (port, data, error) => forwardPort(ctx, id, port, data, error) }) };
}

/**
 * Copies one port-forward stream pair to a TCP connection to podIP:port. Failures go to the error
 * stream in the kubelet's words (pkg/cri/streaming/portforward/httpstream.go): "error forwarding
 * port %d to pod %s, uid %v: %v" (the uid is empty on the CRI streaming server).
 */
export function forwardPort(ctx: RuntimeContext, sandboxId: string, port: number, data: PortStream, error: PortStream): void {
  const fail = (reason: string): void => {
    error.end(`error forwarding port ${port} to pod ${sandboxId}, uid : ${reason}`);
    data.end();
  };
  const sandbox = ctx.sandboxes.get(sandboxId);
  if (sandbox === undefined || sandbox.status.state !== SandboxState.READY) {
    fail(`sandbox container ${JSON.stringify(sandboxId)} is not running`);
    return;
  }
  const reader = new FramedReader(data);
  const address = podListenAddress(sandbox);
  const socket: Socket = connect({ host: address, port, onread: { buffer: () => reader.nextBuffer(), callback: (n) => reader.onRead(n, socket) } });
  const connections = ctx.network.forwards.of(sandboxId);
  connections.add(socket);
  let connected = false;
  socket.on('connect', () => {
    connected = true;
  });
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (!connected) {
      const why = err.code === 'ECONNREFUSED' ? 'connect: connection refused' : err.message;
      fail(`dial tcp4 ${address}:${port}: ${why}`);
    } else {
      data.reset();
    }
  });
  socket.on('close', () => {
    connections.delete(socket);
    if (connected) {
      data.end();
      error.end();
    }
  });
  socket.on('end', () => data.end());
  data.on('data', (chunk: Buffer) => socket.write(chunk));
  data.on('end', () => socket.end());
  data.on('reset', () => socket.destroy());
  data.on('close', () => {
    if (!socket.destroyed && data.ended) socket.end();
  });
}

/** Read size while a connection streams (larger than Node's 64 KiB: fewer frames for the client too). */
const STREAMING_READ = 256 * 1024;
/** Read size of a connection that is idle or sends little, so an idle forward holds little. */
const IDLE_READ = 4 * 1024;
/** Buffers a streaming connection keeps for reuse (its writes in flight are bounded by backpressure). */
const POOL_SIZE = 4;

/**
 * Reads the pod's connection into buffers that leave room in front for the stream's frame header
 * and reuses them once written: the bytes are read once and written once, with no copy and,
 * while data streams, no allocation (Node's reads allocated 64 KiB each, and the WebSocket and
 * SPDY frames another copy; the garbage collector took a quarter of the forwarding time).
 * A connection starts with small reads and takes large ones once a read fills its buffer.
 */
class FramedReader {
  private readonly pool: Buffer[] = [];
  private current: Buffer = Buffer.alloc(0);
  private streaming = false;

  constructor(private readonly stream: PortStream) {}

  nextBuffer(): Buffer {
    const size = this.streaming ? STREAMING_READ : IDLE_READ;
    this.current = (this.streaming ? this.pool.pop() : undefined) ?? Buffer.allocUnsafeSlow(this.stream.headroom + size);
    return this.current.subarray(this.stream.headroom);
  }

  /** Sends what one read put in the current buffer; false pauses the socket until the stream drains. */
  onRead(bytes: number, socket: Socket): boolean {
    const buffer = this.current;
    const capacity = buffer.length - this.stream.headroom;
    const frame = buffer.subarray(0, this.stream.headroom + bytes);
    const reusable = capacity === STREAMING_READ;
    const ok = this.stream.writeFramed(frame, () => {
      if (reusable && this.streaming && this.pool.length < POOL_SIZE) this.pool.push(buffer);
    });
    if (bytes === capacity) this.streaming = true;
    else if (bytes < IDLE_READ) {
      this.streaming = false;
      this.pool.length = 0;
    }
    if (!ok) {
      socket.pause();
      this.stream.connectionDrain(() => socket.resume());
    }
    return true;
  }
}

export const sandboxPortForwardRpcs = { PortForward: portForward } satisfies RpcHandlers;
