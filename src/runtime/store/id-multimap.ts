/**
 * Keys to sets of record ids. A key held by one id stores the bare id, not a Set: most label
 * pairs (`io.kubernetes.pod.uid=…`, `io.kubernetes.pod.name=…`) and most groups (the containers
 * of one pod) name one record, and a Set per record costs more than the record's own fields.
 */
export class IdMultiMap<K> {
  private readonly map = new Map<K, string | Set<string>>();

  add(key: K, id: string): void {
    const current = this.map.get(key);
    if (current === undefined) this.map.set(key, id);
    else if (typeof current === 'string') {
      if (current !== id) this.map.set(key, new Set([current, id]));
    } else current.add(id);
  }

  delete(key: K, id: string): void {
    const current = this.map.get(key);
    if (current === undefined) return;
    if (typeof current === 'string') {
      if (current === id) this.map.delete(key);
      return;
    }
    current.delete(id);
    if (current.size === 1) this.map.set(key, current.values().next().value as string);
    else if (current.size === 0) this.map.delete(key);
  }

  /** The ids under key (a new one-element set for a single id; do not change it). */
  get(key: K): ReadonlySet<string> | undefined {
    const current = this.map.get(key);
    return typeof current === 'string' ? new Set([current]) : current;
  }

  isEmpty(): boolean {
    return this.map.size === 0;
  }

  /** How many ids the key has. */
  count(key: K): number {
    const current = this.map.get(key);
    return current === undefined ? 0 : typeof current === 'string' ? 1 : current.size;
  }
}
