import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';

/** What port-forward needs of a stream: SpdyStream has it, and so does a WebSocket channel. */
export interface PortStream {
  write(data: Buffer | string): boolean;
  end(data?: Buffer | string): void;
  reset(): void;
  connectionDrain(fn: () => void): void;
  readonly ended: boolean;
  on(event: 'data', fn: (data: Buffer) => void): this;
  on(event: 'end' | 'reset' | 'close', fn: () => void): this;
  once(event: 'close', fn: () => void): this;
}

/** WebSocket port-forward protocols of the kubelet (pkg/cri/streaming/portforward/websocket.go). */
export const WEBSOCKET_PORT_FORWARD_PROTOCOLS = ['v4.channel.k8s.io', 'channel.k8s.io'] as const;

/** One channel of a WebSocket port-forward: messages whose first byte is the channel number. */
class WebSocketChannel extends EventEmitter implements PortStream {
  private closedLocal = false;
  private closedRemote = false;

  constructor(private readonly socket: WebSocket, readonly id: number) {
    super();
  }

  get ended(): boolean {
    return this.closedRemote;
  }

  write(data: Buffer | string): boolean {
    if (this.closedLocal || this.socket.readyState !== this.socket.OPEN) return false;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    this.socket.send(Buffer.concat([Buffer.of(this.id), bytes]), { binary: true });
    return this.socket.bufferedAmount < 256 * 1024;
  }

  end(data?: Buffer | string): void {
    if (data !== undefined) this.write(data);
    if (this.closedLocal) return;
    this.closedLocal = true;
    // A WebSocket channel has no half-close: the connection ends when the data channel does.
    if (this.id % 2 === 0) this.socket.close(1000);
  }

  reset(): void {
    this.closedLocal = true;
    this.socket.terminate();
  }

  connectionDrain(fn: () => void): void {
    const poll = (): void => {
      if (this.socket.readyState !== this.socket.OPEN || this.socket.bufferedAmount < 64 * 1024) fn();
      else setTimeout(poll, 10);
    };
    setTimeout(poll, 10);
  }

  /** @internal */
  deliver(data: Buffer): void {
    if (!this.closedRemote) this.emit('data', data);
  }

  /** @internal */
  remoteClosed(): void {
    if (this.closedRemote) return;
    this.closedRemote = true;
    this.emit('end');
    this.emit('close');
  }
}

/**
 * Serves port-forward over plain WebSocket: two channels per port (data 2i, error 2i+1), each
 * opened by a message holding the port as uint16 little-endian, as the kubelet does.
 */
export function serveWebSocketPortForward(socket: WebSocket, ports: readonly number[], forward: (port: number, data: PortStream, error: PortStream) => void): void {
  const channels: WebSocketChannel[] = [];
  ports.forEach((port, i) => {
    const data = new WebSocketChannel(socket, 2 * i);
    const error = new WebSocketChannel(socket, 2 * i + 1);
    channels.push(data, error);
    const portBytes = Buffer.alloc(2);
    portBytes.writeUInt16LE(port);
    data.write(portBytes);
    error.write(portBytes);
  });
  socket.on('message', (raw: Buffer) => {
    if (raw.length === 0) return;
    const channel = channels[raw[0] as number];
    if (channel !== undefined && raw.length > 1) channel.deliver(Buffer.from(raw.subarray(1)));
  });
  socket.on('close', () => {
    for (const c of channels) c.remoteClosed();
  });
  socket.on('error', () => socket.terminate());
  ports.forEach((port, i) => forward(port, channels[2 * i] as WebSocketChannel, channels[2 * i + 1] as WebSocketChannel));
}
