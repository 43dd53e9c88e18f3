import { BoundedCache } from './bounded-cache.js';

/**
 * One copy of the short strings many records repeat: label and annotation values such as the
 * namespace or a restart count, container names, image names, commands. Decoding a request makes
 * a new string for every field; with tens of thousands of containers the copies add up.
 *
 * A value is kept as the shared copy the second time it is seen. Values unique to one pod (its
 * name, its uid) are seen once and only pass through a short list of recent first sightings, so
 * they neither push repeated values out of the table nor stay alive in it: a string held there for
 * thousands of pods outlived the young generation, and every pod's names were promoted.
 */
const MAX_LENGTH = 256;
const shared = new BoundedCache<string, string>(4096);
const seenOnce = new BoundedCache<string, string>(256);

export function intern(value: string): string {
  if (value.length > MAX_LENGTH) return value;
  const copy = shared.peek(value);
  if (copy !== undefined) return copy;
  const first = seenOnce.peek(value);
  if (first === undefined) {
    seenOnce.set(value, value);
    return value;
  }
  seenOnce.delete(value);
  shared.set(first, first);
  return first;
}

/**
 * Interns every value of a string map in place (labels, annotations) and returns it. A value
 * equal to `pod`'s under the same key takes that copy instead: a container's labels repeat its
 * sandbox's (the pod's name, namespace and uid), and the pod's own values are seen too rarely for
 * the shared table to keep them.
 */
export function internValues(map: Record<string, string>, pod?: Readonly<Record<string, string>>): Record<string, string> {
  for (const key in map) {
    const value = map[key] as string;
    const podValue = pod !== undefined && Object.hasOwn(pod, key) ? pod[key] : undefined;
    map[key] = podValue === value ? podValue : intern(value);
  }
  return map;
}
