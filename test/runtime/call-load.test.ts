import { expect } from 'chai';
import { closeSync, existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CallLoad } from '../../src/runtime/call-load.js';
import { systemClock } from '../../src/runtime/clock.js';
import { CriLogWriter, LogFileHandles } from '../../src/runtime/logging/cri-log-writer.js';
import { CredentialSpecHandoff } from '../../src/runtime/windows/credential-spec-handoff.js';
import { afterTidyUp } from '../support/tidy-up.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox } from './helpers.js';

/** A load with `calls` calls in flight. */
function loadOf(calls: number): CallLoad {
  const load = new CallLoad();
  for (let i = 0; i < calls; i++) load.enter();
  return load;
}

describe('CallLoad: file operations of a lone call run inline', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-load-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('counts the calls in flight; a call is alone while no other is', () => {
    const load = new CallLoad();
    expect(load.alone).to.equal(true);
    load.enter();
    expect(load.alone).to.equal(true);
    load.enter();
    expect([load.calls, load.alone]).to.deep.equal([2, false]);
    load.leave();
    expect([load.calls, load.alone]).to.deep.equal([1, true]);
  });

  it('opens and unlinks inline when alone: the file is there (and gone) before the promise is awaited', async () => {
    const load = loadOf(1);
    const path = join(dir, 'spec.json');
    const opened = load.open(path, 'wx', 0o600);
    expect(existsSync(path)).to.equal(true);
    closeSync(await opened);
    const removed = load.unlink(path);
    expect(existsSync(path)).to.equal(false);
    await removed;
  });

  it('opens and unlinks through the thread pool when other calls are in flight, with the same results', async () => {
    const load = loadOf(3);
    const path = join(dir, 'spec.json');
    closeSync(await load.open(path, 'wx', 0o600));
    expect((await stat(path)).mode & 0o777).to.equal(0o600);
    await load.unlink(path);
    expect(existsSync(path)).to.equal(false);
    // The system call's error comes through either way.
    expect(((await load.unlink(path).catch((e: unknown) => e)) as NodeJS.ErrnoException).code).to.equal('ENOENT');
    expect(((await loadOf(1).unlink(path).catch((e: unknown) => e)) as NodeJS.ErrnoException).code).to.equal('ENOENT');
  });

  it('creates a missing log file and its directory inline, and leaves an existing file as it is (the caller closes the descriptor)', async () => {
    const files = new LogFileHandles(4);
    const path = join(dir, 'pod', 'app', '0.log');
    closeSync(files.createInline(path));
    expect((await stat(path)).mode & 0o777).to.equal(0o640);
    await writeFile(path, 'kept\n');
    closeSync(files.createInline(path));
    expect(await readFile(path, 'utf8')).to.equal('kept\n');
  });

  it('a log writer of a lone call creates its file at once and writes small batches at once, keeping no descriptor', async () => {
    const files = new LogFileHandles(4);
    const path = join(dir, 'app', '0.log');
    const writer = await CriLogWriter.open(path, systemClock, undefined, files, loadOf(1));
    expect(existsSync(path)).to.equal(true);
    writer.settleStart();
    expect(files.isOpen(writer)).to.equal(false);
    writer.write('stdout', 'hello\n');
    await writer.flush();
    expect(files.isOpen(writer)).to.equal(false);
    expect(await readFile(path, 'utf8')).to.match(/^\S+ stdout F hello\n$/);
    // A large batch goes through the thread pool, which keeps the file open for the next one.
    writer.write('stdout', `${'x'.repeat(20_000)}\n`);
    await writer.flush();
    expect(files.isOpen(writer)).to.equal(true);
    // The next small one is written at once through that open file, after the large one.
    writer.write('stderr', 'after\n');
    await writer.flush();
    await writer.close();
    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines[1]).to.match(/^\S+ stdout P x{16384}$/);
    expect(lines[2]).to.match(/^\S+ stdout F x{3616}$/);
    expect(lines[3]).to.match(/^\S+ stderr F after$/);
    expect(lines).to.have.length(5);
  });

  it('a lone StartContainer returns with what the container printed at once in its log file, and its descriptor is closed right after', async () => {
    const fixture = await openRuntime();
    const openFiles = (): number => readdirSync(existsSync('/proc/self/fd') ? '/proc/self/fd' : '/dev/fd').length;
    try {
      const { runtime } = fixture;
      await pull(runtime, BUSYBOX);
      const sandbox = await runSandbox(runtime, { log_directory: join(dir, 'pod') });
      // A service that is not w3svc: its start lines are printed at once (w3svc's wait for port 80).
      const started = await createContainer(runtime, sandbox, { command: ['ServiceMonitor.exe', 'w3logsvc'], log_path: 'app/0.log' });
      const failing = await createContainer(runtime, sandbox, { command: ['no-such-command'], log_path: 'broken/0.log' });
      const before = openFiles();
      await runtime.startContainer({ container_id: started });
      // Read before the event loop turns: the banner was written inside the call.
      expect(readFileSync(join(dir, 'pod', 'app', '0.log'), 'utf8')).to.match(/^\S+ stdout F \n\S+ stdout F  Service 'w3logsvc' has been stopped\n\S+ stdout F \n\S+ stdout F  Service 'w3logsvc' started\n$/);
      // Closing the descriptor is tidy-up, after the reply.
      expect(openFiles()).to.equal(before + 1);
      await afterTidyUp();
      expect(openFiles()).to.equal(before);
      // A start that fails after the log file was created closes its descriptor too.
      expect((await rejection(runtime.startContainer({ container_id: failing }))).message).to.contain('no-such-command');
      expect(existsSync(join(dir, 'pod', 'broken', '0.log'))).to.equal(true);
      await afterTidyUp();
      expect(openFiles()).to.equal(before);
      await runtime.stopContainer({ container_id: started, timeout: '0' });
    } finally {
      await fixture.close();
    }
  });

  it('a lone writer settled while a batch is still queued keeps the order of the lines', async () => {
    const path = join(dir, 'app', '0.log');
    const writer = await CriLogWriter.open(path, systemClock, undefined, new LogFileHandles(4), loadOf(1));
    writer.write('stdout', 'first\n');
    const flushed = writer.flush(); // queued on the chain, not yet written
    writer.write('stdout', 'second\n');
    writer.settleStart();
    await flushed;
    await writer.close();
    expect((await readFile(path, 'utf8')).split('\n').map((l) => l.split(' ').pop())).to.deep.equal(['first', 'second', '']);
  });

  it('a log writer among other calls opens its file in the pool and keeps it open', async () => {
    const files = new LogFileHandles(4);
    const path = join(dir, 'app', '0.log');
    const writer = await CriLogWriter.open(path, systemClock, undefined, files, loadOf(2));
    expect(existsSync(path)).to.equal(true);
    expect(files.isOpen(writer)).to.equal(true);
    await writer.close();
  });

  it('stages and removes credential specs through the pool when the runtime is busy', async () => {
    const handoff = await CredentialSpecHandoff.open(dir, 'file', undefined, undefined, loadOf(5));
    const staged = await handoff.stage('{"CmsPlugins":["ActiveDirectory"]}');
    const path = join(handoff.directory, staged.name);
    expect((await stat(path)).mode & 0o777).to.equal(0o600);
    expect(await readFile(path, 'utf8')).to.equal('{"CmsPlugins":["ActiveDirectory"]}');
    expect(await handoff.remove(staged)).to.equal(true);
    expect(existsSync(path)).to.equal(false);
  });

  it('the runtime counts a call while it runs and not after, whether it succeeded or failed', async () => {
    const fixture = await openRuntime();
    try {
      const { runtime } = fixture;
      const load = runtime.context.load;
      await pull(runtime, BUSYBOX);
      const pending = runSandbox(runtime);
      expect(load.calls).to.equal(1);
      await pending;
      expect(load.calls).to.equal(0);
      await rejection(runtime.startContainer({ container_id: 'no-such-container' }));
      expect(load.calls).to.equal(0);
    } finally {
      await fixture.close();
    }
  });
});
