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
 * forwards SIGTERM and SIGHUP (Ctrl-C's SIGINT reaches the child through the terminal's process
 * group already), and exits as the child did. Started with the flags already (`node <flags>
 * launcher.js`), it runs the CLI in its own process.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from './tuning/node-flags.js';

const cliPath = fileURLToPath(new URL('./cli.js', import.meta.url));

if (NODE_FLAGS.every((flag) => process.execArgv.includes(flag))) {
  await import('./cli.js');
} else {
  const child = spawn(process.execPath, [...process.execArgv, ...NODE_FLAGS, cliPath, ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  const forwarded: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP'];
  const forward = (signal: NodeJS.Signals): void => {
    child.kill(signal);
  };
  for (const signal of forwarded) process.on(signal, forward);
  // The child gets the terminal's SIGINT itself; this process waits for it to finish.
  const ignoreInterrupt = (): void => {};
  process.on('SIGINT', ignoreInterrupt);
  child.once('error', (err) => {
    process.stderr.write(`cri-winsim: cannot start ${process.execPath}: ${err.message}\n`);
    process.exitCode = 1;
  });
  child.once('exit', (code, signal) => {
    for (const s of forwarded) process.off(s, forward);
    process.off('SIGINT', ignoreInterrupt);
    if (signal !== null) {
      // Die of the same signal, so a shell or a supervisor sees what the child saw.
      process.kill(process.pid, signal);
    } else {
      process.exitCode = code ?? 1;
    }
  });
}
