import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';

/** What port-forward needs of a stream: SpdyStream has it, and so does a WebSocket channel. */
export interface PortStream {
  write(data: Buffer | string): boolean;
  /** Bytes writeFramed needs in front of the payload (the transport's frame header). */
  readonly headroom: number;
  /**
   * Sends `frame.subarray(headroom)`, using the first headroom bytes for the transport's header
   * (no copy); `done` runs once `frame` may be reused (written, or dropped).
   */
  writeFramed(frame: Buffer, done: () => void): boolean;
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

/** Bytes a connection may have queued (sent, not yet taken by its socket) before writers wait. */
export const WEBSOCKET_HIGH_WATER = 256 * 1024;

/**
 * Backpressure for one WebSocket: counts the bytes handed to `send` whose write has not completed
 * (ws calls back once its socket took them) and wakes waiting writers when that falls below half
 * the high-water mark. (Polling `bufferedAmount` on a timer stalled every full buffer for the
 * timer's period.)
 */
export class SendWindow {
  private queued = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly socket: WebSocket, private readonly highWater = WEBSOCKET_HIGH_WATER) {
    socket.once('close', () => this.wake());
  }

  get pending(): number {
    return this.queued;
  }

  /** Sends one binary message; false when writers should wait for onDrain. */
  send(message: Buffer, written?: () => void): boolean {
    this.queued += message.length;
    this.socket.send(message, { binary: true }, () => {
      written?.();
      this.queued -= message.length;
      if (this.queued <= this.highWater / 2 && this.waiters.length > 0) this.wake();
    });
    return this.queued < this.highWater;
  }

  onDrain(fn: () => void): void {
    if (this.queued < this.highWater || this.socket.readyState !== this.socket.OPEN) queueMicrotask(fn);
    else this.waiters.push(fn);
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const fn of waiters) fn();
  }
}

/** One channel of a WebSocket port-forward: messages whose first byte is the channel number. */
class WebSocketChannel extends EventEmitter implements PortStream {
  private closedLocal = false;
  private closedRemote = false;

  constructor(private readonly socket: WebSocket, readonly id: number, private readonly flow: SendWindow) {
    super();
  }

  get ended(): boolean {
    return this.closedRemote;
  }

  write(data: Buffer | string): boolean {
    if (this.closedLocal || this.socket.readyState !== this.socket.OPEN) return false;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const message = Buffer.allocUnsafe(bytes.length + 1);
    message[0] = this.id;
    bytes.copy(message, 1);
    return this.flow.send(message);
  }

  readonly headroom = 1;

  writeFramed(frame: Buffer, done: () => void): boolean {
    if (this.closedLocal || this.socket.readyState !== this.socket.OPEN) {
      done();
      return false;
    }
    frame[0] = this.id;
    return this.flow.send(frame, done);
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
    this.flow.onDrain(fn);
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
  const flow = new SendWindow(socket);
  ports.forEach((port, i) => {
    const data = new WebSocketChannel(socket, 2 * i, flow);
    const error = new WebSocketChannel(socket, 2 * i + 1, flow);
    channels.push(data, error);
    const portBytes = Buffer.alloc(2);
    portBytes.writeUInt16LE(port);
    data.write(portBytes);
    error.write(portBytes);
  });
  socket.on('message', (raw: Buffer) => {
    if (raw.length === 0) return;
    const channel = channels[raw[0] as number];
    // ws hands over a buffer of its own per message: the channel's bytes need no copy.
    if (channel !== undefined && raw.length > 1) channel.deliver(raw.subarray(1));
  });
  socket.on('close', () => {
    for (const c of channels) c.remoteClosed();
  });
  socket.on('error', () => socket.terminate());
  ports.forEach((port, i) => forward(port, channels[2 * i] as WebSocketChannel, channels[2 * i + 1] as WebSocketChannel));
}
