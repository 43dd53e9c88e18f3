import { BoundedCache } from '../bounded-cache.js';

declare const KEPT: unique symbol;
/** A value as a store keeps it (opaque: only its codec reads it). */
export type Kept<T> = { readonly [KEPT]: T };

/**
 * How a store keeps an object it reads back now and then (a container's CRI config). The fields
 * named `O` the store keeps elsewhere (in its record) and gives back on `read`.
 */
export interface KeptCodec<T extends object, O extends keyof T> {
  keep(value: T): Kept<T>;
  read(kept: Kept<T>, own: Pick<T, O>): T;
}

/** Keeps the object itself. */
export function plainCodec<T extends object, O extends keyof T>(): KeptCodec<T, O> {
  return {
    keep: (value) => value as unknown as Kept<T>,
    read: (kept) => kept as unknown as T,
  };
}

interface EncodedValues {
  readonly keys: readonly string[];
  readonly values: string;
}

/**
 * Keeps the object's keys (one frozen list shared by every object with the same keys, so the read
 * object has the original key order) and their values as one JSON array, null for the `own`
 * fields: a few hundred bytes of one string instead of a few kilobytes of objects. For objects of
 * JSON values (no bigints, no undefined inside); fields whose value is undefined are left out.
 */
export class JsonValuesCodec<T extends object, O extends keyof T> implements KeptCodec<T, O> {
  private readonly keyLists = new BoundedCache<string, readonly string[]>(64);
  private readonly own: ReadonlySet<string>;

  constructor(own: readonly O[]) {
    this.own = new Set(own.map(String));
  }

  keep(value: T): Kept<T> {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).filter((k) => record[k] !== undefined);
    const encoded: EncodedValues = {
      keys: this.keyLists.get(keys.join(','), () => Object.freeze(keys)),
      values: JSON.stringify(keys.map((k) => (this.own.has(k) ? null : record[k]))),
    };
    return encoded as unknown as Kept<T>;
  }

  read(kept: Kept<T>, own: Pick<T, O>): T {
    const encoded = kept as unknown as EncodedValues;
    const values = JSON.parse(encoded.values) as unknown[];
    const value: Record<string, unknown> = {};
    encoded.keys.forEach((key, i) => {
      value[key] = values[i];
    });
    for (const key of this.own) value[key] = (own as Record<string, unknown>)[key];
    return value as T;
  }
}
