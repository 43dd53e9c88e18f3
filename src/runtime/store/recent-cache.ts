/** A bounded map that forgets the least recently used entry first (a Map iterates in insertion order). */
export class RecentCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`cache capacity must be a positive integer, not ${capacity}`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value for key, computing and keeping it when absent; a hit becomes the most recent. */
  get(key: K, compute: (key: K) => V): V {
    const cached = this.entries.get(key);
    if (cached !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
    }
    const value = compute(key);
    this.set(key, value);
    return value;
  }

  /** Keeps value for key as the most recent entry. */
  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K);
  }

  /** The cached value, if any, without computing one or changing its recency. */
  peek(key: K): V | undefined {
    return this.entries.get(key);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
