import type { MethodDefinition } from '@grpc/proto-loader';
import type { RuntimeServiceDefinition } from '../generated/runtime/v1/RuntimeService.js';

/**
 * Fast encoding of the big list responses (ListContainers, ListPodSandbox).
 *
 * Encoding thousands of containers with protobufjs (`fromObject`, int64 strings through
 * `Long.fromString`, `encode`) costs several times the runtime's own work for the list
 * (bench/README.md). Both responses have a single
 * field, `repeated <Message> = 1`, and the protobuf encoding of a repeated message field is the
 * concatenation of its elements' encodings (tag, length, bytes). So each element is encoded once
 * on its own, as the response `{field: [element]}` through the method's own serializer, the bytes
 * are cached by the element object, and a list response is the concatenation of cached bytes:
 * byte for byte what the default serializer sends.
 *
 * This relies on the runtime's list views: an element object is never changed after it was
 * returned, and a changed record is returned as a new object (src/runtime/store/record-store.ts,
 * `view`). Handlers opt in with `encodedFromCache`; any other response value goes through the
 * default serializer.
 */

const ELEMENTS = Symbol('cri.cachedListElements');

/** A list response whose elements may be encoded from the cache (see `encodedFromCache`). */
interface CachedListResponse {
  readonly [ELEMENTS]: readonly object[];
}

/**
 * Marks a list response of stable view objects for the cached encoding. The result is still an
 * ordinary response (`{containers: [...]}`), so any other serializer encodes it the usual way.
 */
export function encodedFromCache<F extends string, E extends object>(field: F, elements: E[]): Record<F, E[]> {
  const response: CachedListResponse & Record<string, E[]> = { [field]: elements, [ELEMENTS]: elements };
  return response as Record<F, E[]>;
}

function cachedElements(value: unknown): readonly object[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  return (value as Partial<CachedListResponse>)[ELEMENTS];
}

interface FieldDescriptor {
  name: string;
  number: number;
  label?: string;
  type?: string;
}

/**
 * The one field of a list response. Only a repeated message field encodes as the concatenation
 * of its elements (repeated scalars are packed into one length-delimited run), so anything else
 * is refused.
 */
export function listField(method: MethodDefinition<unknown, unknown>, name: string): { name: string; number: number } {
  const fields = (method.responseType.type as { field?: FieldDescriptor[] }).field ?? [];
  const field = fields[0];
  if (fields.length !== 1 || field === undefined || field.label !== 'LABEL_REPEATED' || field.type !== 'TYPE_MESSAGE') {
    throw new Error(`${name}: the response must have exactly one field, a repeated message, to be encoded or decoded element by element`);
  }
  return { name: field.name, number: field.number };
}

/**
 * The method with a response serializer that concatenates cached per-element encodings for
 * responses marked by `encodedFromCache`. Each call makes its own cache (one per server).
 */
export function withCachedElementEncoding<Req, Res, ReqOut, ResOut>(
  method: MethodDefinition<Req, Res, ReqOut, ResOut>,
  name: string,
  maxKeptBytes = Number.POSITIVE_INFINITY,
): MethodDefinition<Req, Res, ReqOut, ResOut> {
  const field = listField(method as MethodDefinition<unknown, unknown>, name).name;
  const serialize = method.responseSerialize;
  // Keyed by the element object: entries go when the runtime drops the view.
  const encoded = new WeakMap<object, Buffer>();
  const encodeElement = (element: object): Buffer => {
    let bytes = encoded.get(element);
    if (bytes === undefined) {
      bytes = serialize({ [field]: [element] } as Res);
      encoded.set(element, bytes);
    }
    return bytes;
  };
  // The last response built: a list of the same elements (a node relisting an unchanged set) is
  // sent from these bytes as they are. Building it anew costs a fresh buffer of megabytes and a
  // small copy per element (most of it faulting in new pages); comparing the elements is far
  // cheaper, and nothing when the runtime hands out the same array again. grpc-js copies the returned buffer
  // into its frame and never writes to it, so handing it out twice is safe. A response over
  // `maxKeptBytes` (the server's send limit: it fails to send anyway) is not kept.
  let last: { elements: readonly object[]; bytes: Buffer } | undefined;
  return {
    ...method,
    responseSerialize(value: Res): Buffer {
      const elements = cachedElements(value);
      if (elements === undefined) return serialize(value);
      if (last !== undefined && sameElements(last.elements, elements)) return last.bytes;
      const parts = new Array<Buffer>(elements.length);
      let length = 0;
      for (let i = 0; i < elements.length; i++) {
        const bytes = encodeElement(elements[i] as object);
        parts[i] = bytes;
        length += bytes.length;
      }
      const bytes = Buffer.concat(parts, length);
      last = length <= maxKeptBytes ? { elements, bytes } : undefined;
      return bytes;
    },
  };
}

/** Whether two element lists hold the same objects in the same order. */
function sameElements(a: readonly object[], b: readonly object[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The RuntimeService definition with the cached encoding on ListContainers and ListPodSandbox;
 * responses over `maxKeptBytes` are not kept for the next list.
 */
export function withCachedListEncoding(definition: RuntimeServiceDefinition, maxKeptBytes = Number.POSITIVE_INFINITY): RuntimeServiceDefinition {
  return {
    ...definition,
    ListContainers: withCachedElementEncoding(definition.ListContainers, 'ListContainers', maxKeptBytes),
    ListPodSandbox: withCachedElementEncoding(definition.ListPodSandbox, 'ListPodSandbox', maxKeptBytes),
  };
}
