import { randomBytes } from 'node:crypto';
import { RuntimeError } from '../errors.js';

/** The kubelet streaming server's limits (k8s.io/kubelet pkg/cri/streaming/request_cache.go, v0.34). */
export const TOKEN_TTL_MS = 60_000;
export const MAX_IN_FLIGHT = 1000;
const TOKEN_LENGTH = 8;

export type StreamingKind = 'exec' | 'attach' | 'portforward';

interface Entry<T> {
  kind: StreamingKind;
  request: T;
  expiresAt: number;
}

/**
 * Requests waiting for their client: single-use tokens of 8 base64url characters that expire
 * after a minute; at most 1000 in flight (then ResourceExhausted, as upstream).
 */
export class RequestCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.entries.size;
  }

  insert(kind: StreamingKind, request: T): string {
    this.collect();
    if (this.entries.size >= MAX_IN_FLIGHT) throw new RuntimeError('ResourceExhausted', 'maximum number of in-flight requests exceeded');
    for (let tries = 0; tries < 10; tries++) {
      const token = randomBytes(6).toString('base64url').slice(0, TOKEN_LENGTH);
      if (this.entries.has(token)) continue;
      this.entries.set(token, { kind, request, expiresAt: this.now() + TOKEN_TTL_MS });
      return token;
    }
    throw new RuntimeError('Internal', 'failed to generate unique token');
  }

  /** Takes the request of a token once; undefined when unknown, used, expired or of another kind. */
  consume(kind: StreamingKind, token: string): T | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    this.entries.delete(token);
    if (entry.kind !== kind || this.now() > entry.expiresAt) return undefined;
    return entry.request;
  }

  /** Drops expired entries (Map keeps insertion order: the oldest come first). */
  private collect(): void {
    const now = this.now();
    for (const [token, entry] of this.entries) {
      if (entry.expiresAt >= now) return;
      this.entries.delete(token);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}
