import { EventEmitter } from 'node:events';
import { controlFrame, dataFrame, DATA_HEADER_BYTES, EMPTY, FLAG_FIN, FrameType, MAX_DATA_CHUNK, RstStatus, type SpdyHeaders } from './spdy-frames.js';

/** What a stream needs of its connection (SpdyConnection). */
export interface StreamConnection {
  readonly closed: boolean;
  sendData(head: Buffer, payload: Buffer): boolean;
  sendRaw(frame: Buffer | Promise<Buffer>, written?: () => void): boolean;
  forget(id: number): void;
  once(event: 'drain', fn: () => void): unknown;
}

/** One stream of a connection (opened by the client). Emits 'data' (Buffer), 'end' (peer FIN), 'close'. */
export class SpdyStream extends EventEmitter {
  private localClosed = false;
  private remoteClosed = false;
  private resetDone = false;

  constructor(
    private readonly connection: StreamConnection,
    readonly id: number,
    readonly headers: SpdyHeaders,
    remoteFin: boolean,
  ) {
    super();
    this.remoteClosed = remoteFin;
  }

  /** The value of a header (names are case-insensitive). */
  header(name: string): string {
    return this.headers.get(name.toLowerCase()) ?? '';
  }

  get writable(): boolean {
    return !this.localClosed && !this.resetDone && !this.connection.closed;
  }

  get ended(): boolean {
    return this.remoteClosed || this.resetDone;
  }

  /** Sends data; returns false when the connection's socket buffer is full (wait for 'drain' on the connection). */
  write(data: Buffer | string): boolean {
    if (!this.writable) return false;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let ok = true;
    for (let at = 0; at < bytes.length; at += MAX_DATA_CHUNK) {
      const chunk = at === 0 && bytes.length <= MAX_DATA_CHUNK ? bytes : bytes.subarray(at, at + MAX_DATA_CHUNK);
      ok = this.connection.sendData(dataFrame(this.id, 0, EMPTY, chunk.length), chunk);
    }
    return ok;
  }

  /** Bytes writeFramed needs in front of the payload: the DATA frame's header. */
  readonly headroom = DATA_HEADER_BYTES;

  /**
   * Sends `frame.subarray(8)` as one DATA frame, writing its header into `frame`'s first 8 bytes
   * (no copy, one write); `done` runs once `frame` may be reused. The payload must fit one frame.
   */
  writeFramed(frame: Buffer, done: () => void): boolean {
    if (!this.writable) {
      done();
      return false;
    }
    frame.writeUInt32BE(this.id & 0x7fffffff, 0);
    frame.writeUInt32BE(frame.length - DATA_HEADER_BYTES, 4);
    return this.connection.sendRaw(frame, done);
  }

  /** Calls fn once the connection's socket has room again (after write returned false). */
  connectionDrain(fn: () => void): void {
    this.connection.once('drain', fn);
  }

  /** Half-closes the server's side (DATA with FIN). */
  end(data?: Buffer | string): void {
    if (data !== undefined) this.write(data);
    if (!this.writable) return;
    this.localClosed = true;
    this.connection.sendRaw(dataFrame(this.id, FLAG_FIN, EMPTY));
    this.maybeClosed();
  }

  /** Aborts the stream (RST_STREAM). */
  reset(status: number = RstStatus.CANCEL): void {
    if (this.resetDone) return;
    if (!this.connection.closed) {
      const payload = Buffer.alloc(8);
      payload.writeUInt32BE(this.id, 0);
      payload.writeUInt32BE(status, 4);
      this.connection.sendRaw(controlFrame(FrameType.RST_STREAM, 0, payload));
    }
    this.onReset();
  }

  /** @internal */
  onData(data: Buffer, fin: boolean): void {
    if (this.remoteClosed || this.resetDone) return;
    if (data.length > 0) this.emit('data', data);
    if (fin) {
      this.remoteClosed = true;
      this.emit('end');
      this.maybeClosed();
    }
  }

  /** @internal */
  onReset(): void {
    if (this.resetDone) return;
    this.resetDone = true;
    const wasEnded = this.remoteClosed;
    this.remoteClosed = true;
    this.localClosed = true;
    if (!wasEnded) this.emit('end');
    this.emit('reset');
    this.maybeClosed(true);
  }

  private closedEmitted = false;

  private maybeClosed(force = false): void {
    if (this.closedEmitted || !(force || (this.localClosed && this.remoteClosed))) return;
    this.closedEmitted = true;
    this.connection.forget(this.id);
    this.emit('close');
  }
}
