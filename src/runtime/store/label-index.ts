/**
 * Index from `key=value` label pairs to record ids, so a CRI label_selector (every pair must
 * match exactly) starts from the smallest matching set instead of scanning every record.
 */
export class LabelIndex {
  private readonly byPair = new Map<string, Set<string>>();

  add(id: string, labels: Record<string, string>): void {
    for (const [k, v] of Object.entries(labels)) {
      const key = pairKey(k, v);
      let set = this.byPair.get(key);
      if (set === undefined) {
        set = new Set();
        this.byPair.set(key, set);
      }
      set.add(id);
    }
  }

  delete(id: string, labels: Record<string, string>): void {
    for (const [k, v] of Object.entries(labels)) {
      const key = pairKey(k, v);
      const set = this.byPair.get(key);
      if (set === undefined) continue;
      set.delete(id);
      if (set.size === 0) this.byPair.delete(key);
    }
  }

  /** Ids carrying one pair of the selector (the rarest one); the caller checks the rest. */
  candidates(selector: Record<string, string>): ReadonlySet<string> | undefined {
    let best: ReadonlySet<string> | undefined;
    for (const [k, v] of Object.entries(selector)) {
      const set = this.byPair.get(pairKey(k, v)) ?? EMPTY;
      if (best === undefined || set.size < best.size) best = set;
    }
    return best;
  }
}

const EMPTY: ReadonlySet<string> = new Set();

const pairKey = (k: string, v: string): string => `${k.length}:${k}=${v}`;

/** True when every pair of the selector is present with the same value (CRI label_selector). */
export function matchesLabels(labels: Record<string, string>, selector: Record<string, string> | null | undefined): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector)) {
    if (labels[k] !== v) return false;
  }
  return true;
}
