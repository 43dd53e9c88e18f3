/**
 * `make(key)` once per key object, kept as long as the key lives (a WeakMap): one handler per
 * runtime shared by its containers, the files of a pod shared by its containers.
 */
export function memoByObject<K extends object, V>(make: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, V>();
  return (key) => {
    let value = made.get(key);
    if (value === undefined) {
      value = make(key);
      made.set(key, value);
    }
    return value;
  };
}
