// For suites whose processes use the program's own default addresses (node mode has no flag to
// move them; the others test the command lines users run): `cri-winsim node` gives one node the pod range 127.10.0.0/16 and several nodes
// 127.11.N.0/24 and node IPs 127.0.1.N; `cri-winsim demo`, and a runtime started without
// --pod-cidr (as the compose file starts it), run their pods in 127.10.0.0/16. Their
// pods serve port 80 on those addresses, so two such suites in two parallel workers would collide
// (the second's web server fails with "address already in use"). Such a suite holds the lock
// named here for its whole run: in a parallel run the suites that hold it run one after another
// while the other workers go on with the rest; in a serial run it does nothing.
//
// The lock is a directory (mkdir is atomic) in TMPDIR, named after the mocha process the workers
// share, holding the pid of the worker that has it; a holder that died leaves it to the next.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workerSlot } from './worker-slot.js';

export type SharedAddresses = 'default-addresses';

/** How long a suite waits for the lock (the other suites that hold it run meanwhile). */
const WAIT_MS = 30 * 60_000;
const POLL_MS = 250;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function acquire(path: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      await mkdir(path);
      await writeFile(join(path, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(await readFile(join(path, 'pid'), 'utf8').catch(() => ''));
    // A holder that died: its lock is free. (No pid yet: it is being written; wait.)
    if (holder > 0 && !alive(holder)) await rm(path, { recursive: true, force: true });
    if (Date.now() > deadline) throw new Error(`waited ${WAIT_MS / 60_000} min for ${path} (held by pid ${holder || 'unknown'})`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function lockPath(name: SharedAddresses): string {
  return join(tmpdir(), `cri-winsim-lock-${process.ppid}-${name}`);
}

/**
 * Call first in a top-level describe (before its own hooks): its before() waits for the lock,
 * and the release is added after the suite's own after() hooks, so its processes are stopped
 * before the next suite that holds the lock starts.
 */
export function oneWorkerAtATime(name: SharedAddresses): void {
  before(async function () {
    if (workerSlot() === undefined) return;
    this.timeout(WAIT_MS + 60_000);
    const path = lockPath(name);
    await acquire(path);
    // Hooks added now run after those the describe declared (mocha runs after() hooks in order).
    this.test!.parent!.afterAll(`release the ${name} lock`, async () => {
      await rm(path, { recursive: true, force: true });
    });
  });
}

/**
 * For one test of a suite that otherwise needs no lock: runs `work` holding it. The test's
 * timeout is lengthened by the longest wait.
 */
export async function holdingLock<T>(ctx: Mocha.Context, name: SharedAddresses, work: () => Promise<T>): Promise<T> {
  if (workerSlot() === undefined) return work();
  ctx.timeout(ctx.timeout() + WAIT_MS);
  const path = lockPath(name);
  await acquire(path);
  try {
    return await work();
  } finally {
    await rm(path, { recursive: true, force: true });
  }
}
