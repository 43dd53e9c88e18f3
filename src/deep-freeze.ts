/**
 * Freezes a value and everything in it: plain objects, arrays, primitives. Bytes (Buffers and
 * other typed arrays) cannot be frozen and are left as they are.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return value;
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return Object.freeze(value);
}
