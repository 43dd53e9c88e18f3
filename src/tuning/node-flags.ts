/**
 * The Node flags a cri-winsim process starts with, written here once. V8 reads them only when
 * the process starts (`v8.setFlagsFromString('--single-threaded-gc')` later crashed the runtime:
 * "Check failed: concurrent_marking_handle_"; NODE_OPTIONS refuses it), so every way of starting
 * one passes them on node's command line:
 * - the npm package's command, src/launcher.ts, starts the CLI in a node child with them;
 * - the build writes them into the `#!` line of dist/src/cli.js (scripts/finish-build.mjs), which
 *   the container image's entrypoint runs, as does whoever runs the file from a checkout;
 * - `npm start` runs the launcher; the bench and the tests start the runtime, the floor and the
 *   kubelet with this list.
 *
 * `--single-threaded-gc`: V8 collects on the thread that allocates, with no helper threads that
 * mark and sweep while JavaScript runs; on a small machine shared with what drives the node those
 * helpers took a core from the event loop and its client. `--max-semi-space-size=4`: a smaller
 * young generation, so each young collection (which falls into the call whose allocation fills
 * it) is shorter. What each measured: bench/README.md, "Tuning tricks".
 */
export const NODE_FLAGS: readonly string[] = ['--single-threaded-gc', '--max-semi-space-size=4'];

/**
 * The flags of the bench's load generator (the client of the runtime and the floor): it
 * collects on its own thread too, so its collector never takes a core from the server it times.
 */
export const LOAD_GENERATOR_FLAGS: readonly string[] = ['--single-threaded-gc'];

/** The `#!` line that starts a script in node with NODE_FLAGS (GNU, BSD and macOS env; not BusyBox's). */
export function nodeFlagsShebang(): string {
  return `#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`;
}
