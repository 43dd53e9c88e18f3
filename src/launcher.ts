#!/usr/bin/env node
/**
 * The `cri-winsim` command as npm installs it (package.json `bin`). It starts dist/src/cli.js in
 * node with the flags of src/tuning/node-flags.ts, which V8 reads only at start-up.
 *
 * Why not cli.js itself with `#!/usr/bin/env -S node <flags>`: `-S` (split the rest of the line
 * into arguments) is GNU coreutils', FreeBSD's and macOS's, but BusyBox's env (Alpine) knows
 * only -i and -u, and the kernel hands the whole rest of the line to env as one argument, so
 * there the command failed before node started. Plain `#!/usr/bin/env node` works with every env;
 * this file then runs the CLI in a node child started with the flags, passes it the terminal,
 * and exits as the child did. Started with the flags already (`node <flags> launcher.js`), it
 * runs the CLI in its own process. (`v8.setFlagsFromString` cannot stand in for the child:
 * `--single-threaded-gc` set that way crashes node 20 at the next major collection.)
 *
 * The two processes are one command to whoever runs it:
 * - Every signal is the launcher's to receive and forward. The child runs in a session of its own,
 *   so the terminal's Ctrl-C (SIGINT to the foreground process group) reaches it once, through
 *   the launcher, as does a supervisor's `kill -INT` of the launcher's pid.
 * - The child never outlives the launcher: a SIGKILL of the launcher closes the IPC channel opened
 *   here, and the child stops at once as on SIGTERM (src/launcher-link.ts).
 * - The exit status is the child's: its code, or death by the same signal.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { LAUNCHER_CHILD_ENV } from './launcher-link.js';
import { NODE_FLAGS } from './tuning/node-flags.js';

const cliPath = fileURLToPath(new URL('./cli.js', import.meta.url));

if (NODE_FLAGS.every((flag) => process.execArgv.includes(flag))) {
  await import('./cli.js');
} else {
  const child = spawn(process.execPath, [...process.execArgv, ...NODE_FLAGS, cliPath, ...process.argv.slice(2)], {
    // The IPC channel is how the child learns that this process died (it carries no messages).
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    // A session of its own: signals meant for the command reach it through this process only.
    detached: true,
    env: { ...process.env, [LAUNCHER_CHILD_ENV]: '1' },
  });
  // SIGWINCH: the child is not in the terminal's foreground process group; it learns of a
  // resize through this process.
  const forwarded: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGWINCH'];
  const forward = (signal: NodeJS.Signals): void => {
    child.kill(signal);
  };
  for (const signal of forwarded) process.on(signal, forward);
  child.once('error', (err) => {
    process.stderr.write(`cri-winsim: cannot start ${process.execPath}: ${err.message}\n`);
    process.exitCode = 1;
  });
  child.once('exit', (code, signal) => {
    for (const s of forwarded) process.off(s, forward);
    if (signal !== null) {
      // Die of the same signal, so a shell or a supervisor sees what the child saw.
      process.kill(process.pid, signal);
    } else {
      process.exitCode = code ?? 1;
    }
  });
}
