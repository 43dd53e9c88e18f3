import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { startFloorServer, type FloorServer } from '../../bench/floor-server.js';
import { parseStatTicks, parseVmRssKiB, readRssKiB, readThreadCpu, startRuntime } from '../../bench/runtime-process.js';
import { NODE_FLAGS } from '../../src/tuning/node-flags.js';
import { cliPath, repoRoot } from '../support/paths.js';
import { programFlagsOf } from '../support/process.js';

describe('bench floor server', () => {
  let dir: string;
  let floor: FloorServer;
  let cri: CriClient;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-floor-test-'));
    floor = await startFloorServer(join(dir, 'floor.sock'));
    cri = createCriClient(floor.endpoint);
  });
  after(async () => {
    cri.close();
    await floor.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers Version with all four fields set, as crictl requires', async () => {
    const v = await unaryCall(cri.runtime, 'Version', {});
    expect(v.version).to.not.equal('');
    expect(v.runtime_name).to.equal('floor');
    expect(v.runtime_version).to.not.equal('');
    expect(v.runtime_api_version).to.equal('v1');
  });

  it('hands out distinct 64-hex ids for sandboxes and containers', async () => {
    const a = await unaryCall(cri.runtime, 'RunPodSandbox', { config: { metadata: { name: 'p', uid: 'u', namespace: 'n' } } });
    const b = await unaryCall(cri.runtime, 'CreateContainer', { pod_sandbox_id: a.pod_sandbox_id, config: { metadata: { name: 'c' } } });
    expect(a.pod_sandbox_id).to.match(/^[0-9a-f]{64}$/);
    expect(b.container_id).to.match(/^[0-9a-f]{64}$/);
    expect(a.pod_sandbox_id).to.not.equal(b.container_id);
  });

  it('answers ExecSync with exit code 0 and output, and counts calls per method', async () => {
    const before = floor.calls('ExecSync');
    const r = await unaryCall(cri.runtime, 'ExecSync', { container_id: 'x', cmd: ['whoami'], timeout: 1 });
    expect(r.exit_code).to.equal(0);
    expect(Buffer.from(r.stdout).toString()).to.contain('webapplication1');
    expect(floor.calls('ExecSync')).to.equal(before + 1);
  });

  it('serves a response set for a method, such as a captured list', async () => {
    const containers = Array.from({ length: 3 }, (_, i) => ({
      id: String(i).padStart(64, '0'),
      pod_sandbox_id: 'p',
      metadata: { name: `c${i}`, attempt: 0 },
      state: 1,
      created_at: '1700000000000000000',
      labels: { 'io.kubernetes.pod.name': 'p' },
    }));
    floor.setResponse('ListContainers', { containers });
    const r = await unaryCall(cri.runtime, 'ListContainers', { filter: {} });
    expect(r.containers.map((c) => c.metadata?.name)).to.deep.equal(['c0', 'c1', 'c2']);
    expect(r.containers[2].created_at).to.equal('1700000000000000000');
  });

  it('serves the image service on the same socket', async () => {
    const r = await unaryCall(cri.image, 'PullImage', { image: { image: 'x' } });
    expect(r.image_ref).to.match(/^sha256:[0-9a-f]{64}$/);
  });

  it('removes its socket on close', async () => {
    const socket = join(dir, 'second.sock');
    const second = await startFloorServer(socket);
    expect(existsSync(socket)).to.equal(true);
    await second.close();
    expect(existsSync(socket)).to.equal(false);
  });
});

describe('bench runtime memory probe', () => {
  it('reads VmRSS in KiB from /proc/<pid>/status text', () => {
    expect(parseVmRssKiB('Name:\tnode\nVmPeak:\t  100 kB\nVmRSS:\t   51234 kB\nVmData:\t 1 kB\n')).to.equal(51234);
    expect(() => parseVmRssKiB('Name:\tnode\n')).to.throw(/VmRSS/);
  });

  it('reads the resident memory of a live process', async function () {
    if (process.platform !== 'linux') this.skip();
    const kib = await readRssKiB(process.pid);
    expect(kib).to.be.above(1000);
  });

  it('reads utime + stime from a /proc stat line whose command name holds spaces and parentheses', () => {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    const line = '4242 (node (worker) 1) S 1 4242 4242 0 -1 4194304 1500 0 3 0 731 96 0 0 20 0 11 0 5 1000 2000\n';
    expect(parseStatTicks(line)).to.equal(731 + 96);
    expect(() => parseStatTicks('4242 node S 1')).to.throw(/command name/);
    expect(() => parseStatTicks('4242 (node) S 1 2')).to.throw(/utime/);
  });

  it("splits a live process's CPU into its main thread and its other threads", async function () {
    if (process.platform !== 'linux') this.skip();
    const before = await readThreadCpu(process.pid);
    // Busy on the main thread until the process has used 80 ms of CPU (bounded at 5 s): on a
    // loaded machine 60 ms of wall time gave the thread as little as 20 ms of CPU.
    const start = process.cpuUsage();
    const until = performance.now() + 5000;
    for (;;) {
      const used = process.cpuUsage(start);
      if ((used.user + used.system) / 1000 >= 80 || performance.now() > until) break;
    }
    const after = await readThreadCpu(process.pid);
    expect(after.mainMs - before.mainMs).to.be.at.least(30);
    expect(after.otherMs).to.be.at.least(before.otherMs);
  });
});

describe('bench floor server in its own process', () => {
  it('serves from a child process, takes responses over IPC, and exits on close', async () => {
    const { startFloorProcess } = await import('../../bench/floor-process.js');
    const dir = mkdtempSync(join(tmpdir(), 'bench-floor-proc-test-'));
    const floor = await startFloorProcess(join(dir, 'floor.sock'));
    const cri = createCriClient(floor.endpoint);
    try {
      expect(floor.pid).to.not.equal(process.pid);
      const flags = programFlagsOf(floor.pid, join(repoRoot, 'dist', 'bench', 'floor-process.js'));
      if (flags !== undefined) expect(flags, 'the floor starts with the runtime\'s node flags').to.deep.equal([...NODE_FLAGS]);
      await floor.setResponse('ListPodSandbox', { items: [{ id: 'a'.repeat(64), metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 }, state: 0, created_at: '1' }] });
      const r = await unaryCall(cri.runtime, 'ListPodSandbox', { filter: {} });
      expect(r.items.map((i) => i.id)).to.deep.equal(['a'.repeat(64)]);
    } finally {
      cri.close();
      await floor.close();
    }
    let alive = true;
    try {
      process.kill(floor.pid, 0);
    } catch {
      alive = false;
    }
    expect(alive).to.equal(false);
    expect(existsSync(join(dir, 'floor.sock'))).to.equal(false);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('bench runtime process', () => {
  it('starts the runtime as the cri-winsim command does, with its node flags, and stops it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-runtime-proc-test-'));
    const runtime = await startRuntime({ cliPath, socketPath: join(dir, 'cri.sock'), stateDir: join(dir, 'state') });
    try {
      const flags = programFlagsOf(runtime.pid, cliPath);
      if (flags !== undefined) expect(flags).to.deep.equal([...NODE_FLAGS]);
      const cri = createCriClient(runtime.endpoint);
      try {
        expect((await unaryCall(cri.runtime, 'Version', {})).runtime_name).to.equal('cri-winsim');
      } finally {
        cri.close();
      }
    } finally {
      expect((await runtime.stop()).code).to.equal(0);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
