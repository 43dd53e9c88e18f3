/**
 * Answers of TokenReviews and SubjectAccessReviews kept for a while, as the kubelet's delegating
 * authenticator and authorizer do (apiserver pkg/authentication/token/cache and
 * pkg/authorization/authorizerfactory, v1.34): each answer has its own lifetime (an allowed
 * review longer than a denied one) and the cache holds a bounded number of them, the oldest
 * dropped first.
 */
export class ReviewCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();

  constructor(private readonly maxEntries: number, private readonly now: () => number = Date.now) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
