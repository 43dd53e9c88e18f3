import type { MethodDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { CRI_LOADER_OPTIONS, criProtoRoot } from './proto.js';

/**
 * What a CRI message looks like after a trip over the wire, made without the wire. On the gRPC
 * path proto-loader serializes with `fromObject` then `encode`, and the receiver `decode`s then
 * `toObject`s with CRI_LOADER_OPTIONS (defaults filled in, int64 as strings, enums as numbers).
 * `fromObject` then `toObject` gives the same object without the bytes in between, with two
 * exceptions the CRI messages have, which `settle` below takes care of:
 *
 * - bytes: `fromObject` and `toObject` both keep the Buffer they were given, so the receiver
 *   would share it with the sender; the wire copies it, so does `settle`;
 * - strings that are not well-formed UTF-16 (a lone surrogate): the wire does not carry them
 *   unchanged (protobufjs writes a short one as bytes that are not UTF-8, which the server
 *   refuses, and a long one as U+FFFD). `settle` says so, and the caller sends that message
 *   through the real serializer and deserializer, so such a message fares exactly as on the wire.
 *
 * The CRI has no `float` field (a double survives the wire exactly) and no oneof, so nothing else
 * differs; test/cri/in-process-codec.test.ts round-trips samples through the codec to show it.
 */

/** A field `settle` looks at: strings (map keys included), bytes, and messages that hold either. */
interface FieldShape {
  readonly name: string;
  readonly kind: 'string' | 'bytes' | 'message';
  readonly repeated: boolean;
  /** A map field: its keys are strings in the CRI (checked), `kind` is its values' kind. */
  readonly map: boolean;
  /** The message shape of a `message` field (set once every shape exists: types refer to each other). */
  message: MessageShape | undefined;
}

interface MessageShape {
  readonly fields: readonly FieldShape[];
}

/** `String.prototype.isWellFormed` (ES2024; Node 20 has it, the ES2023 lib does not type it). */
const isWellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

function fieldKind(field: protobuf.Field): FieldShape['kind'] | undefined {
  if (field.resolvedType instanceof protobuf.Type) return 'message';
  if (field.type === 'string') return 'string';
  if (field.type === 'bytes') return 'bytes';
  return undefined;
}

/**
 * The shapes of every message type of runtime.v1, derived once from the parsed proto when this
 * module is loaded, and read-only after (no module state changes at run time).
 */
const SHAPES: ReadonlyMap<protobuf.Type, MessageShape> = buildShapes(criProtoRoot());

function buildShapes(root: protobuf.Root): ReadonlyMap<protobuf.Type, MessageShape> {
  const types: protobuf.Type[] = [];
  const collect = (ns: protobuf.NamespaceBase): void => {
    for (const nested of ns.nestedArray) {
      if (nested instanceof protobuf.Type) types.push(nested);
      if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) collect(nested);
    }
  };
  collect(root);
  const shapes = new Map<protobuf.Type, MessageShape>();
  const pending: [FieldShape, protobuf.Type][] = [];
  for (const type of types) {
    const fields: FieldShape[] = [];
    for (const field of type.fieldsArray) {
      const kind = fieldKind(field);
      const map = field instanceof protobuf.MapField;
      if (map && (field as protobuf.MapField).keyType !== 'string') throw new Error(`${type.fullName}.${field.name}: a map whose keys are not strings (settle checks keys as strings)`);
      if (kind === undefined && !map) continue;
      // A map of numbers still has string keys to check (its values are left alone: kind 'string'
      // looks only at string values).
      const shape: FieldShape = { name: field.name, kind: kind ?? 'string', repeated: field.repeated, map, message: undefined };
      fields.push(shape);
      if (kind === 'message') pending.push([shape, field.resolvedType as protobuf.Type]);
    }
    shapes.set(type, { fields });
  }
  for (const [shape, type] of pending) shape.message = shapes.get(type);
  return shapes;
}

/** A copy of bytes as the receiver decodes them: a Buffer of its own. */
function copyBytes(value: unknown): unknown {
  return value instanceof Uint8Array ? Buffer.from(value) : value;
}

/**
 * Copies the bytes of a message `toObject` just made (the object is the caller's own, so it is
 * changed in place) and says whether every string in it is well-formed.
 */
function settle(shape: MessageShape, object: Record<string, unknown>): boolean {
  let wellFormed = true;
  for (const field of shape.fields) {
    const value = object[field.name];
    if (value === null || value === undefined) continue;
    if (field.map) {
      const entries = value as Record<string, unknown>;
      for (const key of Object.keys(entries)) {
        if (!isWellFormed(key)) wellFormed = false;
        const entry = entries[key];
        if (field.kind === 'string' && typeof entry === 'string' && !isWellFormed(entry)) wellFormed = false;
        else if (field.kind === 'bytes') entries[key] = copyBytes(entry);
        else if (field.kind === 'message' && field.message !== undefined && entry !== null && typeof entry === 'object' && !settle(field.message, entry as Record<string, unknown>)) wellFormed = false;
      }
    } else if (field.repeated) {
      const items = value as unknown[];
      for (let i = 0; i < items.length; i++) {
        const item = items[i];
        if (field.kind === 'string') {
          if (typeof item === 'string' && !isWellFormed(item)) wellFormed = false;
        } else if (field.kind === 'bytes') {
          items[i] = copyBytes(item);
        } else if (field.message !== undefined && item !== null && typeof item === 'object' && !settle(field.message, item as Record<string, unknown>)) {
          wellFormed = false;
        }
      }
    } else if (field.kind === 'string') {
      if (typeof value === 'string' && !isWellFormed(value)) wellFormed = false;
    } else if (field.kind === 'bytes') {
      object[field.name] = copyBytes(value);
    } else if (field.message !== undefined && typeof value === 'object' && !settle(field.message, value as Record<string, unknown>)) {
      wellFormed = false;
    }
  }
  return wellFormed;
}

/** Copies one message type as the wire would. */
export class WireCopy {
  private readonly shape: MessageShape;

  constructor(private readonly type: protobuf.Type) {
    const shape = SHAPES.get(type);
    if (shape === undefined) throw new Error(`${type.fullName} is not a message of runtime.v1`);
    this.shape = shape;
  }

  /**
   * The object the receiver would decode, sharing nothing mutable with `value`; undefined when a
   * string in it would not cross the wire unchanged (go through the bytes then). Throws what
   * `fromObject` throws for a value that does not serialize.
   */
  copy(value: object): Record<string, unknown> | undefined {
    const object = this.type.toObject(this.type.fromObject(value), CRI_LOADER_OPTIONS);
    return settle(this.shape, object) ? object : undefined;
  }
}

/** The wire copies of one RPC: its request, as the server's checking decoder gets it, and its response. */
export interface RpcCopies {
  readonly request: WireCopy;
  readonly response: WireCopy;
  /** The request through its bytes: the serializer the client uses, the decoder the server uses. */
  readonly requestThroughBytes: (value: object) => unknown;
  /** The response through its bytes: the server's serializer, the client's deserializer. */
  readonly responseThroughBytes: (value: object) => unknown;
}

/**
 * The wire copies of every RPC of a service, from `definition` (the proto-loader one) and
 * `checked` (the same with the server's request decoding, request-decoding.ts).
 */
export function rpcCopies(definition: Readonly<Record<string, MethodDefinition<unknown, unknown>>>, checked: Readonly<Record<string, MethodDefinition<unknown, unknown>>>): ReadonlyMap<string, RpcCopies> {
  const root = criProtoRoot();
  const copies = new Map<string, RpcCopies>();
  for (const [rpc, method] of Object.entries(definition)) {
    const requestName = (method.requestType.type as { name?: unknown }).name;
    const responseName = (method.responseType.type as { name?: unknown }).name;
    if (typeof requestName !== 'string' || typeof responseName !== 'string') throw new Error(`${rpc}: the definition names no message types`);
    const serverDecode = checked[rpc]?.requestDeserialize;
    if (serverDecode === undefined) throw new Error(`${rpc}: the checked definition lacks the method`);
    copies.set(rpc, {
      request: new WireCopy(root.lookupType(`runtime.v1.${requestName}`)),
      response: new WireCopy(root.lookupType(`runtime.v1.${responseName}`)),
      requestThroughBytes: (value) => serverDecode(method.requestSerialize(value)),
      responseThroughBytes: (value) => method.responseDeserialize(method.responseSerialize(value)),
    });
  }
  return copies;
}
