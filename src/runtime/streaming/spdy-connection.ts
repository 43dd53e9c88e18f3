/**
 * The server side of a SPDY/3.1 connection as Kubernetes uses it (moby/spdystream under
 * apimachinery's httpstream/spdy): the client opens streams with SYN_STREAM, the server answers
 * each with an empty SYN_REPLY, data flows in DATA frames, FIN half-closes, RST_STREAM aborts,
 * PING is echoed and GOAWAY ends the connection. Written by hand: spdy-transport (the npm SPDY
 * library) refuses streams without HTTP `:method`/`:path` headers, which Kubernetes streams never
 * carry; its SPDY/3 header-compression dictionary is used as is. Flow control is not enforced in
 * either direction, as spdystream does not (WINDOW_UPDATE and SETTINGS are read and ignored).
 */
import { EventEmitter } from 'node:events';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createDeflate, createInflate } from 'node:zlib';
import { SpdyStream } from './spdy-stream.js';
import {
  controlFrame, decodeHeaderBlock, encodeHeaderBlock, EMPTY, FLAG_FIN, FrameType, GOAWAY_OK, GOAWAY_PROTOCOL_ERROR,
  MAX_FRAME_PAYLOAD, MAX_HEADER_BLOCK, RstStatus, SOCKET_HIGH_WATER, SPDY3_DICTIONARY, SpdyProtocolError, ZlibContext, type Frame,
} from './spdy-frames.js';

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
  /** Bytes of the outbox's ready buffers (frames still being compressed count once written). */
  private outboxBytes = 0;
  /** A writer was told to wait (a send returned false): 'drain' is owed once there is room. */
  private drainOwed = false;
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
    socket.on('drain', () => this.payDrain());
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
    socket.on('end', () => this.destroy());
    if (head.length > 0) this.receive(head);
  }

  get streamCount(): number {
    return this.streams.size;
  }

  /** Bytes queued that the client has not taken yet: on the socket and in the outbox behind it. */
  get pendingBytes(): number {
    return this.socket.writableLength + this.outboxBytes;
  }

  /**
   * Whether writers may go on. Frames queued behind a header block still being compressed count
   * too: otherwise a fast sender fills the outbox without bound while the socket looks empty.
   */
  private room(): boolean {
    if (this.pendingBytes < SOCKET_HIGH_WATER) return true;
    this.drainOwed = true;
    return false;
  }

  /** Emits 'drain' to writers told to wait, once what is queued is under the high-water mark. */
  private payDrain(): void {
    if (!this.drainOwed || this.closed || this.pendingBytes >= SOCKET_HIGH_WATER) return;
    this.drainOwed = false;
    this.emit('drain');
  }

  /** @internal */
  sendRaw(frame: Buffer | Promise<Buffer>, written?: () => void): boolean {
    if (this.closed) {
      written?.();
      return false;
    }
    if (this.outbox.length === 0 && !this.sending && frame instanceof Buffer) this.socket.write(frame, written);
    else this.queue(frame, written);
    return this.room();
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
    return this.room();
  }

  private queue(frame: Buffer | Promise<Buffer>, written?: () => void): void {
    this.outbox.push(frame);
    if (frame instanceof Buffer) this.outboxBytes += frame.length;
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
        if (next instanceof Buffer) this.outboxBytes -= next.length;
        const frame = next instanceof Buffer ? next : await next;
        if (!this.closed) this.socket.write(frame, written);
        else written?.();
      }
    } catch (err) {
      this.destroy(err instanceof Error ? err : new Error(String(err)));
    } finally {
      this.sending = false;
    }
    // The socket may have taken it all without ever filling (no 'drain' of its own to come).
    this.payDrain();
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
    this.outboxBytes = 0;
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
