// The process model as a supervisor meets it (issue 33, "a process supervisors can kill"): the
// `cri-winsim` command run as a user runs it (dist/src/launcher.js, which starts the runtime in a
// node child with the V8 flags), real signals, real state directories and sockets; no mocks.
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createCriClient, unaryCall } from '../../src/cri/proto.js';
import { NODE_FLAGS } from '../../src/tuning/node-flags.js';
import { sandboxConfig } from '../../bench/workload.js';
import { cliPath, repoRoot } from '../support/paths.js';
import { childrenOf, processRunning, runProcess } from '../support/process.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { waitUntil } from '../support/wait.js';

const launcherPath = join(repoRoot, 'dist', 'src', 'launcher.js');
/** The runtime command without the harness's own --pod-cidr: the defaults a user gets. */
const plainCli = [process.execPath, ...NODE_FLAGS, cliPath];

/** The child the launcher started (exactly one). */
function runtimeChildOf(launcher: RuntimeHandle): number {
  const children = childrenOf(launcher.pid);
  expect(children, `children of the launcher (pid ${launcher.pid})`).to.have.length(1);
  return children[0]!;
}

async function podIpOn(runtime: RuntimeHandle, name: string): Promise<string> {
  const cri = createCriClient(runtime.endpoint);
  try {
    const { pod_sandbox_id } = await unaryCall(cri.runtime, 'RunPodSandbox', { config: sandboxConfig({ name, gmsa: false }) });
    const status = await unaryCall(cri.runtime, 'PodSandboxStatus', { pod_sandbox_id, verbose: false });
    return status.status?.network?.ip ?? '';
  } finally {
    cri.close();
  }
}

describe('process model: what a supervisor can rely on', function () {
  // Each test starts node with the CLI once or twice; on the busy 2-core machine a start takes seconds.
  this.timeout(90_000);
  const started: RuntimeHandle[] = [];
  const start = async (...args: Parameters<typeof startRuntime>): Promise<RuntimeHandle> => {
    const handle = await startRuntime(...args);
    started.push(handle);
    return handle;
  };

  before(function () {
    if (!existsSync('/proc/self/stat')) this.skip(); // the checks read procfs (Linux)
  });

  afterEach(async () => {
    for (const handle of started.splice(0).reverse()) await handle.stop();
  });

  it('a SIGKILL of the cri-winsim command ends its runtime child within a second, which stops cleanly', async () => {
    const launcher = await start({ name: 'sigkill-launcher', command: [launcherPath] });
    const child = runtimeChildOf(launcher);
    const lockFile = join(launcher.stateDir, 'runtime.lock');
    expect(JSON.parse(readFileSync(lockFile, 'utf8'))).to.include({ pid: child });
    await launcher.kill();
    const killedAt = Date.now();
    await waitUntil(`the runtime child (pid ${child}) to end after its launcher's SIGKILL`, () => !processRunning(child), 1500, 10);
    expect(Date.now() - killedAt).to.be.below(1500);
    // It stopped as on SIGTERM: socket removed, state directory released.
    expect(existsSync(launcher.socketPath), 'socket left behind').to.equal(false);
    expect(existsSync(lockFile), 'state directory lock left behind').to.equal(false);
  });

  it('a SIGINT sent to the cri-winsim command alone reaches the runtime once: it stops cleanly and the command exits 0', async () => {
    const launcher = await start({ name: 'sigint-launcher', command: [launcherPath] });
    const child = runtimeChildOf(launcher);
    process.kill(launcher.pid, 'SIGINT');
    await waitUntil('the command to exit after SIGINT', () => !launcher.running(), 10_000, 20);
    const exit = await launcher.stop();
    expect(exit, launcher.output()).to.deep.include({ code: 0, signal: null, killed: false, socketLeft: false });
    expect(processRunning(child)).to.equal(false);
    expect(launcher.output()).to.include('"signal":"SIGINT","msg":"shutting down"');
    expect(launcher.output()).to.not.include('second signal during shutdown');
  });

  it('a second runtime on a live state directory exits 1 naming the state directory and the holder\'s pid', async () => {
    const first = await start({ name: 'lock-holder' });
    const second = await runProcess(process.execPath, [...NODE_FLAGS, cliPath, 'runtime', '--listen', `unix://${join(first.dir, 'second.sock')}`, '--state-dir', first.stateDir], { killAfterMs: 30_000 });
    expect(second.code, second.stderr).to.equal(1);
    // Our own text (src/runtime/state-dir-lock.ts).
    expect(second.stderr).to.equal(`error: state directory ${first.stateDir} is in use by another cri-winsim runtime (pid ${first.pid}); stop it or choose another state directory\n`);
    expect(existsSync(join(first.dir, 'second.sock'))).to.equal(false);
    expect(first.running()).to.equal(true);
  });

  it('after a SIGKILL of a runtime, a new one on the same state directory and socket starts (stale lock and socket taken over)', async () => {
    const crashed = await start({ name: 'crashed' });
    const exit = await crashed.kill();
    expect(exit.socketLeft, 'the killed runtime left its socket file').to.equal(true);
    expect(JSON.parse(readFileSync(join(crashed.stateDir, 'runtime.lock'), 'utf8'))).to.include({ pid: crashed.pid });
    const next = await start({ name: 'after-crash', dir: crashed.dir });
    try {
      expect(next.output()).to.include('removing stale CRI socket');
      expect(JSON.parse(readFileSync(join(next.stateDir, 'runtime.lock'), 'utf8'))).to.include({ pid: next.pid });
      const cri = createCriClient(next.endpoint);
      try {
        expect((await unaryCall(cri.runtime, 'Version', {})).runtime_api_version).to.equal('v1');
      } finally {
        cri.close();
      }
    } finally {
      await next.stop();
      await rm(crashed.dir, { recursive: true, force: true });
    }
  });

  it('two runtimes started with default flags hand out pod addresses from different ranges', async () => {
    const [a, b] = [await start({ name: 'default-range-a', command: plainCli }), await start({ name: 'default-range-b', command: plainCli })];
    const [ipA, ipB] = [await podIpOn(a!, 'range-a'), await podIpOn(b!, 'range-b')];
    expect(ipA).to.match(/^127\.\d+\.0\.2$/);
    expect(ipB).to.match(/^127\.\d+\.0\.2$/);
    // Different /16s: neither range holds the other's addresses.
    expect(ipA.split('.')[1]).to.not.equal(ipB.split('.')[1]);
  });

  it('a --pod-cidr that overlaps a live runtime\'s range is refused, naming that runtime', async () => {
    const first = await start({ name: 'range-holder', args: ['--pod-cidr', '127.201.0.0/16'] });
    const second = await runProcess(process.execPath, [...NODE_FLAGS, cliPath, 'runtime', '--listen', `unix://${join(first.dir, 'second.sock')}`, '--state-dir', join(first.dir, 'second-state'), '--pod-cidr', '127.201.8.0/24'], { killAfterMs: 30_000 });
    expect(second.code, second.stderr).to.equal(1);
    // Our own text (src/runtime/network/pod-range-registry.ts).
    expect(second.stderr).to.equal(`error: --pod-cidr 127.201.8.0/24 overlaps the pod range 127.201.0.0/16 of another cri-winsim runtime (pid ${first.pid}, state directory ${first.stateDir}): runtimes on one machine share its loopback; choose another range\n`);
    expect(existsSync(join(first.dir, 'second-state'))).to.equal(false);
  });
});
