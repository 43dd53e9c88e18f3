/**
 * Per-key exponential back-off as client-go's flowcontrol.Backoff keeps it
 * (k8s.io/client-go/util/flowcontrol/backoff.go, v0.34): `next` starts a key at the initial
 * duration and doubles it on each later call up to the cap; a key quiet for more than twice the
 * cap starts over (hasExpired). The clock is the caller's: every method takes the time, and the
 * class arms no timer of its own.
 *
 * The kubelet builds its container back-off with the initial backOffPeriod 10 s and the cap
 * MaxContainerBackOff 300 s (pkg/kubelet/kubelet.go and the kubelet config, v1.34): the defaults.
 */
import type { BackoffReason, RestartBackoff } from './pod-actions.js';

export const backOffPeriodMs = 10_000;
export const maxContainerBackOffMs = 300_000;

interface Entry {
  delayMs: number;
  lastUpdate: number;
}

export class Backoff {
  private readonly entries = new Map<string, Entry>();

  constructor(
    readonly initialMs = backOffPeriodMs,
    readonly maxMs = maxContainerBackOffMs,
  ) {}

  /** Get: the key's current delay, 0 for a key without an entry. */
  get(key: string): number {
    return this.entries.get(key)?.delayMs ?? 0;
  }

  /** Next: the initial delay for a new or expired key, else twice the last, capped. */
  next(key: string, now: number): void {
    const entry = this.entries.get(key);
    const delayMs = entry === undefined || this.expired(entry, now) ? this.initialMs : Math.min(entry.delayMs * 2, this.maxMs);
    this.entries.set(key, { delayMs, lastUpdate: now });
  }

  /** IsInBackOffSinceUpdate: less than the key's delay has passed since its last `next`. */
  isInBackOffSinceUpdate(key: string, now: number): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined || this.expired(entry, now)) return false;
    return now - entry.lastUpdate < entry.delayMs;
  }

  /** When the key's back-off ends, undefined when it holds nothing back at `now`. */
  endsAt(key: string, now: number): number | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && this.isInBackOffSinceUpdate(key, now) ? entry.lastUpdate + entry.delayMs : undefined;
  }

  /** Reset (DeleteEntry): the key starts over at its next failure. */
  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Every key for which `match` holds, e.g. those of one pod. */
  keys(match: (key: string) => boolean = () => true): string[] {
    return [...this.entries.keys()].filter(match);
  }

  /** GC: drops the entries not updated for more than twice the cap. */
  gc(now: number): void {
    for (const [key, entry] of this.entries) if (this.expired(entry, now)) this.entries.delete(key);
  }

  /** hasExpired: quiet for more than twice the cap, "consider stable". */
  private expired(entry: Entry, now: number): boolean {
    return now - entry.lastUpdate > this.maxMs * 2;
  }
}

/** A failed pull backs off as ImagePullBackOff (the image manager's back-off). */
const pullFailures: ReadonlySet<string> = new Set(['ErrImagePull', 'ErrImageNeverPull', 'ImagePullBackOff']);

/**
 * The kubelet's restart back-off of containers and sandboxes, keyed as pod-actions.ts keys them
 * (`<pod UID>/<container>`, `<pod UID>` for the sandbox), with what set each key: the back-off's
 * reason and the waiting reason of the failed start, if one did.
 */
export class ContainerBackoff implements RestartBackoff {
  private readonly backoff: Backoff;
  private readonly causes = new Map<string, { reason: BackoffReason; failure?: string | undefined }>();

  constructor(initialMs?: number, maxMs?: number) {
    this.backoff = new Backoff(initialMs, maxMs);
  }

  heldBack(key: string, now: number): { delayMs: number; reason: BackoffReason } | undefined {
    if (!this.backoff.isInBackOffSinceUpdate(key, now)) return undefined;
    return { delayMs: this.backoff.get(key), reason: this.causes.get(key)?.reason ?? 'CrashLoopBackOff' };
  }

  /** What set the key's back-off, and whether it holds at `now`. */
  causeOf(key: string, now: number): { reason: BackoffReason; failure?: string | undefined; holding: boolean } | undefined {
    const cause = this.causes.get(key);
    return cause === undefined ? undefined : { ...cause, holding: this.backoff.isInBackOffSinceUpdate(key, now) };
  }

  /**
   * A failure: the next attempt waits (doBackOff's backOff.Next). `advance` false: the pod
   * worker's fixed retry of a failed sync (pod_workers.go completeWork, backOffPeriod), the
   * initial delay again; a failed pull always advances.
   */
  noteFailure(key: string, reason: string | undefined, now: number, advance = true): void {
    const pull = pullFailures.has(reason ?? '');
    if (!advance && !pull) this.backoff.reset(key);
    this.backoff.next(key, now);
    this.causes.set(key, { reason: pull ? 'ImagePullBackOff' : 'CrashLoopBackOff', failure: reason });
  }

  /** Milliseconds until the earliest back-off (of the pod with `uid`, or of any) ends; undefined when none holds. */
  nextDelay(now: number, uid?: string): number | undefined {
    const ends = this.backoff.keys((k) => uid === undefined || ofPod(k, uid)).map((k) => this.backoff.endsAt(k, now)).filter((t) => t !== undefined);
    return ends.length === 0 ? undefined : Math.min(...ends) - now;
  }

  /** Drops every key of a pod. */
  forget(uid: string): void {
    for (const key of this.backoff.keys((k) => ofPod(k, uid))) {
      this.backoff.reset(key);
      this.causes.delete(key);
    }
  }

  gc(now: number): void {
    this.backoff.gc(now);
    for (const key of this.causes.keys()) if (this.backoff.get(key) === 0) this.causes.delete(key);
  }
}

const ofPod = (key: string, uid: string): boolean => key === uid || key.startsWith(`${uid}/`);
