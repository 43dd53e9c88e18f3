import { closeSync } from 'node:fs';

/**
 * Tidy-up that a call need not wait for: closing a descriptor it is done with, emptying a file it
 * has already removed by name, handing on a full batch of log lines. Such a job runs two turns of
 * the event loop after it was queued: a unary call's reply goes out as its message in one turn and
 * its trailers in the next (grpc-js), and the client waits for both. A gMSA container's
 * StartContainer made four such system calls before it answered (closing the credential spec it
 * read and the log file it created, emptying and closing the removed spec); now they run while the
 * client reads the reply. Jobs run in the
 * order they were queued; each one handles its own failures.
 *
 * One queue per owner (a runtime's, a logger's): runtimes in one process share none.
 */
export class TidyUp {
  private readonly queued: Array<() => void> = [];
  private scheduled = false;
  private readonly runQueued = (): void => this.now();
  private readonly runNextTurn = (): void => {
    setImmediate(this.runQueued);
  };

  later(job: () => void): void {
    this.queued.push(job);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.runNextTurn);
  }

  /** Runs every queued job now (shutdown, and tests that look at the result). */
  now(): void {
    this.scheduled = false;
    for (let job = this.queued.shift(); job !== undefined; job = this.queued.shift()) job();
  }

  /** Closes a descriptor as tidy-up. */
  closeLater(fd: number): void {
    this.later(() => closeQuietly(fd));
  }
}

/** close(2) releases the descriptor whatever it reports (Linux), so its failure is not news here. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Released all the same.
  }
}
