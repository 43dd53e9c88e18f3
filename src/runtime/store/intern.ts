import { RecentCache } from './recent-cache.js';

/**
 * One copy of the short strings many records repeat: label and annotation values such as the
 * namespace or a restart count, container names, image names, commands. Decoding a request makes
 * a new string for every field; with tens of thousands of containers the copies add up.
 *
 * The table is bounded and forgets the least recently used string first, so values that are
 * unique per pod (names, uids) pass through it without crowding out the repeated ones.
 */
const MAX_LENGTH = 256;
const table = new RecentCache<string, string>(4096);
const itself = (value: string): string => value;

export function intern(value: string): string {
  return value.length > MAX_LENGTH ? value : table.get(value, itself);
}

/** Interns every value of a string map in place (labels, annotations) and returns it. */
export function internValues(map: Record<string, string>): Record<string, string> {
  for (const key in map) map[key] = intern(map[key] as string);
  return map;
}
