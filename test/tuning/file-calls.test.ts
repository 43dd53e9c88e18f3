import { expect } from 'chai';
import { closeSync, existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileCallPolicy, PLAIN_FILE_CALLS } from '../../src/tuning/file-calls.js';
import { systemClock } from '../../src/runtime/clock.js';
import { CriLogWriter, LogFileHandles } from '../../src/runtime/logging/cri-log-writer.js';
import { CredentialSpecHandoff } from '../../src/runtime/windows/credential-spec-handoff.js';
import { afterTidyUp } from '../support/tidy-up.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox } from '../runtime/helpers.js';

/** A load with `calls` calls in flight. */
function loadOf(calls: number): FileCallPolicy {
  const load = new FileCallPolicy();
  for (let i = 0; i < calls; i++) load.enter();
  return load;
}

describe('FileCallPolicy: file operations of a lone call run inline', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-load-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('counts the calls in flight; a call is alone while no other is', () => {
    const load = new FileCallPolicy();
    expect(load.inline).to.equal(true);
    load.enter();
    expect(load.inline).to.equal(true);
    load.enter();
    expect([load.calls, load.inline]).to.deep.equal([2, false]);
    load.leave();
    expect([load.calls, load.inline]).to.deep.equal([1, true]);
  });

  it('a plain policy never runs inline, and its short-lived files are created and unlinked as usual', async () => {
    const load = new FileCallPolicy(PLAIN_FILE_CALLS);
    expect(load.inline).to.equal(false);
    const files = await load.shortLivedFiles(dir, 'plain', 0o600);
    const path = join(dir, 'f.json');
    closeSync(await files.create(path));
    expect((await stat(path)).mode & 0o777).to.equal(0o600);
    const again = await files.create(path).then(() => undefined, (err: unknown) => err);
    expect(again, 'a second create of one path').to.have.property('code', 'EEXIST');
    expect(await files.remove(path)).to.equal(true);
    expect(existsSync(path)).to.equal(false);
    expect(await files.remove(path)).to.equal(false);
    await files.close();
    expect(existsSync(join(dir, 'spare-files')), 'no spare directory').to.equal(false);
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

  it('a log writer of a lone call creates its file at once, writes small batches at once, and keeps its descriptor until close', async () => {
    const files = new LogFileHandles(4);
    const path = join(dir, 'app', '0.log');
    const writer = await CriLogWriter.open(path, systemClock, undefined, files, loadOf(1));
    expect(existsSync(path)).to.equal(true);
    writer.settleStart();
    // The descriptor that created the file is the container's open log file now.
    expect(files.isOpen(writer)).to.equal(true);
    writer.write('stdout', 'hello\n');
    await writer.flush();
    expect(files.isOpen(writer)).to.equal(true);
    expect(await readFile(path, 'utf8')).to.match(/^\S+ stdout F hello\n$/);
    // A large batch goes through the thread pool, through the same open file.
    writer.write('stdout', `${'x'.repeat(20_000)}\n`);
    await writer.flush();
    expect(files.isOpen(writer)).to.equal(true);
    // The next small one is written at once through that open file, after the large one.
    writer.write('stderr', 'after\n');
    await writer.flush();
    await writer.close();
    expect(files.isOpen(writer)).to.equal(false);
    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines[1]).to.match(/^\S+ stdout P x{16384}$/);
    expect(lines[2]).to.match(/^\S+ stdout F x{3616}$/);
    expect(lines[3]).to.match(/^\S+ stderr F after$/);
    expect(lines).to.have.length(5);
  });

  // containerd keeps a container's log file open (its loggers are created once at the start):
  // after the kubelet renames it, output goes to the renamed file until ReopenContainerLog
  // creates new loggers at the path and closes the old ones (containerd v2
  // internal/cri/server/container_log_reopen.go).
  it('inline writes go through the kept descriptor: after a rename they land in the renamed file until reopen', async () => {
    const files = new LogFileHandles(4);
    const path = join(dir, 'app', '0.log');
    const writer = await CriLogWriter.open(path, systemClock, undefined, files, loadOf(1));
    writer.settleStart();
    writer.write('stdout', 'before\n');
    await writer.flush();
    await rename(path, `${path}.1`);
    writer.write('stdout', 'renamed\n');
    await writer.flush();
    // No open by path: nothing at the original path yet.
    expect(existsSync(path)).to.equal(false);
    await writer.reopen();
    expect(existsSync(path)).to.equal(true);
    writer.write('stdout', 'reopened\n');
    await writer.flush();
    await writer.close();
    const texts = async (file: string): Promise<string[]> => (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '').map((l) => l.split(' ').pop()!);
    expect(await texts(`${path}.1`)).to.deep.equal(['before', 'renamed']);
    expect(await texts(path)).to.deep.equal(['reopened']);
  });

  it('inline writes respect the bound on open log files: the least recently used idle file is closed, and reopened by path at its next write', async () => {
    const files = new LogFileHandles(2);
    const writers = await Promise.all([0, 1, 2].map((i) => CriLogWriter.open(join(dir, `w${i}`, '0.log'), systemClock, undefined, files, loadOf(1))));
    for (const w of writers) w.settleStart();
    expect(files.size).to.equal(2);
    expect(files.isOpen(writers[0]!)).to.equal(false);
    writers[0]!.write('stdout', 'again\n');
    await writers[0]!.flush();
    expect(files.isOpen(writers[0]!)).to.equal(true);
    expect(files.size).to.equal(2);
    await Promise.all(writers.map((w) => w.close()));
    expect(files.size).to.equal(0);
    expect(await readFile(join(dir, 'w0', '0.log'), 'utf8')).to.match(/^\S+ stdout F again\n$/);
  });

  it('a lone StartContainer returns with what the container printed at once in its log file, and its descriptor stays open until the container stops', async () => {
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
      expect(readFileSync(join(dir, 'pod', 'app', '0.log'), 'utf8')).to.match(/^\S+ stdout F \n\S+ stdout F {2}Service 'w3logsvc' has been stopped\n\S+ stdout F \n\S+ stdout F {2}Service 'w3logsvc' started\n$/);
      // The descriptor that created the file stays open for the running container.
      expect(openFiles()).to.equal(before + 1);
      await afterTidyUp();
      expect(openFiles()).to.equal(before + 1);
      // A start that fails after the log file was created closes its descriptor too.
      expect((await rejection(runtime.startContainer({ container_id: failing }))).message).to.contain('no-such-command');
      expect(existsSync(join(dir, 'pod', 'broken', '0.log'))).to.equal(true);
      await afterTidyUp();
      expect(openFiles()).to.equal(before + 1);
      // Stopped: the log file is closed with the container (in the thread pool, after the
      // container is EXITED): waited for, within a bound.
      await runtime.stopContainer({ container_id: started, timeout: '0' });
      for (const deadline = Date.now() + 10_000; openFiles() !== before && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
      expect(openFiles()).to.equal(before);
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
