/**
 * The child side of src/launcher.ts: the CLI, started by the launcher with the V8 flags, ends when
 * the launcher does, however it ends. A supervisor's SIGKILL reaches the launcher only (the child
 * runs in a session of its own), so the child watches the IPC channel the launcher opened to it:
 * the kernel closes the launcher's end when the launcher dies, and the child gets 'disconnect' at
 * once. It then stops as on SIGTERM (the runtime shuts down gracefully, removes its socket and
 * releases its state directory), and exits anyway after a bound.
 */

/** Set by the launcher in its child's environment (and removed there, so it reaches no grandchild). */
export const LAUNCHER_CHILD_ENV = 'CRI_WINSIM_LAUNCHER_CHILD';

/** How long the child may take to stop after its launcher died before it exits regardless. */
export const ORPHAN_EXIT_MS = 900;

/** In the launcher's child: end this process when the launcher is gone. Elsewhere: nothing. */
export function followLauncher(): void {
  if (process.env[LAUNCHER_CHILD_ENV] !== '1') return;
  delete process.env[LAUNCHER_CHILD_ENV];
  const channel = process.channel;
  if (channel === undefined) return;
  // The channel carries no messages; it must not keep a finished command (--version) alive.
  channel.unref();
  const stop = (): void => {
    // The same path as a supervisor's SIGTERM: the commands' own handlers, or node's default.
    process.kill(process.pid, 'SIGTERM');
    setTimeout(() => {
      process.stderr.write(`cri-winsim: the launcher is gone and the command did not stop within ${ORPHAN_EXIT_MS} ms; exiting\n`);
      process.exit(1);
    }, ORPHAN_EXIT_MS).unref();
  };
  // Loading the modules takes turns of the event loop: the launcher may have died already.
  if (!process.connected) stop();
  else process.once('disconnect', stop);
}
