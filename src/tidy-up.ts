import { closeSync } from 'node:fs';

/**
 * Tidy-up that a call need not wait for: closing a descriptor it is done with, emptying a file it
 * has already removed by name, handing on a full batch of log lines. Such a job runs two turns of
 * the event loop after it was queued: a unary call's reply goes out as its message in one turn and
 * its trailers in the next (grpc-js), and the client waits for both. On a loaded 2-core machine
 * each system call costs 5-10 µs, and a gMSA container's StartContainer made four such calls
 * before it answered (closing the credential spec it read and the log file it created, emptying
 * and closing the removed spec); now they run while the client reads the reply. Jobs run in the
 * order they were queued; each one handles its own failures.
 */
const queued: Array<() => void> = [];
let scheduled = false;

export function tidyUpLater(job: () => void): void {
  queued.push(job);
  if (scheduled) return;
  scheduled = true;
  setImmediate(() => setImmediate(tidyUpNow));
}

/** Runs every queued job now (shutdown, and tests that look at the result). */
export function tidyUpNow(): void {
  scheduled = false;
  for (let job = queued.shift(); job !== undefined; job = queued.shift()) job();
}

/** Closes a descriptor as tidy-up. */
export function closeLater(fd: number): void {
  tidyUpLater(() => closeQuietly(fd));
}

/** close(2) releases the descriptor whatever it reports (Linux), so its failure is not news here. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Released all the same.
  }
}
