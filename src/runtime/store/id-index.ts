import { RuntimeError } from '../errors.js';

/**
 * Ids kept sorted so that a prefix resolves with one binary search (containerd's truncindex
 * accepts any unique prefix of an id). Insert and delete are a binary search plus an array
 * splice (a memmove), which stays fast at tens of thousands of entries.
 */
export class IdPrefixIndex {
  private readonly ids: string[] = [];

  constructor(private readonly kind: string) {}

  get size(): number {
    return this.ids.length;
  }

  add(id: string): void {
    const at = this.lowerBound(id);
    if (this.ids[at] === id) return;
    this.ids.splice(at, 0, id);
  }

  delete(id: string): void {
    const at = this.lowerBound(id);
    if (this.ids[at] === id) this.ids.splice(at, 1);
  }

  /**
   * The one id starting with `prefix`, or undefined when none does. Throws InvalidArgument when
   * the prefix is empty or matches several ids.
   */
  resolve(prefix: string): string | undefined {
    if (prefix === '') throw new RuntimeError('InvalidArgument', `${this.kind} id must not be empty`);
    const at = this.lowerBound(prefix);
    const first = this.ids[at];
    if (first === undefined || !first.startsWith(prefix)) return undefined;
    if (first === prefix) return first;
    const next = this.ids[at + 1];
    if (next !== undefined && next.startsWith(prefix)) {
      throw new RuntimeError('InvalidArgument', `${this.kind} id prefix "${prefix}" is ambiguous: it matches more than one ${this.kind}`);
    }
    return first;
  }

  private lowerBound(key: string): number {
    let lo = 0;
    let hi = this.ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.ids[mid] as string) < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
