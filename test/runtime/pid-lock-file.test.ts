import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { holderAlive, PidLockFile } from '../../src/runtime/pid-lock-file.js';
import { NodeRuntime } from '../../src/runtime/node-runtime.js';
import { RuntimeError } from '../../src/runtime/errors.js';
import { tempDirPerTest } from '../support/temp-dir.js';

/** The pid of a process that has exited and been reaped. */
function deadPid(): number {
  const done = spawnSync(process.execPath, ['-e', '']);
  expect(done.pid).to.be.a('number');
  return done.pid;
}

describe('pid lock files', () => {
  const dir = tempDirPerTest('pid-lock-');

  it('is taken once: a second taker gets the holder (this process) until it is released', async () => {
    const path = join(dir(), 'x.lock');
    const first = await PidLockFile.acquire(path, { stateDir: '/somewhere' });
    expect(first).to.have.property('lock');
    expect(JSON.parse(readFileSync(path, 'utf8'))).to.include({ pid: process.pid, stateDir: '/somewhere' });
    const second = await PidLockFile.acquire(path);
    expect(second).to.have.property('heldBy').that.includes({ pid: process.pid });
    await (first as { lock: PidLockFile }).lock.release();
    expect(existsSync(path)).to.equal(false);
    const third = await PidLockFile.acquire(path);
    expect(third).to.have.property('lock');
    await (third as { lock: PidLockFile }).lock.release();
    // Nothing staged is left beside it.
    expect(readdirSync(dir())).to.deep.equal([]);
  });

  it('takes over the lock of a process that died', async () => {
    const path = join(dir(), 'x.lock');
    const pid = deadPid();
    writeFileSync(path, `${JSON.stringify({ pid })}\n`);
    expect(holderAlive({ pid })).to.equal(false);
    const outcome = await PidLockFile.acquire(path);
    expect(outcome).to.have.property('lock');
    expect(JSON.parse(readFileSync(path, 'utf8'))).to.include({ pid: process.pid });
    await (outcome as { lock: PidLockFile }).lock.release();
  });

  it('takes over a lock whose pid now belongs to another process (its start time differs)', async function () {
    if (!existsSync('/proc/self/stat')) this.skip(); // start times come from procfs
    const path = join(dir(), 'x.lock');
    writeFileSync(path, `${JSON.stringify({ pid: process.pid, started: '1' })}\n`);
    const outcome = await PidLockFile.acquire(path);
    expect(outcome).to.have.property('lock');
    await (outcome as { lock: PidLockFile }).lock.release();
  });

  it('takes over a file that is not a lock file (a torn write of another program)', async () => {
    const path = join(dir(), 'x.lock');
    writeFileSync(path, 'garbage');
    const outcome = await PidLockFile.acquire(path);
    expect(outcome).to.have.property('lock');
    await (outcome as { lock: PidLockFile }).lock.release();
  });

  it('release leaves a lock that is no longer its own', async () => {
    const path = join(dir(), 'x.lock');
    const outcome = (await PidLockFile.acquire(path)) as { lock: PidLockFile };
    writeFileSync(path, `${JSON.stringify({ pid: 1 })}\n`);
    await outcome.lock.release();
    expect(existsSync(path)).to.equal(true);
  });
});

describe('the state directory lock of NodeRuntime', () => {
  const dir = tempDirPerTest('state-lock-');

  it('refuses a second runtime on the state directory of an open one, naming it, and lets one in after close', async () => {
    const stateDir = join(dir(), 'state');
    const first = await NodeRuntime.open({ stateDir });
    try {
      let caught: unknown;
      try {
        await NodeRuntime.open({ stateDir });
      } catch (err) {
        caught = err;
      }
      expect(caught).to.be.instanceOf(RuntimeError);
      expect((caught as RuntimeError).code).to.equal('FailedPrecondition');
      // Our own text (src/runtime/state-dir-lock.ts).
      expect((caught as RuntimeError).message).to.equal(`state directory ${stateDir} is in use by another cri-winsim runtime (pid ${process.pid}, this process); stop it or choose another state directory`);
    } finally {
      await first.close();
    }
    expect(existsSync(join(stateDir, 'runtime.lock'))).to.equal(false);
    const second = await NodeRuntime.open({ stateDir });
    await second.close();
  });
});
