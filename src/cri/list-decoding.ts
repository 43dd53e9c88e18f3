import type { MethodDefinition } from '@grpc/proto-loader';
import type { RuntimeServiceDefinition } from '../generated/runtime/v1/RuntimeService.js';
import { listField } from './list-encoding.js';

/**
 * Client side of the big lists: decoding 10,000 containers with protobufjs (`decode`, then
 * `toObject` with int64 as strings and defaults) takes 40–70 ms, most of a ListContainers call
 * once the server encodes from cache. A repeated message field is a run of
 * `tag, length, element bytes`; an element's decoded object depends on its bytes only. So the
 * client keeps, per method, the elements of the last response by their exact bytes and decodes
 * only the elements it has not seen; every response still gets its own fresh objects (a deep
 * copy of the cached decoding), as the default deserializer would give.
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

/** A fresh copy of a decoded message: plain objects, arrays, Buffers (bytes fields) and primitives. */
function copyDecoded<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyDecoded) as T;
  if (Buffer.isBuffer(value)) return Buffer.from(value) as T;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = copyDecoded((value as Record<string, unknown>)[key]);
  return out as T;
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
  // The elements of the last response, keyed by their bytes (latin1: one char per byte). An entry
  // keeps its first key string, so a hit leaves only the new, short-lived one as garbage.
  let previous = new Map<string, { key: string; decoded: unknown }>();

  const split = (bytes: Buffer): { key: string; start: number; end: number }[] | undefined => {
    const parts: { key: string; start: number; end: number }[] = [];
    let pos = 0;
    // Every element takes at least tag.length + 1 bytes, so this ends within bytes.length steps.
    while (pos < bytes.length) {
      for (let i = 0; i < tag.length; i++) if (bytes[pos + i] !== tag[i]) return undefined;
      const length = readVarint(bytes, pos + tag.length);
      if (length === undefined) return undefined;
      const [size, body] = length;
      const end = body + size;
      if (end > bytes.length) return undefined;
      parts.push({ key: bytes.toString('latin1', body, end), start: pos, end });
      pos = end;
    }
    return parts;
  };

  return {
    ...method,
    responseDeserialize(bytes: Buffer): ResOut {
      const parts = split(bytes);
      if (parts === undefined) return deserialize(bytes);
      const current = new Map<string, { key: string; decoded: unknown }>();
      const elements = new Array<unknown>(parts.length);
      for (let i = 0; i < parts.length; i++) {
        const { key, start, end } = parts[i] as { key: string; start: number; end: number };
        let entry = current.get(key) ?? previous.get(key);
        if (entry === undefined) {
          // Decoded as a response of this one element: the same object the whole list gives it.
          entry = { key, decoded: (deserialize(bytes.subarray(start, end)) as Record<string, unknown[]>)[field]?.[0] };
        }
        current.set(entry.key, entry);
        elements[i] = copyDecoded(entry.decoded);
      }
      previous = current;
      return { [field]: elements } as ResOut;
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
