/**
 * A bounded map that forgets its oldest entry first (a Map iterates in insertion order). A hit
 * does not make an entry newer: moving it to the end would take a delete and an insert on every
 * hit, and the holes they leave make V8 rebuild the Map's table every few operations — in the old
 * generation, where a long-lived Map's table lives, so each rebuild was garbage for a full
 * collection. The caches here are filled when an entry is first needed and emptied explicitly
 * (a removed container), so the order they were filled in is close to the order of use.
 */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`cache capacity must be a positive integer, not ${capacity}`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value for key, computing and keeping it when absent. */
  get(key: K, compute: (key: K) => V): V {
    const cached = this.entries.get(key);
    if (cached !== undefined) return cached;
    const value = compute(key);
    this.set(key, value);
    return value;
  }

  /** Keeps value for key: in place when the key is kept already, else as the newest entry. */
  set(key: K, value: V): void {
    const known = this.entries.has(key);
    this.entries.set(key, value);
    if (!known && this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K);
  }

  /** The cached value, if any, without computing one. */
  peek(key: K): V | undefined {
    return this.entries.get(key);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
