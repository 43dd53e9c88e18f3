import { connect, type Socket } from 'node:net';
import type { PortForwardRequest__Output } from '../generated/runtime/v1/PortForwardRequest.js';
import type { PortForwardResponse } from '../generated/runtime/v1/PortForwardResponse.js';
import { RuntimeError } from './errors.js';
import type { RuntimeContext } from './runtime-context.js';
import { SandboxState } from './store/sandbox-store.js';
import type { PortStream } from './streaming/websocket-port-forward.js';

/** PortForward: hands out a streaming URL whose streams connect to the sandbox's listeners on its pod IP. */
export function portForward(ctx: RuntimeContext, req: PortForwardRequest__Output): PortForwardResponse {
  if (req.pod_sandbox_id === '') throw new RuntimeError('InvalidArgument', 'missing required pod_sandbox_id');
  const sandbox = ctx.sandboxes.mustFind(req.pod_sandbox_id);
  if (sandbox.status.state !== SandboxState.READY) {
    // containerd's check (internal/cri/server/sandbox_portforward.go).
    throw new RuntimeError('FailedPrecondition', `sandbox container ${JSON.stringify(sandbox.id)} is not running`);
  }
  const id = sandbox.id;
  return { url: ctx.streaming.register({ kind: 'portforward', ports: [...req.port], forward: (port, data, error) => forwardPort(ctx, id, port, data, error) }) };
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
  const socket: Socket = connect({ host: sandbox.ip, port });
  const connections = ctx.network.forwards.of(sandboxId);
  connections.add(socket);
  let connected = false;
  socket.on('connect', () => {
    connected = true;
  });
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (!connected) {
      const why = err.code === 'ECONNREFUSED' ? 'connect: connection refused' : err.message;
      fail(`dial tcp4 ${sandbox.ip}:${port}: ${why}`);
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
  socket.on('data', (chunk: Buffer) => {
    // Without flow control in SPDY (spdystream has none) the socket waits for the client's TCP.
    if (!data.write(chunk)) {
      socket.pause();
      data.connectionDrain(() => socket.resume());
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
