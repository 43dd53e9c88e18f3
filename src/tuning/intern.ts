import { BoundedCache } from '../bounded-cache.js';

const MAX_LENGTH = 256;

/** How a store keeps the short strings of what it stores (label values, names, commands). */
export interface StringTable {
  /** `value`, or an equal string the table keeps already. */
  intern(value: string): string;
  /**
   * Interns every value of a string map in place (labels, annotations) and returns it; a value
   * equal to `pod`'s under the same key may take that copy.
   */
  values(map: Record<string, string>, pod?: Readonly<Record<string, string>>): Record<string, string>;
}

/** Every string kept as it came. */
export const UNSHARED_STRINGS: StringTable = {
  intern: (value) => value,
  values: (map) => map,
};

/**
 * One copy of the short strings many records repeat: label and annotation values such as the
 * namespace or a restart count, container names, image names, commands. Decoding a request makes
 * a new string for every field; with tens of thousands of containers the copies add up.
 *
 * A value is kept as the shared copy the second time it is seen. Values unique to one pod (its
 * name, its uid) are seen once and only pass through a short list of recent first sightings, so
 * they neither push repeated values out of the table nor stay alive in it: a string held there for
 * thousands of pods outlived the young generation, and every pod's names were promoted.
 *
 * One per runtime, shared by its sandbox and container stores (a container's labels repeat its
 * pod's values).
 */
export class Interner implements StringTable {
  private readonly shared = new BoundedCache<string, string>(4096);
  private readonly seenOnce = new BoundedCache<string, string>(256);

  intern(value: string): string {
    if (value.length > MAX_LENGTH) return value;
    const copy = this.shared.peek(value);
    if (copy !== undefined) return copy;
    const first = this.seenOnce.peek(value);
    if (first === undefined) {
      this.seenOnce.set(value, value);
      return value;
    }
    this.seenOnce.delete(value);
    this.shared.set(first, first);
    return first;
  }

  /**
   * Interns every value of a string map in place (labels, annotations) and returns it. A value
   * equal to `pod`'s under the same key takes that copy instead: a container's labels repeat its
   * sandbox's (the pod's name, namespace and uid), and the pod's own values are seen too rarely for
   * the shared table to keep them.
   */
  values(map: Record<string, string>, pod?: Readonly<Record<string, string>>): Record<string, string> {
    for (const key in map) {
      const value = map[key] as string;
      const podValue = pod !== undefined && Object.hasOwn(pod, key) ? pod[key] : undefined;
      map[key] = podValue === value ? podValue : this.intern(value);
    }
    return map;
  }
}
