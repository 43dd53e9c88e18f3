import { randomBytes } from 'node:crypto';

/** A 64-hex-character id, the shape containerd and Docker use for sandboxes and containers. */
export function newId(): string {
  return randomBytes(32).toString('hex');
}
