import { IdMultiMap } from './id-multimap.js';

/**
 * Index from `key=value` label pairs to record ids, so a CRI label_selector (every pair must
 * match exactly) starts from the smallest matching set instead of scanning every record.
 */
export class LabelIndex {
  private readonly byPair = new IdMultiMap<string>();

  add(id: string, labels: Record<string, string>): void {
    for (const k in labels) this.byPair.add(pairKey(k, labels[k] as string), id);
  }

  delete(id: string, labels: Record<string, string>): void {
    for (const k in labels) this.byPair.delete(pairKey(k, labels[k] as string), id);
  }

  /** Ids carrying one pair of the selector (the rarest one); the caller checks the rest. */
  candidates(selector: Record<string, string>): ReadonlySet<string> | undefined {
    let bestKey: string | undefined;
    let bestCount = Infinity;
    for (const [k, v] of Object.entries(selector)) {
      const key = pairKey(k, v);
      const count = this.byPair.count(key);
      if (count < bestCount) {
        bestKey = key;
        bestCount = count;
      }
    }
    if (bestKey === undefined) return undefined;
    return this.byPair.get(bestKey) ?? EMPTY;
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
