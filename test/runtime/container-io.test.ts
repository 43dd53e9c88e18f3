import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { dir, type DirectoryResult } from 'tmp-promise';
import { formatRfc3339Nano, systemClock } from '../../src/runtime/clock.js';
import { CriLogWriter, formatLogRecord, LogFileHandles, MAX_LOG_LINE_BYTES } from '../../src/runtime/logging/cri-log-writer.js';
import { ContainerState } from '../../src/runtime/store/container-store.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox, securityContext, STOPPED_EVENT, waitForEvent, type RuntimeFixture } from './helpers.js';

/** `<RFC3339Nano> stdout|stderr P|F <text>` */
const CRI_LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z) (stdout|stderr) ([PF]) (.*)$/;

function parseLog(text: string): { time: string; stream: string; tag: string; text: string }[] {
  return text.split('\n').filter((l) => l !== '').map((line) => {
    const m = CRI_LINE.exec(line);
    if (m === null) throw new Error(`not a CRI log line: ${JSON.stringify(line)}`);
    return { time: m[1] as string, stream: m[2] as string, tag: m[3] as string, text: m[4] as string };
  });
}

describe('CRI log writer', () => {
  let tmp: DirectoryResult;
  beforeEach(async () => (tmp = await dir({ unsafeCleanup: true })));
  afterEach(async () => tmp.cleanup());

  it('formats records with RFC3339Nano timestamps without trailing zeros', () => {
    expect(formatLogRecord(1_700_000_000_120_000_000n, 'stdout', false, 'hi')).to.equal('2023-11-14T22:13:20.12Z stdout F hi\n');
    expect(formatLogRecord(1_700_000_000_000_000_000n, 'stderr', true, 'x')).to.equal('2023-11-14T22:13:20Z stderr P x\n');
  });

  it('formats timestamps as Go RFC3339Nano when repeated, within one second, across seconds and back', () => {
    const cases: [bigint, string][] = [
      [1_700_000_000_120_000_000n, '2023-11-14T22:13:20.12Z'],
      [1_700_000_000_120_000_000n, '2023-11-14T22:13:20.12Z'],
      [1_700_000_000_000_000_001n, '2023-11-14T22:13:20.000000001Z'],
      [1_700_000_000_999_999_999n, '2023-11-14T22:13:20.999999999Z'],
      [1_700_000_001_000_000_000n, '2023-11-14T22:13:21Z'],
      [1_700_000_000_500_000_000n, '2023-11-14T22:13:20.5Z'],
      [1_714_557_600_123_400_000n, '2024-05-01T10:00:00.1234Z'],
      [1_714_557_600_123_400_000n, '2024-05-01T10:00:00.1234Z'],
    ];
    expect(cases.map(([nanos]) => formatRfc3339Nano(nanos))).to.deep.equal(cases.map(([, text]) => text));
  });

  it('writes complete lines as F, splits overlong lines into P records, flushes a trailing partial line at close', async () => {
    const path = join(tmp.path, 'nested', 'c.log');
    const writer = await CriLogWriter.open(path, systemClock);
    writer.write('stdout', 'one\ntw');
    writer.write('stderr', 'err\r\n');
    writer.write('stdout', 'o\n');
    writer.write('stdout', `${'x'.repeat(MAX_LOG_LINE_BYTES + 10)}\n`);
    writer.write('stdout', 'tail');
    await writer.close();
    const records = parseLog(await readFile(path, 'utf8'));
    expect(records.map((r) => [r.stream, r.tag, r.text.length > 20 ? r.text.length : r.text])).to.deep.equal([
      ['stdout', 'F', 'one'],
      ['stderr', 'F', 'err'],
      ['stdout', 'F', 'two'],
      ['stdout', 'P', MAX_LOG_LINE_BYTES],
      ['stdout', 'F', 'xxxxxxxxxx'],
      ['stdout', 'F', 'tail'],
    ]);
  });

  it('reopens at the original path after a rename; the old file stops growing', async () => {
    const path = join(tmp.path, 'c.log');
    const writer = await CriLogWriter.open(path, systemClock);
    writer.write('stdout', 'before\n');
    await writer.flush();
    await rename(path, `${path}.1`);
    await writer.reopen();
    expect(existsSync(path)).to.equal(true);
    writer.write('stdout', 'after\n');
    await writer.close();
    expect(parseLog(await readFile(`${path}.1`, 'utf8')).map((r) => r.text)).to.deep.equal(['before']);
    expect(parseLog(await readFile(path, 'utf8')).map((r) => r.text)).to.deep.equal(['after']);
  });

  it('keeps at most its capacity of log files open while many writers write, each file complete and in order', async () => {
    const files = new LogFileHandles(2);
    const writers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => CriLogWriter.open(join(tmp.path, `w${i}.log`), systemClock, undefined, files)),
    );
    expect(files.size).to.be.at.most(2);
    // Bounded: 5 rounds over 6 writers, every round flushed, so files are closed and reopened.
    for (let round = 0; round < 5; round++) {
      writers.forEach((w, i) => w.write('stdout', `w${i} line ${round}\n`));
      await Promise.all(writers.map((w) => w.flush()));
      expect(files.size).to.be.at.most(2);
    }
    await Promise.all(writers.map((w) => w.close()));
    expect(files.size).to.equal(0);
    for (let i = 0; i < writers.length; i++) {
      const texts = parseLog(await readFile(join(tmp.path, `w${i}.log`), 'utf8')).map((r) => r.text);
      expect(texts).to.deep.equal([0, 1, 2, 3, 4].map((round) => `w${i} line ${round}`));
    }
  });

  it('keeps the file of a writer that keeps writing open while idle writers come and go', async () => {
    const files = new LogFileHandles(4);
    const chatty = await CriLogWriter.open(join(tmp.path, 'chatty.log'), systemClock, undefined, files);
    const idle: CriLogWriter[] = [];
    for (let i = 0; i < 12; i++) {
      idle.push(await CriLogWriter.open(join(tmp.path, `idle${i}.log`), systemClock, undefined, files));
      // Checked before it writes again: a write would reopen a closed file.
      expect(files.isOpen(chatty), `after ${i + 1} idle writers`).to.equal(true);
      expect(files.size).to.be.at.most(4);
      chatty.write('stdout', `line ${i}\n`);
      await chatty.flush();
    }
    // The idle ones were closed to make room, oldest first.
    expect(files.isOpen(idle[0]!)).to.equal(false);
    expect(files.isOpen(idle[11]!)).to.equal(true);
    await Promise.all([chatty, ...idle].map((w) => w.close()));
    expect(files.size).to.equal(0);
  });

  it('creates the log file when it opens, before any output', async () => {
    const path = join(tmp.path, 'sub', 'quiet.log');
    const writer = await CriLogWriter.open(path, systemClock, undefined, new LogFileHandles(1));
    expect(existsSync(path)).to.equal(true);
    await writer.close();
    expect(await readFile(path, 'utf8')).to.equal('');
  });
});

describe('runtime: container logs, exec and stats', () => {
  let fx: RuntimeFixture;
  let logs: DirectoryResult;
  beforeEach(async () => {
    fx = await openRuntime();
    logs = await dir({ unsafeCleanup: true });
    await pull(fx.runtime, BUSYBOX);
  });
  afterEach(async () => {
    await fx.close();
    await logs.cleanup();
  });

  it('writes the output of `echo hello World` to log_directory/log_path as a CRI line, before EXITED is visible', async () => {
    const sb = await runSandbox(fx.runtime, { log_directory: logs.path });
    const id = await createContainer(fx.runtime, sb, { command: ['echo', 'hello World'], log_path: 'echo.log' });
    const exited = waitForEvent(fx.runtime, (ev) => ev.container_id === id && ev.container_event_type === STOPPED_EVENT);
    await fx.runtime.startContainer({ container_id: id });
    await exited;
    const st = (await fx.runtime.containerStatus({ container_id: id, verbose: false })).status;
    expect(st?.state).to.equal(ContainerState.EXITED);
    expect(st?.exit_code).to.equal(0);
    expect(st?.reason).to.equal('Completed');
    expect(st?.log_path).to.equal(join(logs.path, 'echo.log'));
    const records = parseLog(await readFile(join(logs.path, 'echo.log'), 'utf8'));
    expect(records.map((r) => [r.stream, r.tag, r.text])).to.deep.equal([['stdout', 'F', 'hello World']]);
  });

  it('reopens a running container log so the original path exists on return and gets new lines', async () => {
    const sb = await runSandbox(fx.runtime, { log_directory: logs.path });
    const id = await createContainer(fx.runtime, sb, { command: ['sh', '-c', 'while true; do echo hello World; sleep 0.05; done'], log_path: 'loop.log' });
    await fx.runtime.startContainer({ container_id: id });
    const path = join(logs.path, 'loop.log');
    await new Promise((r) => setTimeout(r, 120));
    await rename(path, `${path}.new`);
    await fx.runtime.reopenContainerLog({ container_id: id });
    expect(existsSync(path)).to.equal(true);
    await new Promise((r) => setTimeout(r, 150));
    const oldLength = parseLog(await readFile(`${path}.new`, 'utf8')).length;
    await new Promise((r) => setTimeout(r, 150));
    expect(parseLog(await readFile(`${path}.new`, 'utf8')).length).to.equal(oldLength);
    expect(parseLog(await readFile(path, 'utf8')).length).to.be.greaterThan(0);
    await fx.runtime.stopContainer({ container_id: id, timeout: '0' });
    const err = await rejection(fx.runtime.reopenContainerLog({ container_id: id }));
    expect(err.code).to.equal('FailedPrecondition');
  });

  it('keeps a runtime-owned log when the config has no log path and removes it with the container', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['sh', '-c', 'echo to-runtime-log; sleep 100'] });
    await fx.runtime.startContainer({ container_id: id });
    const path = (await fx.runtime.containerStatus({ container_id: id, verbose: false })).status?.log_path ?? '';
    expect(path.startsWith(fx.runtime.context.settings.stateDir)).to.equal(true);
    await fx.runtime.stopContainer({ container_id: id, timeout: '0' });
    expect(parseLog(await readFile(path, 'utf8')).map((r) => r.text)).to.deep.equal(['to-runtime-log']);
    await fx.runtime.removeContainer({ container_id: id });
    expect(existsSync(path)).to.equal(false);
  });

  it('runs ExecSync with output and exit code, in the container environment', async () => {
    const sb = await runSandbox(fx.runtime, { hostname: 'web-7' });
    const id = await createContainer(fx.runtime, sb, { command: ['top'], envs: [{ key: 'GREETING', value: 'hi' }] });
    await fx.runtime.startContainer({ container_id: id });
    const echo = await fx.runtime.execSync({ container_id: id, cmd: ['echo', '-n', 'hello'], timeout: '30' });
    expect(String(echo.stdout)).to.equal('hello');
    expect(String(echo.stderr)).to.equal('');
    expect(echo.exit_code).to.equal(0);
    const env = await fx.runtime.execSync({ container_id: id, cmd: ['sh', '-c', 'echo $GREETING $(hostname) >&2; exit 4'], timeout: '0' });
    expect(String(env.stderr)).to.equal('hi web-7\n');
    expect(env.exit_code).to.equal(4);
    const missing = await rejection(fx.runtime.execSync({ container_id: id, cmd: ['no-such'], timeout: '5' }));
    expect(missing.message).to.contain('"no-such": executable file not found');
  });

  it('enforces the ExecSync timeout itself: DeadlineExceeded, and the process is gone afterwards', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['top'] });
    await fx.runtime.startContainer({ container_id: id });
    const t0 = Date.now();
    const err = await rejection(fx.runtime.execSync({ container_id: id, cmd: ['sleep', '4321'], timeout: '1' }));
    expect(Date.now() - t0).to.be.within(950, 2500);
    expect(err.code).to.equal('DeadlineExceeded');
    expect(err.message).to.contain('timed out after 1s');
    const check = await fx.runtime.execSync({ container_id: id, cmd: ['sh', '-c', 'pgrep sleep || true'], timeout: '30' });
    expect(String(check.stdout).trim()).to.equal('');
  });

  it('derives what commands see from the config: sysctls, DNS, hostname, run-as user, read-only root', async () => {
    const sb = await runSandbox(fx.runtime, {
      hostname: 'dns-pod',
      dns_config: { servers: ['10.10.10.10'], searches: ['google.com'], options: ['ndots:8'] },
      linux: { cgroup_parent: '', security_context: null, sysctls: { 'kernel.shm_rmid_forced': '1' }, overhead: null, resources: null },
    });
    const sc = securityContext;
    const id = await createContainer(fx.runtime, sb, { command: ['top'], linux: { resources: null, security_context: sc({ run_as_username: 'nobody' }) } });
    await fx.runtime.startContainer({ container_id: id });
    const exec = async (cmd: string[]) => String((await fx.runtime.execSync({ container_id: id, cmd, timeout: '5' })).stdout);
    expect(await exec(['cat', '/proc/sys/kernel/shm_rmid_forced'])).to.equal('1\n');
    expect(await exec(['cat', '/etc/resolv.conf'])).to.equal('nameserver 10.10.10.10\nsearch google.com\noptions ndots:8\n');
    expect(await exec(['hostname'])).to.equal('dns-pod\n');
    expect(await exec(['id', '-nu'])).to.equal('nobody\n');
    expect(await exec(['id', '-u'])).to.equal('65534\n');
    const ro = await createContainer(fx.runtime, sb, {
      command: ['sh', '-c', "touch test.go && [ -f test.go ] && echo 'Found'"],
      linux: { resources: null, security_context: sc({ readonly_rootfs: true }) },
      log_path: '',
    });
    const rw = await createContainer(fx.runtime, sb, { command: ['sh', '-c', "touch test.go && [ -f test.go ] && echo 'Found'"] });
    for (const c of [ro, rw]) {
      const done = waitForEvent(fx.runtime, (ev) => ev.container_id === c && ev.container_event_type === STOPPED_EVENT);
      await fx.runtime.startContainer({ container_id: c });
      await done;
    }
    const logOf = async (c: string) => parseLog(await readFile((await fx.runtime.containerStatus({ container_id: c, verbose: false })).status?.log_path ?? '', 'utf8'));
    expect((await logOf(ro)).map((r) => [r.stream, r.text])).to.deep.equal([['stderr', 'touch: test.go: Read-only file system']]);
    expect((await logOf(rw)).map((r) => [r.stream, r.text])).to.deep.equal([['stdout', 'Found']]);
  });

  it('refuses ExecSync in a container that is not running', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['top'] });
    const err = await rejection(fx.runtime.execSync({ container_id: id, cmd: ['echo'], timeout: '1' }));
    expect(err.code).to.equal('FailedPrecondition');
    expect(err.message).to.contain('CONTAINER_CREATED');
  });

  it('reports container and sandbox stats whose cpu timestamp and usage advance between samples', async () => {
    const sb = await runSandbox(fx.runtime, { labels: { app: 'x' } });
    const id = await createContainer(fx.runtime, sb, { command: ['top'], labels: { foo: 'bar' } });
    await fx.runtime.startContainer({ container_id: id });
    await new Promise((r) => setTimeout(r, 20));
    const first = (await fx.runtime.containerStats({ container_id: id })).stats;
    await new Promise((r) => setTimeout(r, 30));
    const listed = (await fx.runtime.listContainerStats({ filter: { id: '', pod_sandbox_id: '', label_selector: { foo: 'bar' } } })).stats ?? [];
    expect(listed.map((s) => s.attributes?.id)).to.deep.equal([id]);
    const second = listed[0];
    expect(first?.attributes?.metadata?.name).to.equal((await fx.runtime.containerStatus({ container_id: id, verbose: false })).status?.metadata?.name);
    expect(BigInt(String(second?.cpu?.timestamp)) > BigInt(String(first?.cpu?.timestamp))).to.equal(true);
    expect(BigInt(String(second?.cpu?.usage_core_nano_seconds?.value)) > BigInt(String(first?.cpu?.usage_core_nano_seconds?.value))).to.equal(true);
    expect(Number(first?.memory?.working_set_bytes?.value)).to.be.greaterThan(0);
    expect(BigInt(String(first?.memory?.timestamp)) > 0n).to.equal(true);
    const none = await fx.runtime.listContainerStats({ filter: { id: '', pod_sandbox_id: '', label_selector: { foo: 'baz' } } });
    expect(none.stats).to.deep.equal([]);
    const pod = (await fx.runtime.podSandboxStats({ pod_sandbox_id: sb.id })).stats;
    expect(pod?.attributes?.id).to.equal(sb.id);
    expect(pod?.linux?.containers?.map((c) => c.attributes?.id)).to.deep.equal([id]);
    expect(Number(pod?.linux?.process?.process_count?.value)).to.be.greaterThan(1);
    expect((await fx.runtime.listPodSandboxStats({ filter: null })).stats?.map((s) => s.attributes?.id)).to.deep.equal([sb.id]);
  });
});
