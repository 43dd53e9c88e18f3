/**
 * The V8 flags the load generator runs with, and running a bench script again with them.
 *
 * The load generator (the bench's client) allocates much and keeps much of it past two young
 * collections — grpc-js calls and HTTP/2 streams, about 70 KB per pod — so its old generation
 * fills every few seconds, and V8 marks it concurrently on helper threads. On a 2-core machine
 * those threads took the cores from the server being timed: `perf sched` of a concurrency-1 run
 * showed the runtime's main thread runnable but waiting up to 7 ms while the client's GC helpers
 * held both cores. The floor, which answers in a fraction of the time, was hit less. With
 * `--single-threaded-gc` the client collects on its own main thread, between and during its own
 * calls (a pause there delays the call in flight, whichever server it is), and never takes a core
 * from the server. The servers keep Node's defaults: the floor is forked without these flags and
 * the runtime is spawned as users start it.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { LOAD_GENERATOR_FLAGS } from '../src/tuning/node-flags.js';

/** The load generator's flags (src/tuning/node-flags.ts, where every node flag list is written). */
export const LOAD_GENERATOR_NODE_ARGS: readonly string[] = LOAD_GENERATOR_FLAGS;

/** Whether a process with these execArgv already has the load generator's flags. */
export function hasLoadGeneratorFlags(execArgv: readonly string[] = process.execArgv): boolean {
  return LOAD_GENERATOR_NODE_ARGS.every((flag) => execArgv.includes(flag));
}

/**
 * Whether this process is the load generator, to go on with its run. When it lacks the flags it
 * runs this script again with them (rerunAsLoadGenerator), leaves that run's exit code in
 * process.exitCode and resolves false: the caller then returns.
 */
export async function asLoadGenerator(): Promise<boolean> {
  if (hasLoadGeneratorFlags()) return true;
  process.exitCode = await rerunAsLoadGenerator();
  return false;
}

/**
 * Runs this script again in a child with the load generator's flags: the same node, arguments
 * and standard streams. Resolves to the exit code to leave with (128 + the signal's number when
 * the child was killed). A terminal's Ctrl-C reaches the child itself (same process group); this
 * process waits for it instead of dying first. SIGTERM and SIGHUP are passed on.
 */
function rerunAsLoadGenerator(): Promise<number> {
  const child = spawn(process.execPath, [...LOAD_GENERATOR_NODE_ARGS, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  const passOn = (signal: NodeJS.Signals): void => {
    child.kill(signal);
  };
  const waitForChild = (): void => {};
  process.on('SIGTERM', passOn);
  process.on('SIGHUP', passOn);
  process.on('SIGINT', waitForChild);
  return new Promise<number>((resolve, reject) => {
    const done = (): void => {
      process.off('SIGTERM', passOn);
      process.off('SIGHUP', passOn);
      process.off('SIGINT', waitForChild);
    };
    child.once('error', (err) => {
      done();
      reject(err);
    });
    child.once('exit', (code, signal) => {
      done();
      resolve(code ?? (signal !== null ? 128 + constants.signals[signal] : 1));
    });
  });
}
