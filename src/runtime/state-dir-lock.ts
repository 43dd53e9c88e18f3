import { join } from 'node:path';
import { RuntimeError } from './errors.js';
import { liveHolder, PidLockFile, type LockHolder } from './pid-lock-file.js';

/**
 * The lock file a runtime holds in its state directory for as long as it uses it: two runtimes
 * writing one metadata database and sweeping each other's files is what containerd prevents by
 * locking its metadata database (bolt's file lock; a second containerd on the same root waits
 * and fails with a timeout). Ours is a pid lock file (pid-lock-file.ts), so a crashed runtime's
 * lock is taken over by the next one.
 */
export const STATE_LOCK_FILE = 'runtime.lock';

/** Our own text: no upstream runtime names the holder this way. */
function inUse(stateDir: string, holder: LockHolder): RuntimeError {
  const self = holder.pid === process.pid ? ', this process' : '';
  return new RuntimeError(
    'FailedPrecondition',
    `state directory ${stateDir} is in use by another cri-winsim runtime (pid ${holder.pid}${self}); stop it or choose another state directory`,
  );
}

/** Takes the state directory's lock (the directory must exist); fails naming the live holder's pid. */
export async function lockStateDir(stateDir: string): Promise<PidLockFile> {
  const outcome = await PidLockFile.acquire(join(stateDir, STATE_LOCK_FILE), { stateDir });
  if ('heldBy' in outcome) throw inUse(stateDir, outcome.heldBy);
  return outcome.lock;
}

/**
 * Fails when a live runtime holds the state directory: for commands that check before they open
 * anything else (the socket, the pod range), so the error names the holder. The lock itself is
 * taken when the runtime opens.
 */
export async function assertStateDirFree(stateDir: string): Promise<void> {
  const holder = await liveHolder(join(stateDir, STATE_LOCK_FILE));
  if (holder !== undefined) throw inUse(stateDir, holder);
}
