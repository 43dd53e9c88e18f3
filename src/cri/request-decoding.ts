import { isUtf8 } from 'node:buffer';
import { status, type ServiceDefinition } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { CRI_LOADER_OPTIONS, criProtoRoot } from './proto.js';
import { statusError, type CriStatusError } from './status.js';

/**
 * The server side of the codec: requests are decoded as proto-loader decodes them (protobufjs
 * `decode`, then `toObject` with the loader's options), except that a proto3 `string` field
 * whose bytes are not UTF-8 fails the request, as google.golang.org/protobuf does in containerd's
 * gRPC server. protobufjs alone turns such bytes into U+FFFD and the request goes on.
 *
 * The check runs as the decoder reads each string (Utf8CheckingReader below): no second pass over
 * the message, and bytes, enums, numbers and unknown fields are not looked at, as protobuf-go
 * does not look at them either.
 */

/**
 * protobuf-go v1.36.6, internal/impl/codec_field.go (`errInvalidUTF8`), wrapped by grpc-go
 * v1.72.1 (the versions containerd v2.1 builds with): server.go processUnaryRPC answers a unary
 * request that does not unmarshal with INTERNAL "grpc: error unmarshalling request: %v";
 * rpc_util.go recv answers a streamed one with "grpc: failed to unmarshal the received message:
 * %v". The protobuf-go text has no "proto: " prefix (errInvalidUTF8 is its own error type).
 */
export const INVALID_UTF8_TEXT = 'string field contains invalid UTF-8';
export const UNARY_INVALID_UTF8_MESSAGE = `grpc: error unmarshalling request: ${INVALID_UTF8_TEXT}`;
export const STREAM_INVALID_UTF8_MESSAGE = `grpc: failed to unmarshal the received message: ${INVALID_UTF8_TEXT}`;

/**
 * What the decoder hands grpc-js for a request with invalid UTF-8 in a string field. A throw
 * from the deserializer would make grpc-js answer INTERNAL "Error deserializing request" itself;
 * this marker reaches the handler, which answers with the upstream text (`invalidRequestStatus`).
 */
const INVALID_UTF8_REQUEST: object = Object.freeze({});

/** Node's Buffer with the undocumented `utf8Slice` that `toString('utf8', …)` calls. */
interface NodeBuffer extends Buffer {
  utf8Slice(start: number, end: number): string;
}

/** Thrown by the reader at the first string field that is not UTF-8; caught by the decoder. */
class InvalidUtf8Error extends Error {}

/**
 * A reader whose strings must be UTF-8. Decoding replaces every sequence that is not UTF-8 with
 * U+FFFD (WHATWG), so a string without U+FFFD had valid bytes: one `includes` on the string,
 * which V8 answers at once for a one-byte string. Only a string with U+FFFD in it (sent as
 * EF BF BD, or replaced) has its bytes looked at with Node's `isUtf8` (simdutf).
 * protobufjs's own BufferReader clamps a string that runs past the end of the message; this one
 * throws there, as protobuf-go fails a truncated field.
 */
class Utf8CheckingReader extends protobuf.BufferReader {
  override string(): string {
    const length = this.uint32();
    const start = this.pos;
    const end = start + length;
    if (end > this.len) throw new RangeError(`index out of range: ${start} + ${length} > ${this.len}`);
    this.pos = end;
    // A node Buffer at run time (grpc-js hands one over); protobufjs's typings know no node types.
    // `utf8Slice` is what protobufjs's BufferReader decodes with: toString without its argument checks.
    const buf = this.buf as NodeBuffer;
    const text = buf.utf8Slice(start, end);
    if (text.includes('\ufffd') && !isUtf8(buf.subarray(start, end))) throw new InvalidUtf8Error(INVALID_UTF8_TEXT);
    return text;
  }
}

/** A request deserializer for `type`: the object proto-loader's would give, or the marker. */
function checkingDeserializer(type: protobuf.Type): (bytes: Buffer) => object {
  return (bytes) => {
    let message: protobuf.Message;
    try {
      message = type.decode(new Utf8CheckingReader(bytes));
    } catch (err) {
      if (err instanceof InvalidUtf8Error) return INVALID_UTF8_REQUEST;
      throw err;
    }
    return type.toObject(message, CRI_LOADER_OPTIONS);
  };
}

/**
 * The service definition with every method's request deserializer replaced by one that checks
 * string fields (the definition itself is not changed).
 */
export function withUtf8CheckedRequests<D extends ServiceDefinition>(definition: D): D {
  const root = criProtoRoot();
  const methods: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(definition)) {
    const requestName = (method as { requestType?: { type?: { name?: unknown } } }).requestType?.type?.name;
    if (typeof requestName !== 'string') throw new Error(`${name}: the definition names no request type`);
    const type = root.lookupType(`runtime.v1.${requestName}`);
    methods[name] = { ...method, requestDeserialize: checkingDeserializer(type) };
  }
  return methods as D;
}

/**
 * The status to answer when the request did not decode because of invalid UTF-8 (unary or
 * server-streaming call), undefined for any decoded request.
 */
export function invalidRequestStatus(request: unknown, streaming: boolean): CriStatusError | undefined {
  if (request !== INVALID_UTF8_REQUEST) return undefined;
  return statusError(status.INTERNAL, streaming ? STREAM_INVALID_UTF8_MESSAGE : UNARY_INVALID_UTF8_MESSAGE);
}
