/**
 * The Node flags a cri-winsim process starts with: the `cri-winsim` command's `#!` line
 * (src/cli.ts), `npm start`, the container image's entrypoint, and whatever starts the runtime
 * the way a user does (the bench, the tests). V8 reads them only when the process starts:
 * `v8.setFlagsFromString('--single-threaded-gc')` later crashed the runtime ("Check failed:
 * concurrent_marking_handle_") and NODE_OPTIONS refuses it.
 *
 * `--single-threaded-gc`: V8 collects on the thread that allocates, with no helper threads that
 * mark and sweep while JavaScript runs. A simulated node shares a small machine with what drives
 * it (kubelet, crictl, critest, a test suite); with the helpers, every old-generation collection
 * put a second runnable thread beside the event loop for tens of milliseconds, and on two cores
 * the runtime's own calls and its client's waited for a core (concurrency-1 calls over 1.5 ms:
 * 253–263 of 24,000 with the helpers, 214–239 without; calls stalled inside a handler 10–12
 * against 0–2).
 *
 * `--max-semi-space-size=4`: alone, a young-generation collection took 1.5–2 ms with V8's
 * semi-spaces grown to 16 MiB, and it falls into the call whose allocation fills the space, the
 * longer calls more often (GMSA StartContainer in `handler-timing`; CreateContainer, 3.64 ms
 * against the floor's 1.26, in a bench run that failed at 2.89 ×). With 4 MiB there are four
 * times as many, of about 0.75 ms each: in `handler-timing` (3,000 GMSA pods one at a time, three
 * runs each) calls over 1.5 ms 166–185 against 222–233 with 16 MiB (the floor's 201–217), those
 * overlapping one of the runtime's collections 9–18 against 57.
 */
export const NODE_FLAGS: readonly string[] = ['--single-threaded-gc', '--max-semi-space-size=4'];
