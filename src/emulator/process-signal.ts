/**
 * The signal a simulated process's program sees: `aborted` and `reason` (the signal's name,
 * `SIGTERM`) once one arrives, and 'abort' listeners — the part of AbortSignal the commands use.
 *
 * Not an AbortSignal: Node 20 makes each of those by giving a plain EventTarget the AbortSignal
 * prototype and then adding its fields, which costs three new hidden classes per signal, and
 * every process, `whoami` included, needs one. This one is a small object of one shape.
 */
export class ProcessSignal {
  private abortedWith: string | undefined = undefined;
  private listeners: (() => void)[] | undefined = undefined;
  /** Waits of `sleepUntilKilled` (a trapped signal arrived already; only SIGKILL cuts them short). */
  private killWaiters: (() => void)[] | undefined = undefined;

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  /** The signal's name once aborted. */
  get reason(): string | undefined {
    return this.abortedWith;
  }

  /** Runs listener once when the signal arrives (never, when it has arrived already: check `aborted` first). */
  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    if (this.abortedWith !== undefined) return;
    if (this.listeners === undefined) this.listeners = [listener];
    else this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.listeners?.splice(at, 1);
  }

  /** Delivers the signal: its listeners run once, in the order they were added. Later calls do nothing. */
  abort(reason: string): void {
    if (this.abortedWith !== undefined) {
      if (reason === 'SIGKILL') this.endKillWaits();
      return;
    }
    this.abortedWith = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const listener of listeners ?? []) listener();
    if (reason === 'SIGKILL') this.endKillWaits();
  }

  /**
   * Resolves after ms, or as soon as SIGKILL is delivered; never rejects. For work a program does
   * after it handled a signal (serve-hostname waits 60 s for its pod's deletion after SIGTERM).
   */
  sleepUntilKilled(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.abortedWith === 'SIGKILL') {
        resolve();
        return;
      }
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const at = this.killWaiters?.indexOf(done) ?? -1;
        if (at >= 0) this.killWaiters?.splice(at, 1);
        resolve();
      }, Math.max(0, ms));
      if (this.killWaiters === undefined) this.killWaiters = [done];
      else this.killWaiters.push(done);
    });
  }

  private endKillWaits(): void {
    const waiters = this.killWaiters;
    this.killWaiters = undefined;
    for (const waiter of waiters ?? []) waiter();
  }

  /** Resolves after ms, or rejects with an AbortError as soon as the signal arrives. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.abortedWith !== undefined) {
        reject(abortError(this.abortedWith));
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(abortError(this.abortedWith));
      };
      const timer = setTimeout(() => {
        this.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      this.addEventListener('abort', onAbort);
    });
  }
}

/** The error a signalled program's pending work ends with: `terminated by SIGTERM`, an AbortError. */
export function abortError(reason: string | undefined): Error {
  const err = new Error(`terminated by ${String(reason)}`);
  err.name = 'AbortError';
  return err;
}
