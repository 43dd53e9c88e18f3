import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;

/**
 * Random bytes drawn from the CSPRNG 4 KiB at a time, each byte handed out once: a `randomBytes`
 * call per id goes through OpenSSL's generator behind a lock, with a fork check, on the event
 * loop, three times a GMSA pod. One per runtime: its pool is the runtime's own.
 */
export class RandomSource {
  /** Allocated at the first draw: a runtime that makes no id holds none. */
  private pool: Buffer | undefined;
  private used = POOL_BYTES;

  /** `bytes` random bytes (1 to 4096) as lowercase hex, from the pool. */
  hex(bytes: number): string {
    if (!Number.isInteger(bytes) || bytes < 1 || bytes > POOL_BYTES) throw new RangeError(`random byte count must be an integer from 1 to ${POOL_BYTES}, not ${bytes}`);
    this.pool ??= Buffer.allocUnsafeSlow(POOL_BYTES);
    if (this.used + bytes > POOL_BYTES) {
      randomFillSync(this.pool);
      this.used = 0;
    }
    const text = this.pool.toString('hex', this.used, this.used + bytes);
    this.used += bytes;
    return text;
  }

  /** A 64-hex-character id, the shape containerd and Docker use for sandboxes and containers. */
  newId(): string {
    return this.hex(32);
  }
}
