import { open, openSync, unlink, unlinkSync } from 'node:fs';
import { promisify } from 'node:util';
import { TidyUp } from '../tidy-up.js';

// The callback forms run in the thread pool without the FileHandle objects of fs/promises.
const openAsync = promisify(open);
const unlinkAsync = promisify(unlink);

/**
 * How many runtime calls are in flight, so that a call's few file operations (the credential
 * spec, the log file) can run inline, as the synchronous system call on the event loop, when that
 * call is the only one, and in the thread pool otherwise.
 *
 * A create or an unlink takes the disk's time either way. Through the thread pool it also takes a
 * hand-off to a pool thread and back: two thread switches, which on a small machine wait for a
 * core that the client and the event loop are using (creating the credential spec file: p99 0.75
 * ms through the pool, 0.22 ms inline, on the 2-core machine). A lone call has nothing to wait
 * behind it — a crictl user, a test, a kubelet between pod changes. When other calls are in flight
 * they must not wait behind the disk, and the operations go to the pool as before.
 */
export class CallLoad {
  private inFlight = 0;

  /** The runtime's tidy-up queue: work its calls leave for after their replies. */
  constructor(readonly tidyUp: TidyUp = new TidyUp()) {}

  enter(): void {
    this.inFlight++;
  }

  leave(): void {
    this.inFlight--;
  }

  /** Calls running now (for tests and metrics). */
  get calls(): number {
    return this.inFlight;
  }

  /** True when at most one call (the asking one) is in flight: its file operations run inline. */
  get alone(): boolean {
    return this.inFlight <= 1;
  }

  /** open(2): inline when alone, else in the thread pool. Resolves with the descriptor. */
  async open(path: string, flags: string, mode: number): Promise<number> {
    return this.alone ? openSync(path, flags, mode) : openAsync(path, flags, mode);
  }

  /** unlink(2): inline when alone, else in the thread pool. */
  async unlink(path: string): Promise<void> {
    if (this.alone) unlinkSync(path);
    else await unlinkAsync(path);
  }
}
