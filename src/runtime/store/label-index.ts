import { IdMultiMap } from './id-multimap.js';

/**
 * Index from `key=value` label pairs to record ids, so a CRI label_selector (every pair must
 * match exactly) starts from the smallest matching set instead of scanning every record.
 */
export class LabelIndex {
  /** Label key → label value → ids. The value strings are the records' own (no key=value strings). */
  private readonly byKey = new Map<string, IdMultiMap<string>>();

  add(id: string, labels: Record<string, string>): void {
    for (const k in labels) {
      let values = this.byKey.get(k);
      if (values === undefined) {
        values = new IdMultiMap<string>();
        this.byKey.set(k, values);
      }
      values.add(labels[k] as string, id);
    }
  }

  delete(id: string, labels: Record<string, string>): void {
    for (const k in labels) {
      const values = this.byKey.get(k);
      if (values === undefined) continue;
      values.delete(labels[k] as string, id);
      if (values.isEmpty()) this.byKey.delete(k);
    }
  }

  /** Ids carrying one pair of the selector (the rarest one); the caller checks the rest. */
  candidates(selector: Record<string, string>): ReadonlySet<string> | undefined {
    let best: { values: IdMultiMap<string> | undefined; value: string; count: number } | undefined;
    for (const [k, v] of Object.entries(selector)) {
      const values = this.byKey.get(k);
      const count = values?.count(v) ?? 0;
      if (best === undefined || count < best.count) best = { values, value: v, count };
    }
    if (best === undefined) return undefined;
    // A fresh empty set when nobody carries it: a shared one would be module-level state.
    return best.values?.get(best.value) ?? new Set<string>();
  }
}

/** True when every pair of the selector is present with the same value (CRI label_selector). */
export function matchesLabels(labels: Record<string, string>, selector: Record<string, string> | null | undefined): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector)) {
    if (labels[k] !== v) return false;
  }
  return true;
}
