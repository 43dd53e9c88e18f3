// A small SPDY/3.1 client for tests: the HTTP upgrade, SYN_STREAM with compressed headers (one
// zlib context per connection, SPDY/3 §2.6.10.1), DATA both ways, FIN, RST_STREAM and GOAWAY
// seen. What moby/spdystream does as the client of crictl and kubectl, reduced to what the tests
// of the streaming server need.
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { connect, type Socket } from 'node:net';
import { constants as zlibConstants, createDeflate, type Deflate } from 'node:zlib';

const require = createRequire(import.meta.url);
const SPDY3_DICTIONARY = (require('spdy-transport/lib/spdy-transport/protocol/spdy/dictionary.js') as Record<number, Buffer>)[3] as Buffer;

export interface ClientStream {
  id: number;
  chunks: Buffer[];
  ended: boolean;
  reset: boolean;
}

function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | 3, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

/** Emits 'goaway' (status), 'close', and 'data' (stream) / 'end' (stream) per stream. */
export class SpdyTestClient extends EventEmitter {
  readonly streams = new Map<number, ClientStream>();
  private nextId = 1;
  private readonly deflate: Deflate = createDeflate({ dictionary: SPDY3_DICTIONARY });
  private pending: Buffer = Buffer.alloc(0);
  private opening: Promise<void> = Promise.resolve();
  closed = false;

  private constructor(readonly socket: Socket, head: Buffer) {
    super();
    this.setMaxListeners(0);
    socket.on('data', (c: Buffer) => this.receive(c));
    socket.on('close', () => {
      this.closed = true;
      this.deflate.close();
      this.emit('close');
    });
    socket.on('error', () => socket.destroy());
    if (head.length > 0) this.receive(head);
  }

  /** Upgrades `url` to SPDY/3.1 offering `protocols`; rejects with the response when it is not 101. */
  static open(url: string, protocols: string[]): Promise<SpdyTestClient> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: u.hostname, port: Number(u.port) });
      let got = Buffer.alloc(0);
      const onData = (c: Buffer): void => {
        got = Buffer.concat([got, c]);
        const end = got.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onData);
        const head = got.subarray(0, end).toString('latin1');
        if (!head.startsWith('HTTP/1.1 101 ')) {
          socket.destroy();
          reject(new Error(got.toString('latin1')));
          return;
        }
        resolve(new SpdyTestClient(socket, got.subarray(end + 4)));
      };
      socket.on('data', onData);
      socket.once('error', reject);
      socket.on('connect', () => {
        socket.write(`POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n` +
          `${protocols.map((p) => `X-Stream-Protocol-Version: ${p}\r\n`).join('')}\r\n`);
      });
    });
  }

  /** Opens a stream with these headers (SYN_STREAM); resolves with its id once sent. */
  openStream(headers: Record<string, string>): Promise<ClientStream> {
    // One after another: the zlib context is shared, and stream ids must rise on the wire.
    const opened = this.opening.then(() => this.synStream(headers));
    this.opening = opened.then(() => undefined, () => undefined);
    return opened;
  }

  private async synStream(headers: Record<string, string>): Promise<ClientStream> {
    const id = this.nextId;
    this.nextId += 2;
    const entries = Object.entries(headers);
    const parts: Buffer[] = [Buffer.alloc(4)];
    parts[0]?.writeUInt32BE(entries.length);
    for (const [name, value] of entries) {
      for (const text of [name.toLowerCase(), value]) {
        const bytes = Buffer.from(text);
        const length = Buffer.alloc(4);
        length.writeUInt32BE(bytes.length);
        parts.push(length, bytes);
      }
    }
    const block = await this.compress(Buffer.concat(parts));
    const prefix = Buffer.alloc(10);
    prefix.writeUInt32BE(id, 0);
    const stream: ClientStream = { id, chunks: [], ended: false, reset: false };
    this.streams.set(id, stream);
    this.socket.write(controlFrame(1, 0, Buffer.concat([prefix, block])));
    return stream;
  }

  /** One DATA frame (FIN when `fin`). */
  write(id: number, data: Buffer | string, fin = false): void {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    const head = Buffer.alloc(8);
    head.writeUInt32BE(id & 0x7fffffff, 0);
    head.writeUInt32BE(((fin ? 1 : 0) << 24) | bytes.length, 4);
    this.socket.write(Buffer.concat([head, bytes]));
  }

  close(): void {
    this.socket.destroy();
  }

  /** Resolves when the stream has ended (FIN or reset) or the connection closed. */
  ended(stream: ClientStream): Promise<void> {
    if (stream.ended || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (s?: ClientStream): void => {
        if (s !== undefined && s !== stream) return;
        this.off('end', check);
        this.off('close', check);
        resolve();
      };
      this.on('end', check);
      this.on('close', check);
    });
  }

  private compress(block: Buffer): Promise<Buffer> {
    return new Promise((resolve) => {
      const out: Buffer[] = [];
      const onData = (c: Buffer): number => out.push(c);
      this.deflate.on('data', onData);
      this.deflate.write(block);
      this.deflate.flush(zlibConstants.Z_SYNC_FLUSH, () => {
        this.deflate.off('data', onData);
        resolve(Buffer.concat(out));
      });
    });
  }

  private receive(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 8) {
      const word = this.pending.readUInt32BE(0);
      const flagsAndLength = this.pending.readUInt32BE(4);
      const length = flagsAndLength & 0xffffff;
      if (this.pending.length < 8 + length) return;
      const payload = this.pending.subarray(8, 8 + length);
      const fin = (flagsAndLength >>> 24 & 1) === 1;
      this.pending = this.pending.subarray(8 + length);
      if ((word & 0x80000000) === 0) {
        const stream = this.streams.get(word & 0x7fffffff);
        if (stream === undefined) continue;
        if (payload.length > 0) {
          stream.chunks.push(Buffer.from(payload));
          this.emit('data', stream);
        }
        if (fin) {
          stream.ended = true;
          this.emit('end', stream);
        }
        continue;
      }
      const type = word & 0xffff;
      if (type === 3) {
        const stream = this.streams.get(payload.readUInt32BE(0) & 0x7fffffff);
        if (stream !== undefined) {
          stream.reset = true;
          stream.ended = true;
          this.emit('end', stream);
        }
      } else if (type === 7) {
        this.emit('goaway', payload.readUInt32BE(4));
      }
    }
  }
}

/** The text of a stream's data so far. */
export const textOf = (stream: ClientStream): string => Buffer.concat(stream.chunks).toString();
