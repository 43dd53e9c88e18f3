import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { constants as zlibConstants, createDeflate, createInflate, type Deflate, type Inflate } from 'node:zlib';

/**
 * The server side of a SPDY/3.1 connection as Kubernetes uses it (moby/spdystream under
 * apimachinery's httpstream/spdy): the client opens streams with SYN_STREAM, the server answers
 * each with an empty SYN_REPLY, data flows in DATA frames, FIN half-closes, RST_STREAM aborts,
 * PING is echoed and GOAWAY ends the connection. Written by hand: spdy-transport (the npm SPDY
 * library) refuses streams without HTTP `:method`/`:path` headers, which Kubernetes streams never
 * carry; its SPDY/3 header-compression dictionary is used as is. Flow control is not enforced in
 * either direction, as spdystream does not (WINDOW_UPDATE and SETTINGS are read and ignored).
 */

const require = createRequire(import.meta.url);
const SPDY3_DICTIONARY = (require('spdy-transport/lib/spdy-transport/protocol/spdy/dictionary.js') as Record<number, Buffer>)[3] as Buffer;

const enum FrameType {
  SYN_STREAM = 1,
  SYN_REPLY = 2,
  RST_STREAM = 3,
  SETTINGS = 4,
  PING = 6,
  GOAWAY = 7,
  HEADERS = 8,
  WINDOW_UPDATE = 9,
}

const FLAG_FIN = 0x01;
const EMPTY = Buffer.alloc(0);
const DATA_HEADER_BYTES = 8;
/** RST_STREAM status codes (SPDY/3 §2.6.3). */
export const RstStatus = { PROTOCOL_ERROR: 1, INVALID_STREAM: 2, REFUSED_STREAM: 3, CANCEL: 5, INTERNAL_ERROR: 6, FRAME_TOO_LARGE: 11 } as const;
const GOAWAY_OK = 0;
const GOAWAY_PROTOCOL_ERROR = 1;

/** Largest frame payload accepted from a client (data or headers); larger ends the connection. */
export const MAX_FRAME_PAYLOAD = 1 << 20;
/** Largest decompressed header block (a zlib bomb ends the connection). */
const MAX_HEADER_BLOCK = 64 * 1024;
/** Bytes queued on the connection's socket past which writers are told to wait for 'drain'. */
const SOCKET_HIGH_WATER = 256 * 1024;
/** Largest DATA payload the server sends in one frame. */
const MAX_DATA_CHUNK = 64 * 1024;

export class SpdyProtocolError extends Error {}

/** Runs zlib chunk by chunk on one context (SPDY/3 compresses all header blocks as one stream). */
class ZlibContext {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private failure: Error | undefined;

  constructor(private readonly z: Inflate | Deflate, private readonly limit: number) {
    z.on('data', (chunk: Buffer) => {
      this.size += chunk.length;
      if (this.size <= limit) this.chunks.push(chunk);
    });
    z.on('error', (err) => {
      this.failure = err;
    });
  }

  run(input: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      if (this.failure !== undefined) {
        reject(this.failure);
        return;
      }
      this.z.write(input);
      this.z.flush(zlibConstants.Z_SYNC_FLUSH, () => {
        const size = this.size;
        const out = Buffer.concat(this.chunks);
        this.chunks.length = 0;
        this.size = 0;
        if (this.failure !== undefined) reject(this.failure);
        else if (size > this.limit) reject(new SpdyProtocolError(`header block larger than ${this.limit} bytes`));
        else resolve(out);
      });
    });
  }

  close(): void {
    this.z.removeAllListeners('data');
    this.z.on('error', () => undefined);
    this.z.destroy();
  }
}

/** Header names are lower-case on the wire (SPDY/3 §2.6.10); values of one name joined by NUL. */
export type SpdyHeaders = ReadonlyMap<string, string>;

function decodeHeaderBlock(block: Buffer): Map<string, string> {
  const headers = new Map<string, string>();
  let at = 0;
  const need = (n: number): void => {
    if (at + n > block.length) throw new SpdyProtocolError('truncated header block');
  };
  need(4);
  const count = block.readUInt32BE(at);
  at += 4;
  for (let i = 0; i < count; i++) {
    need(4);
    const nameLength = block.readUInt32BE(at);
    at += 4;
    need(nameLength);
    const name = block.toString('utf8', at, at + nameLength).toLowerCase();
    at += nameLength;
    need(4);
    const valueLength = block.readUInt32BE(at);
    at += 4;
    need(valueLength);
    headers.set(name, block.toString('utf8', at, at + valueLength));
    at += valueLength;
  }
  return headers;
}

function encodeHeaderBlock(headers: ReadonlyMap<string, string>): Buffer {
  const parts: Buffer[] = [];
  const count = Buffer.alloc(4);
  count.writeUInt32BE(headers.size);
  parts.push(count);
  for (const [name, value] of headers) {
    for (const text of [name.toLowerCase(), value]) {
      const bytes = Buffer.from(text, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      parts.push(length, bytes);
    }
  }
  return Buffer.concat(parts);
}

function controlFrame(type: FrameType, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | 3, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

/** A DATA frame's 8-byte header for `length` bytes of payload, followed by `data` when given. */
function dataFrame(streamId: number, flags: number, data: Buffer, length = data.length): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(((flags & 0xff) << 24) | length, 4);
  return data.length === 0 ? head : Buffer.concat([head, data]);
}

interface Frame {
  control: boolean;
  type: number;
  streamId: number;
  flags: number;
  payload: Buffer;
}

/** One stream of a connection (opened by the client). Emits 'data' (Buffer), 'end' (peer FIN), 'close'. */
export class SpdyStream extends EventEmitter {
  private localClosed = false;
  private remoteClosed = false;
  private resetDone = false;

  constructor(
    private readonly connection: SpdyConnection,
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

/**
 * A SPDY/3.1 server connection over an upgraded socket (or a WebSocket tunnel). Emits 'stream'
 * (SpdyStream, after its SYN_REPLY went out), 'drain' and 'close' (once, with an Error or undefined).
 */
export class SpdyConnection extends EventEmitter {
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  /** Bytes the next frame needs before it can be parsed (its header, then header and payload). */
  private needed = 8;
  private readonly streams = new Map<number, SpdyStream>();
  private readonly inflater = new ZlibContext(createInflate({ dictionary: SPDY3_DICTIONARY }), MAX_HEADER_BLOCK);
  private readonly deflater = new ZlibContext(createDeflate({ dictionary: SPDY3_DICTIONARY }), Number.MAX_SAFE_INTEGER);
  private readonly inbox: Frame[] = [];
  private pumping = false;
  private readonly outbox: (Buffer | Promise<Buffer>)[] = [];
  /** Callbacks of queued frames, run once the socket took them (or the connection is gone). */
  private readonly callbacks = new Map<Buffer | Promise<Buffer>, () => void>();
  private sending = false;
  private lastStreamId = 0;
  closed = false;

  /** A TCP socket writes corked buffers as one writev; a WebSocket tunnel's stream does not. */
  private readonly corkable: boolean;

  constructor(private readonly socket: Duplex, head: Buffer = EMPTY) {
    super();
    this.corkable = socket instanceof Socket;
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('drain', () => this.emit('drain'));
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
    socket.on('end', () => this.destroy());
    if (head.length > 0) this.receive(head);
  }

  get streamCount(): number {
    return this.streams.size;
  }

  /** Bytes queued on the socket that the client has not taken yet. */
  get pendingBytes(): number {
    return this.socket.writableLength;
  }

  /** @internal */
  sendRaw(frame: Buffer | Promise<Buffer>, written?: () => void): boolean {
    if (this.closed) {
      written?.();
      return false;
    }
    if (this.outbox.length === 0 && !this.sending && frame instanceof Buffer) this.socket.write(frame, written);
    else this.queue(frame, written);
    return this.socket.writableLength < SOCKET_HIGH_WATER;
  }

  /**
   * A DATA frame: its 8-byte header and the payload, given apart so the payload is not copied.
   * On a TCP socket the two go out corked (one writev); through a WebSocket tunnel, where every
   * write is a message of its own, as one buffer.
   * @internal
   */
  sendData(head: Buffer, payload: Buffer): boolean {
    if (this.closed) return false;
    if (payload.length === 0) return this.sendRaw(head);
    if (!this.corkable) return this.sendRaw(Buffer.concat([head, payload], head.length + payload.length));
    if (this.outbox.length === 0 && !this.sending) {
      this.socket.cork();
      this.socket.write(head);
      this.socket.write(payload);
      this.socket.uncork();
    } else {
      this.queue(head);
      this.queue(payload);
    }
    return this.socket.writableLength < SOCKET_HIGH_WATER;
  }

  private queue(frame: Buffer | Promise<Buffer>, written?: () => void): void {
    this.outbox.push(frame);
    if (written !== undefined) this.callbacks.set(frame, written);
    if (!this.sending) void this.flushOutbox();
  }

  /** Writes the outbox in order, waiting for header blocks still being compressed. */
  private async flushOutbox(): Promise<void> {
    this.sending = true;
    try {
      while (this.outbox.length > 0 && !this.closed) {
        const next = this.outbox.shift() as Buffer | Promise<Buffer>;
        const written = this.callbacks.get(next);
        this.callbacks.delete(next);
        const frame = next instanceof Buffer ? next : await next;
        if (!this.closed) this.socket.write(frame, written);
        else written?.();
      }
    } catch (err) {
      this.destroy(err instanceof Error ? err : new Error(String(err)));
    } finally {
      this.sending = false;
    }
  }

  /** @internal */
  forget(id: number): void {
    this.streams.delete(id);
  }

  /** Sends GOAWAY and closes the socket once what is queued has been written. */
  close(): void {
    if (this.closed) return;
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(this.lastStreamId, 0);
    payload.writeUInt32BE(GOAWAY_OK, 4);
    this.sendRaw(controlFrame(FrameType.GOAWAY, 0, payload));
    const finish = (): void => {
      // Destroyed meanwhile (the socket went away): nothing is left to write.
      if (this.closed) return;
      if (this.outbox.length > 0 || this.sending) {
        setImmediate(finish);
        return;
      }
      this.socket.end();
      this.destroy();
    };
    finish();
  }

  /** Ends the connection at once (the socket is destroyed; streams see 'reset'). */
  destroy(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.inflater.close();
    this.deflater.close();
    for (const stream of [...this.streams.values()]) stream.onReset();
    this.streams.clear();
    this.inbox.length = 0;
    this.outbox.length = 0;
    const callbacks = [...this.callbacks.values()];
    this.callbacks.clear();
    for (const written of callbacks) written();
    this.emit('close', err);
  }

  private protocolError(message: string): void {
    if (this.closed) return;
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(this.lastStreamId, 0);
    payload.writeUInt32BE(GOAWAY_PROTOCOL_ERROR, 4);
    // Written directly: nothing queued after a protocol error matters.
    this.socket.write(controlFrame(FrameType.GOAWAY, 0, payload));
    this.socket.end();
    this.destroy(new SpdyProtocolError(message));
  }

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    // Chunks are kept apart until a whole frame is there, then joined once (joining on every
    // chunk copied a large frame over and over).
    this.chunks.push(chunk);
    this.chunkBytes += chunk.length;
    if (this.chunkBytes < this.needed) return;
    let buffer = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.chunkBytes);
    this.chunks = [];
    this.chunkBytes = 0;
    this.needed = 8;
    while (buffer.length >= 8) {
      const word = buffer.readUInt32BE(0);
      const flagsAndLength = buffer.readUInt32BE(4);
      const length = flagsAndLength & 0xffffff;
      if (length > MAX_FRAME_PAYLOAD) {
        this.protocolError(`frame of ${length} bytes exceeds the limit of ${MAX_FRAME_PAYLOAD}`);
        return;
      }
      if (buffer.length < 8 + length) {
        this.needed = 8 + length;
        break;
      }
      const control = (word & 0x80000000) !== 0;
      if (control && ((word >>> 16) & 0x7fff) !== 3) {
        this.protocolError(`unsupported SPDY version ${(word >>> 16) & 0x7fff}`);
        return;
      }
      // The payload is a view of the socket's chunk (each read is a buffer of its own).
      const frame: Frame = {
        control,
        type: control ? word & 0xffff : 0,
        streamId: control ? 0 : word & 0x7fffffff,
        flags: flagsAndLength >>> 24,
        payload: buffer.subarray(8, 8 + length),
      };
      buffer = buffer.subarray(8 + length);
      this.inbox.push(frame);
    }
    if (buffer.length > 0) {
      this.chunks.push(buffer);
      this.chunkBytes = buffer.length;
    }
    if (!this.pumping) void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.inbox.length > 0 && !this.closed) {
        const frame = this.inbox.shift() as Frame;
        const pending = this.handle(frame);
        if (pending !== undefined) await pending;
      }
    } catch (err) {
      this.protocolError(err instanceof Error ? err.message : String(err));
    } finally {
      this.pumping = false;
    }
  }

  private handle(frame: Frame): Promise<void> | undefined {
    if (!frame.control) {
      const stream = this.streams.get(frame.streamId);
      // Data for a stream that is gone is dropped (spdystream does the same).
      stream?.onData(frame.payload, (frame.flags & FLAG_FIN) !== 0);
      return undefined;
    }
    const p = frame.payload;
    switch (frame.type) {
      case FrameType.SYN_STREAM:
        return this.onSynStream(frame);
      case FrameType.RST_STREAM:
        if (p.length < 8) throw new SpdyProtocolError('short RST_STREAM frame');
        this.streams.get(p.readUInt32BE(0) & 0x7fffffff)?.onReset();
        return undefined;
      case FrameType.PING:
        if (p.length < 4) throw new SpdyProtocolError('short PING frame');
        // Client pings have odd ids; the server echoes them (SPDY/3 §2.6.5).
        if ((p.readUInt32BE(0) & 1) === 1) this.sendRaw(controlFrame(FrameType.PING, 0, Buffer.from(p)));
        return undefined;
      case FrameType.GOAWAY:
        this.close();
        return undefined;
      case FrameType.HEADERS:
        // Header blocks must be inflated to keep the shared zlib context in step.
        return this.inflater.run(p.subarray(4)).then(() => undefined);
      case FrameType.SYN_REPLY:
        throw new SpdyProtocolError('SYN_REPLY from a client');
      default:
        // SETTINGS, WINDOW_UPDATE, and unknown control frames are ignored (SPDY/3 §2.2.1).
        return undefined;
    }
  }

  private async onSynStream(frame: Frame): Promise<void> {
    const p = frame.payload;
    if (p.length < 10) throw new SpdyProtocolError('short SYN_STREAM frame');
    const id = p.readUInt32BE(0) & 0x7fffffff;
    const headers = decodeHeaderBlock(await this.inflater.run(p.subarray(10)));
    if (this.closed) return;
    if (id === 0 || id % 2 === 0 || id <= this.lastStreamId) {
      const payload = Buffer.alloc(8);
      payload.writeUInt32BE(id, 0);
      payload.writeUInt32BE(RstStatus.PROTOCOL_ERROR, 4);
      this.sendRaw(controlFrame(FrameType.RST_STREAM, 0, payload));
      return;
    }
    this.lastStreamId = id;
    const stream = new SpdyStream(this, id, headers, (frame.flags & FLAG_FIN) !== 0);
    this.streams.set(id, stream);
    // The empty SYN_REPLY every stream gets (apimachinery's spdy server replies before handing it on).
    const idBytes = Buffer.alloc(4);
    idBytes.writeUInt32BE(id);
    this.sendRaw(this.deflater.run(encodeHeaderBlock(new Map())).then((block) => controlFrame(FrameType.SYN_REPLY, 0, Buffer.concat([idBytes, block]))));
    this.emit('stream', stream);
  }
}
