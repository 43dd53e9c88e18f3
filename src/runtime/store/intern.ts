/**
 * One copy of the short strings many records repeat: label and annotation values such as the
 * namespace or a restart count, container names, image names, commands. Decoding a request makes
 * a new string for every field; with tens of thousands of containers the copies add up.
 *
 * The table is bounded and forgets the least recently used string first, so values that are
 * unique per pod (names, uids) pass through it without crowding out the repeated ones.
 */
const MAX_ENTRIES = 4096;
const MAX_LENGTH = 256;
const table = new Map<string, string>();

export function intern(value: string): string {
  if (value.length > MAX_LENGTH) return value;
  const shared = table.get(value);
  if (shared !== undefined) {
    // Most recently used last: re-inserting is O(1) and keeps it from being forgotten.
    table.delete(value);
    table.set(value, shared);
    return shared;
  }
  table.set(value, value);
  if (table.size > MAX_ENTRIES) table.delete(table.keys().next().value as string);
  return value;
}

/** Interns every value of a string map in place (labels, annotations) and returns it. */
export function internValues(map: Record<string, string>): Record<string, string> {
  for (const key in map) map[key] = intern(map[key] as string);
  return map;
}
