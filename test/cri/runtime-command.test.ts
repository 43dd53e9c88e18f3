import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'chai';
import { createCriClient, unaryCall } from '../../src/cri/proto.js';
import { cliPath } from '../support/paths.js';
import { READY_TEXT, startRuntime, type RuntimeHandle } from '../support/runtime.js';

/** Runs the CLI to completion (bounded by a timeout) and returns its exit code and output. */
function runCli(args: string[], timeoutMs = 15_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cri-winsim ${args.join(' ')} did not exit within ${timeoutMs} ms; output:\n${output}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('cri-winsim runtime (command)', function () {
  // Each test starts node with the CLI up to three times; on a busy 2-core machine one start
  // took 4 s, and mocha's default 20 s was two thirds spent (12.3 s) by the three usage errors.
  this.timeout(60_000);
  let runtime: RuntimeHandle | undefined;

  afterEach(async () => {
    await runtime?.stop();
    runtime = undefined;
  });

  it('logs one ready line with the endpoint, serves CRI, and exits 0 on SIGTERM removing the socket', async () => {
    runtime = await startRuntime();
    const ready = runtime.output().split('\n').filter((line) => line.includes(READY_TEXT));
    expect(ready).to.have.lengthOf(1);
    const parsed = JSON.parse(ready[0]!) as { msg: string; endpoint: string };
    expect(parsed.msg).to.equal(READY_TEXT);
    expect(parsed.endpoint).to.equal(runtime.endpoint);

    const cri = createCriClient(runtime.endpoint);
    try {
      const version = await unaryCall(cri.runtime, 'Version', {});
      expect(version.runtime_api_version).to.equal('v1');
    } finally {
      cri.close();
    }
    const exit = await runtime.stop();
    expect(exit).to.deep.include({ code: 0, signal: null, killed: false, socketLeft: false });
  });

  it('exits 0 on SIGINT as well', async () => {
    runtime = await startRuntime();
    process.kill(runtime.pid, 'SIGINT');
    const deadline = Date.now() + 10_000;
    while (runtime.running() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runtime.running(), 'still running 10 s after SIGINT').to.equal(false);
    const exit = await runtime.stop();
    expect(exit, runtime.output()).to.deep.include({ code: 0, signal: null });
    expect(exit.socketLeft).to.equal(false);
  });

  it('refuses to start on a socket a live runtime serves, leaving that one running', async () => {
    runtime = await startRuntime();
    const second = await runCli(['runtime', '--listen', runtime.endpoint, '--state-dir', join(runtime.dir, 'second-state')]);
    expect(second.code).to.equal(1);
    expect(second.output).to.include(`another server is already listening on ${runtime.endpoint}`);
    expect(runtime.running()).to.equal(true);
    const cri = createCriClient(runtime.endpoint);
    try {
      expect((await unaryCall(cri.runtime, 'Version', {})).runtime_api_version).to.equal('v1');
    } finally {
      cri.close();
    }
  });

  it('refuses a non-unix endpoint and a non-loopback metrics address with messages naming them', async () => {
    const tcp = await runCli(['runtime', '--listen', 'tcp://127.0.0.1:10010', '--state-dir', '/nonexistent-state']);
    expect(tcp.code).to.equal(1);
    expect(tcp.output).to.include('CRI endpoint "tcp://127.0.0.1:10010" is not supported');
    const metrics = await runCli(['runtime', '--listen', 'unix:///nonexistent/cri.sock', '--metrics-addr', '0.0.0.0:9090']);
    expect(metrics.code).to.equal(1);
    expect(metrics.output).to.include('--metrics-addr "0.0.0.0:9090": host must be a loopback address');
    // A flag value its parser refuses is a usage error: exit 2 (docs/cli.md).
    const gc = await runCli(['runtime', '--listen', 'unix:///nonexistent/cri.sock', '--idle-gc-seconds', 'soon']);
    expect(gc.code).to.equal(2);
    expect(gc.output).to.include('--idle-gc-seconds must be a number of seconds from 0 to 3600, not "soon"');
  });

  it('collects garbage once after a changing RPC and a quiet spell, not after reads', async () => {
    runtime = await startRuntime({ args: ['--idle-gc-seconds', '0.3', '--log-level', 'debug'] });
    const client = createCriClient(runtime.endpoint);
    const collections = (): number => runtime!.output().split('\n').filter((l) => l.includes('idle garbage collection')).length;
    try {
      await unaryCall(client.runtime, 'ListPodSandbox', {}, { timeoutMs: 5000 });
      await new Promise((r) => setTimeout(r, 700));
      expect(collections()).to.equal(0);
      await unaryCall(client.runtime, 'RunPodSandbox', { config: { metadata: { name: 'gc', uid: 'gc-uid', namespace: 'default', attempt: 0 } } }, { timeoutMs: 5000 });
      const deadline = Date.now() + 5000;
      while (collections() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(collections()).to.equal(1);
      await unaryCall(client.runtime, 'ListPodSandbox', {}, { timeoutMs: 5000 });
      await new Promise((r) => setTimeout(r, 700));
      expect(collections()).to.equal(1);
      expect((await unaryCall(client.runtime, 'ListPodSandbox', {}, { timeoutMs: 5000 })).items).to.have.length(1);
    } finally {
      client.close();
    }
  });
});
