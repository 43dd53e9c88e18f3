/**
 * A bench script whose output is cut short (`node dist/bench/handler-timing.js | head -3`) must
 * still stop what it started and remove its temporary directory. Node reports writes to a pipe
 * whose reader has gone as an 'error' event on process.stdout (EPIPE, then ERR_STREAM_DESTROYED
 * for later writes); unhandled, the first one ends the process at once, before the script's
 * `finally` runs, and left the run's directory (pod logs, runtime state, spare files) in the
 * temporary directory. With this the lines nobody reads are dropped and the run goes on to its
 * end: its results file is still written and its clean-up runs. Any other error on the stream
 * ends the process as before.
 */
export function dropOutputWhenReaderLeaves(stream: NodeJS.WritableStream = process.stdout): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return;
    throw err;
  });
}
