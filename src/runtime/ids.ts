import { randomFillSync } from 'node:crypto';

/**
 * Random bytes are drawn from the CSPRNG 4 KiB at a time and each byte is handed out once. One
 * `randomBytes` call per id cost 20–30 µs here (OpenSSL's generator behind a lock, with a fork
 * check), three times a GMSA pod, on the event loop; a slice of the pool costs well under 1 µs.
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafeSlow(POOL_BYTES);
let used = POOL_BYTES;

/** `bytes` random bytes (1 to 4096) as lowercase hex, from the pool above. */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > POOL_BYTES) throw new RangeError(`random byte count must be an integer from 1 to ${POOL_BYTES}, not ${bytes}`);
  if (used + bytes > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const text = pool.toString('hex', used, used + bytes);
  used += bytes;
  return text;
}

/** A 64-hex-character id, the shape containerd and Docker use for sandboxes and containers. */
export function newId(): string {
  return randomHex(32);
}
