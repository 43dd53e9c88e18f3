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
    if (this.abortedWith !== undefined) return;
    this.abortedWith = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const listener of listeners ?? []) listener();
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
