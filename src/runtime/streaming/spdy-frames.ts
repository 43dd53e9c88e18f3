/**
 * SPDY/3.1 framing as Kubernetes' streams use it (moby/spdystream): frame types and flags, the
 * zlib header-block codec with the SPDY/3 dictionary, and the frame builders. The connection
 * (spdy-connection.ts) and its streams (spdy-stream.ts) are built on these.
 */
import { createRequire } from 'node:module';
import { constants as zlibConstants, type Deflate, type Inflate } from 'node:zlib';

const require = createRequire(import.meta.url);
export const SPDY3_DICTIONARY = (require('spdy-transport/lib/spdy-transport/protocol/spdy/dictionary.js') as Record<number, Buffer>)[3] as Buffer;

export const enum FrameType {
  SYN_STREAM = 1,
  SYN_REPLY = 2,
  RST_STREAM = 3,
  SETTINGS = 4,
  PING = 6,
  GOAWAY = 7,
  HEADERS = 8,
  WINDOW_UPDATE = 9,
}

export const FLAG_FIN = 0x01;
export const EMPTY = Buffer.alloc(0);
export const DATA_HEADER_BYTES = 8;
/** RST_STREAM status codes (SPDY/3 §2.6.3). */
export const RstStatus = { PROTOCOL_ERROR: 1, INVALID_STREAM: 2, REFUSED_STREAM: 3, CANCEL: 5, INTERNAL_ERROR: 6, FRAME_TOO_LARGE: 11 } as const;
export const GOAWAY_OK = 0;
export const GOAWAY_PROTOCOL_ERROR = 1;

/** Largest frame payload accepted from a client (data or headers); larger ends the connection. */
export const MAX_FRAME_PAYLOAD = 1 << 20;
/** Largest decompressed header block (a zlib bomb ends the connection). */
export const MAX_HEADER_BLOCK = 64 * 1024;
/** Bytes queued on the connection's socket past which writers are told to wait for 'drain'. */
export const SOCKET_HIGH_WATER = 256 * 1024;
/** Largest DATA payload the server sends in one frame. */
export const MAX_DATA_CHUNK = 64 * 1024;

export class SpdyProtocolError extends Error {}

/** Runs zlib chunk by chunk on one context (SPDY/3 compresses all header blocks as one stream). */
export class ZlibContext {
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

export function decodeHeaderBlock(block: Buffer): Map<string, string> {
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

export function encodeHeaderBlock(headers: ReadonlyMap<string, string>): Buffer {
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

export function controlFrame(type: FrameType, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | 3, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

/** A DATA frame's 8-byte header for `length` bytes of payload, followed by `data` when given. */
export function dataFrame(streamId: number, flags: number, data: Buffer, length = data.length): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(((flags & 0xff) << 24) | length, 4);
  return data.length === 0 ? head : Buffer.concat([head, data]);
}

export interface Frame {
  control: boolean;
  type: number;
  streamId: number;
  flags: number;
  payload: Buffer;
}
