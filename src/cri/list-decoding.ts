import type { MethodDefinition } from '@grpc/proto-loader';
import type { RuntimeServiceDefinition } from '../generated/runtime/v1/RuntimeService.js';
import { deepFreeze } from '../deep-freeze.js';
import { listField } from './list-encoding.js';

/**
 * Client side of the big lists: decoding thousands of containers with protobufjs (`decode`, then
 * `toObject` with int64 as strings and defaults) is most of a ListContainers call once the server
 * encodes from cache (bench/README.md). A repeated message field is a run of
 * `tag, length, element bytes`; an element's decoded object depends on its bytes only. So the
 * client keeps, per method, the elements of the last response with their exact bytes and decodes
 * only the elements it has not seen.
 *
 * Decoded elements are deep-frozen once and shared between responses: every response gets a
 * fresh array, but an element whose bytes did not change is the same (immutable) object as in the
 * previous response. A caller that wants to change one copies it first; a write to it throws
 * (ESM code runs in strict mode), so a mutation cannot leak into a later response.
 */

/** `(field number << 3) | wire type 2 (length-delimited)`, as a varint. */
function tagBytes(fieldNumber: number): number[] {
  const out: number[] = [];
  let value = (fieldNumber << 3) | 2;
  while (value > 0x7f) {
    out.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  out.push(value);
  return out;
}

/** A base-128 varint at `pos` (at most 5 bytes: lengths stay below 2^32): [value, next pos], or undefined. */
function readVarint(bytes: Uint8Array, pos: number): [number, number] | undefined {
  let value = 0;
  for (let shift = 0, i = pos; shift < 35; shift += 7, i++) {
    if (i >= bytes.length) return undefined;
    const byte = bytes[i] as number;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return [value, i + 1];
  }
  return undefined;
}

/** The elements of one response: for element i, its bytes are `bytes[bodyStart[i], end[i])`. */
interface DecodedRun {
  readonly bytes: Buffer;
  readonly bodyStart: number[];
  readonly end: number[];
  readonly decoded: unknown[];
  /** Element index by its bytes (latin1: one char per byte), built on the first out-of-place lookup. */
  index?: Map<string, number>;
}

/**
 * The method with a response deserializer that reuses the decoding of elements whose bytes it
 * saw in the previous response. A response that is not only a run of that field (another
 * server's extra field, a malformed length) goes through the default deserializer unchanged.
 * Each call makes its own cache (one per client).
 */
export function withCachedElementDecoding<Req, Res, ReqOut, ResOut>(
  method: MethodDefinition<Req, Res, ReqOut, ResOut>,
  name: string,
): MethodDefinition<Req, Res, ReqOut, ResOut> {
  const { name: field, number } = listField(method as MethodDefinition<unknown, unknown>, name);
  const tag = tagBytes(number);
  const deserialize = method.responseDeserialize;
  let previous: DecodedRun = { bytes: Buffer.alloc(0), bodyStart: [], end: [], decoded: [] };

  /** The start of each element's tag, and of its body, and its end; undefined unless `bytes` is only a run of the field. */
  const split = (bytes: Buffer): { tagStart: number[]; bodyStart: number[]; end: number[] } | undefined => {
    const tagStart: number[] = [];
    const bodyStart: number[] = [];
    const ends: number[] = [];
    let pos = 0;
    // Every element takes at least tag.length + 1 bytes, so this ends within bytes.length steps.
    while (pos < bytes.length) {
      for (let i = 0; i < tag.length; i++) if (bytes[pos + i] !== tag[i]) return undefined;
      const length = readVarint(bytes, pos + tag.length);
      if (length === undefined) return undefined;
      const [size, body] = length;
      const end = body + size;
      if (end > bytes.length) return undefined;
      tagStart.push(pos);
      bodyStart.push(body);
      ends.push(end);
      pos = end;
    }
    return { tagStart, bodyStart, end: ends };
  };

  /** The index in `previous` of an element with exactly these bytes, or -1. */
  const findPrevious = (bytes: Buffer, start: number, end: number, guess: number): number => {
    const size = end - start;
    if (guess < previous.decoded.length) {
      const guessStart = previous.bodyStart[guess] as number;
      const guessEnd = previous.end[guess] as number;
      // Lists usually come back in the same order: compare with the element after the last match first.
      if (guessEnd - guessStart === size && bytes.compare(previous.bytes, guessStart, guessEnd, start, end) === 0) return guess;
    }
    if (previous.decoded.length === 0) return -1;
    if (previous.index === undefined) {
      const index = new Map<string, number>();
      for (let i = 0; i < previous.decoded.length; i++) {
        index.set(previous.bytes.toString('latin1', previous.bodyStart[i], previous.end[i]), i);
      }
      previous.index = index;
    }
    return previous.index.get(bytes.toString('latin1', start, end)) ?? -1;
  };

  return {
    ...method,
    responseDeserialize(received: Buffer): ResOut {
      // The same bytes as last time (a relist of an unchanged set): one memcmp, no copy, no split.
      if (received.equals(previous.bytes)) return { [field]: previous.decoded.slice() } as ResOut;
      const parts = split(received);
      if (parts === undefined) return deserialize(received);
      // Kept for the next response: a copy, as the transport does not promise to leave its buffer alone.
      const bytes = Buffer.from(received);
      const { tagStart, bodyStart, end } = parts;
      const decoded = new Array<unknown>(bodyStart.length);
      let guess = 0;
      for (let i = 0; i < bodyStart.length; i++) {
        const start = bodyStart[i] as number;
        const stop = end[i] as number;
        const found = findPrevious(bytes, start, stop, guess);
        if (found >= 0) {
          decoded[i] = previous.decoded[found];
          guess = found + 1;
        } else {
          // Decoded as a response of this one element: the same object the whole list gives it.
          const single = deserialize(bytes.subarray(tagStart[i], stop)) as Record<string, unknown[]>;
          decoded[i] = deepFreeze(single[field]?.[0]);
        }
      }
      previous = { bytes, bodyStart, end, decoded };
      return { [field]: decoded.slice() } as ResOut;
    },
  };
}

/** The RuntimeService definition with cached element decoding on ListContainers and ListPodSandbox. */
export function withCachedListDecoding(definition: RuntimeServiceDefinition): RuntimeServiceDefinition {
  return {
    ...definition,
    ListContainers: withCachedElementDecoding(definition.ListContainers, 'ListContainers'),
    ListPodSandbox: withCachedElementDecoding(definition.ListPodSandbox, 'ListPodSandbox'),
  };
}
