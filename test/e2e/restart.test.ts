// A durable runtime (the default of `cri-winsim runtime`) restarted on the same --state-dir, after
// SIGKILL and after SIGTERM, driven by the real crictl: pods, containers and images come back,
// a running container keeps running with its start time and identity, a created one still starts
// with its credential spec. `--simulate-reboot` exits every container with containerd's
// 255/Unknown (containerd v2.2.7 internal/cri/server/restart.go).
import { expect } from 'chai';
import { mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { freePort } from '../support/control-plane.js';
import { testPodCidr } from '../support/pod-cidr.js';
import { runCrashRounds } from './crash-rounds.js';
import { tempDirPerTest } from '../support/temp-dir.js';
import { IIS, KEP_EXAMPLE_CREDENTIAL_SPEC, windowsContainerConfig, windowsPodConfig } from './windows-support.js';
import { fileURLToPath } from 'node:url';
import { createCriClient, unaryCall } from '../../src/cri/proto.js';
import { DirectoryClusterSource } from '../../src/apiserver/cluster.js';
import { listNodePods } from '../../src/kubelet/node-pods.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { StaticPodSyncLoop } from '../../src/kubelet/static-pods.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));
const staticPod = `apiVersion: v1
kind: Pod
metadata:
  name: adopted
  namespace: default
spec:
  containers:
    - name: main
      image: mcr.microsoft.com/windows/nanoserver:ltsc2022
      command: ["ping", "-t", "localhost"]
`;

const text = (s: string): string => s.replace(/\r\n/g, '\n').trimEnd();
const NGINX = 'registry.k8s.io/e2e-test-images/nginx:1.14-2';
const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

/**
 * GET, retried for up to 10 s while a listener comes up (on a busy machine the runtime may take
 * more than the 2 s that 20 quick retries give); the status, the Server header and the body.
 */
async function get(url: string): Promise<{ status: number; server: string; body: string }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      return { status: res.status, server: res.headers.get('server') ?? '', body: await res.text() };
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The error code of a TCP connect to host:port ('' when it connects). */
function connectError(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('runtime restart on the same state dir (durable metadata)', function () {
  this.timeout(120_000);
  const dir = tempDirPerTest('cri-winsim-restart-');
  let rt: RuntimeHandle | undefined;
  // One pod range for every start of a test: a reloaded IP must be compared within the same range.
  let podCidr = '';
  beforeEach(() => {
    podCidr = testPodCidr();
  });
  const start = async (args: string[] = []): Promise<RuntimeHandle> => (rt = await startRuntime({ dir: dir(), args: ['--pod-cidr', podCidr, ...args] }));
  afterEach(async () => {
    await rt?.stop();
    rt = undefined;
  });
  before(function () {
    requireCriTool(this, 'crictl');
  });

  interface Setup {
    podId: string;
    runningId: string;
    createdId: string;
    files: { pod: string; created: string };
  }

  async function setUp(r: RuntimeHandle): Promise<Setup> {
    const logs = join(dir(), 'pod-logs');
    mkdirSync(logs, { recursive: true });
    const security = { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
    const files = { pod: join(dir(), 'pod.json'), web: join(dir(), 'web.json'), created: join(dir(), 'later.json') };
    writeFileSync(files.pod, JSON.stringify(windowsPodConfig('restart-gmsa', logs, security)));
    writeFileSync(files.web, JSON.stringify(windowsContainerConfig('iis', IIS, security)));
    // Not the image's IIS: the running one serves port 80 of the pod IP already.
    writeFileSync(files.created, JSON.stringify(windowsContainerConfig('later', IIS, security, ['ping', '-t', 'localhost'])));
    await runCrictl(r, ['pull', IIS]);
    const podId = (await runCrictl(r, ['runp', files.pod])).stdout.trim();
    const runningId = (await runCrictl(r, ['create', podId, files.web, files.pod])).stdout.trim();
    await runCrictl(r, ['start', runningId]);
    const createdId = (await runCrictl(r, ['create', podId, files.created, files.pod])).stdout.trim();
    return { podId, runningId, createdId, files };
  }

  const stagedFiles = (): string[] => {
    try {
      return readdirSync(join(dir(), 'state', 'CredentialSpecs')).filter((n) => n.startsWith('k8s-cred-spec-'));
    } catch {
      return [];
    }
  };

  for (const how of ['SIGKILL', 'SIGTERM'] as const) {
    it(`after ${how}: pods, containers, images, IPs, start times and the gMSA identity are back`, async () => {
      const first = await start();
      const s = await setUp(first);
      const podBefore = await crictlJson(first, ['inspectp', s.podId]);
      const runningBefore = await crictlJson(first, ['inspect', s.runningId]);
      const imagesBefore = await crictlJson(first, ['images', '-o', 'json']);
      expect(stagedFiles()).to.have.length(1);
      if (how === 'SIGKILL') await first.kill();
      else await first.stop();
      rt = undefined;

      const second = await start();
      expect(second.output()).to.contain('runtime state recovered');
      const pods = await crictlJson(second, ['pods', '-o', 'json']);
      expect(pods.items.map((p: { id: string; state: string }) => [p.id, p.state])).to.deep.equal([[s.podId, 'SANDBOX_READY']]);
      const podAfter = await crictlJson(second, ['inspectp', s.podId]);
      expect(podAfter.status.network.ip).to.equal(podBefore.status.network.ip);
      expect(podAfter.status.createdAt).to.equal(podBefore.status.createdAt);
      const ps = await crictlJson(second, ['ps', '-a', '-o', 'json']);
      const states = Object.fromEntries(ps.containers.map((c: { id: string; state: string }) => [c.id, c.state]));
      expect(states).to.deep.equal({ [s.runningId]: 'CONTAINER_RUNNING', [s.createdId]: 'CONTAINER_CREATED' });
      const runningAfter = await crictlJson(second, ['inspect', s.runningId]);
      expect(runningAfter.status.startedAt).to.equal(runningBefore.status.startedAt);
      expect(runningAfter.status.createdAt).to.equal(runningBefore.status.createdAt);
      expect((await crictlJson(second, ['images', '-o', 'json'])).images).to.deep.equal(imagesBefore.images);
      expect(text((await runCrictl(second, ['exec', '-s', s.runningId, 'whoami'])).stdout)).to.equal('user manager\\containeruser');
      // The created container's credential spec survived the start-up sweep, and it starts with it.
      expect(stagedFiles()).to.have.length(1);
      await runCrictl(second, ['start', s.createdId]);
      expect(stagedFiles()).to.deep.equal([]);
      expect(text((await runCrictl(second, ['exec', '-s', s.createdId, 'whoami'])).stdout)).to.equal('user manager\\containeruser');
      // A new sandbox does not get an IP a reloaded one has.
      const other = join(dir(), 'other.json');
      writeFileSync(other, JSON.stringify(windowsPodConfig('restart-other', join(dir(), 'pod-logs'))));
      const otherId = (await runCrictl(second, ['runp', other])).stdout.trim();
      expect((await crictlJson(second, ['inspectp', otherId])).status.network.ip).to.not.equal(podBefore.status.network.ip);
    });
  }

  interface ServingPod {
    podId: string;
    webId: string;
    boxId: string;
    podIp: string;
    hostPort: number;
    files: { pod: string; web: string };
  }

  /** A Linux pod with a host port: nginx serving port 80 of the pod IP, and a busybox that sleeps. */
  async function setUpServing(r: RuntimeHandle): Promise<ServingPod> {
    const hostPort = await freePort();
    const files = { pod: join(dir(), 'web-pod.json'), web: join(dir(), 'nginx.json'), box: join(dir(), 'box.json') };
    writeFileSync(files.pod, JSON.stringify({
      metadata: { name: 'web', namespace: 'restart', uid: 'uid-web', attempt: 0 },
      log_directory: join(dir(), 'web-logs'),
      port_mappings: [{ protocol: 0, container_port: 80, host_port: hostPort, host_ip: '' }],
    }));
    writeFileSync(files.web, JSON.stringify({ metadata: { name: 'nginx' }, image: { image: NGINX }, log_path: 'nginx.log' }));
    writeFileSync(files.box, JSON.stringify({ metadata: { name: 'box' }, image: { image: BUSYBOX }, command: ['sleep', '3600'], log_path: 'box.log' }));
    await runCrictl(r, ['pull', NGINX]);
    await runCrictl(r, ['pull', BUSYBOX]);
    const podId = (await runCrictl(r, ['runp', files.pod])).stdout.trim();
    const webId = (await runCrictl(r, ['create', podId, files.web, files.pod])).stdout.trim();
    await runCrictl(r, ['start', webId]);
    const boxId = (await runCrictl(r, ['create', podId, files.box, files.pod])).stdout.trim();
    await runCrictl(r, ['start', boxId]);
    const podIp = (await crictlJson(r, ['inspectp', podId])).status.network.ip as string;
    expect(podIp.startsWith(podCidr.split('.').slice(0, 2).join('.') + '.')).to.equal(true);
    return { podId, webId, boxId, podIp, hostPort, files };
  }

  for (const how of ['SIGKILL', 'SIGTERM'] as const) {
    it(`after ${how}: the pod keeps its IP and host port, nginx serves again, exec works with and without -s`, async () => {
      const first = await start();
      const p = await setUpServing(first);
      expect((await get(`http://127.0.0.1:${p.hostPort}/`)).body).to.contain('Welcome to nginx!');
      if (how === 'SIGKILL') await first.kill();
      else await first.stop();
      rt = undefined;
      // The runtime is gone: nothing listens on the host port or the pod IP.
      expect(await connectError('127.0.0.1', p.hostPort)).to.equal('ECONNREFUSED');

      const second = await start();
      expect((await crictlJson(second, ['inspectp', p.podId])).status.network.ip).to.equal(p.podIp);
      const viaHostPort = await get(`http://127.0.0.1:${p.hostPort}/`);
      expect([viaHostPort.status, viaHostPort.server]).to.deep.equal([200, 'nginx/1.14.2']);
      expect((await get(`http://${p.podIp}/`)).body).to.contain('Welcome to nginx!');
      // crictl prints ExecSync's stdout and stderr with a newline each.
      expect(text((await runCrictl(second, ['exec', '-s', p.boxId, 'hostname'])).stdout)).to.equal('web');
      expect((await runCrictl(second, ['exec', p.boxId, 'echo', 'streamed'])).stdout).to.equal('streamed\n');
      expect((await runCrictl(second, ['exec', p.webId, 'nginx', '-v'])).stderr).to.contain('nginx version: nginx/1.14.2');
      // The reloaded sandbox still holds its IP: the allocator starts again at the bottom of the range
      // and skips it …
      const others: string[] = [];
      for (const n of ['a', 'b']) {
        const file = join(dir(), `other-${n}.json`);
        writeFileSync(file, JSON.stringify({ metadata: { name: `other-${n}`, namespace: 'restart', uid: `uid-other-${n}`, attempt: 0 }, log_directory: join(dir(), `other-${n}`) }));
        const id = (await runCrictl(second, ['runp', file])).stdout.trim();
        others.push((await crictlJson(second, ['inspectp', id])).status.network.ip);
      }
      expect(others).to.not.include(p.podIp);
      expect(new Set(others).size).to.equal(2);
      // … and its host port: another pod asking for it fails with the portmap text.
      const rival = join(dir(), 'rival.json');
      writeFileSync(rival, JSON.stringify({
        metadata: { name: 'rival', namespace: 'restart', uid: 'uid-rival', attempt: 0 },
        log_directory: join(dir(), 'rival-logs'),
        port_mappings: [{ protocol: 0, container_port: 80, host_port: p.hostPort, host_ip: '' }],
      }));
      const taken = await runCrictl(second, ['runp', rival], { check: false });
      expect(taken.stderr).to.contain(`cannot open hostport ${p.hostPort} for pod rival_restart_uid-rival_0: listen tcp4 127.0.0.1:${p.hostPort}: bind: address already in use`);
      // StopPodSandbox frees what recovery took back.
      await runCrictl(second, ['stopp', p.podId]);
      expect(await connectError('127.0.0.1', p.hostPort)).to.equal('ECONNREFUSED');
      expect(await connectError(p.podIp, 80)).to.equal('ECONNREFUSED');
    });
  }

  it('--simulate-reboot: no listener comes back; the host port is free for a new pod', async () => {
    const first = await start();
    const p = await setUpServing(first);
    await first.kill();
    rt = undefined;
    const second = await start(['--simulate-reboot']);
    const web = await crictlJson(second, ['inspect', p.webId]);
    expect([web.status.state, web.status.exitCode, web.status.reason]).to.deep.equal(['CONTAINER_EXITED', 255, 'Unknown']);
    expect(await connectError('127.0.0.1', p.hostPort)).to.equal('ECONNREFUSED');
    expect(await connectError(p.podIp, 80)).to.equal('ECONNREFUSED');
    const exec = await runCrictl(second, ['exec', '-s', p.boxId, 'hostname'], { check: false });
    expect(exec.stderr).to.contain(`container ${p.boxId} is in CONTAINER_EXITED state: exec needs a running container`);
    // The kubelet's way after a reboot: a new sandbox (attempt 1) for the pod takes the host port.
    const again = join(dir(), 'web-pod-1.json');
    writeFileSync(again, readFileSync(p.files.pod, 'utf8').replace('"attempt":0', '"attempt":1'));
    const podId = (await runCrictl(second, ['runp', again])).stdout.trim();
    const web1 = join(dir(), 'nginx-1.json');
    writeFileSync(web1, JSON.stringify({ metadata: { name: 'nginx', attempt: 1 }, image: { image: NGINX }, log_path: 'nginx-1.log' }));
    const webId = (await runCrictl(second, ['create', podId, web1, again])).stdout.trim();
    await runCrictl(second, ['start', webId]);
    expect((await get(`http://127.0.0.1:${p.hostPort}/`)).body).to.contain('Welcome to nginx!');
  });

  it('--simulate-reboot: containers EXITED with 255/Unknown, sandboxes NOTREADY, no credential spec left', async () => {
    const first = await start();
    const s = await setUp(first);
    await first.kill();
    rt = undefined;
    const second = await start(['--simulate-reboot']);
    const pods = await crictlJson(second, ['pods', '-o', 'json']);
    expect(pods.items.map((p: { state: string }) => p.state)).to.deep.equal(['SANDBOX_NOTREADY']);
    for (const id of [s.runningId, s.createdId]) {
      const c = await crictlJson(second, ['inspect', id]);
      expect([c.status.state, c.status.exitCode, c.status.reason]).to.deep.equal(['CONTAINER_EXITED', 255, 'Unknown']);
    }
    // The created container's credential spec stays until RemoveContainer (its record names it) …
    expect(stagedFiles()).to.have.length(1);
    await runCrictl(second, ['rm', s.createdId]);
    // … and goes with it.
    expect(stagedFiles()).to.deep.equal([]);
  });

  it('a record the store cannot read is logged with its id and skipped; the others load', async () => {
    const first = await start();
    const s = await setUp(first);
    await first.stop();
    rt = undefined;
    const db = new Database(join(dir(), 'state', 'metadata.db'));
    db.prepare("UPDATE records SET data = '{not json' WHERE kind = 'container' AND id = ?").run(s.createdId);
    db.close();
    const second = await start();
    expect(second.output()).to.contain(s.createdId).and.to.contain('skipped a stored record the runtime cannot read');
    const ps = await crictlJson(second, ['ps', '-a', '-o', 'json']);
    expect(ps.containers.map((c: { id: string }) => c.id)).to.deep.equal([s.runningId]);
  });

  // containerd v2 (internal/cri/server/update_runtime_config.go) writes the kubelet's pod CIDR
  // into a CNI config file in its conf dir; the restarted containerd loads that file, so the range
  // survives a restart. Ours keeps it in the metadata store; a non-loopback range stays recorded
  // and unused, as before the restart.
  for (const how of ['SIGKILL', 'SIGTERM'] as const) {
    it(`after ${how}: the pod CIDR UpdateRuntimeConfig set is kept over --pod-cidr; --ephemeral forgets it`, async () => {
      let updated = testPodCidr();
      while (updated === podCidr) updated = testPodCidr();
      const prefix = (cidr: string): string => cidr.split('.').slice(0, 3).join('.');
      const first = await start();
      const cri = createCriClient(first.endpoint);
      try {
        await unaryCall(cri.runtime, 'UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: updated } } });
        await unaryCall(cri.runtime, 'UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: '10.244.1.0/24' } } });
      } finally {
        cri.close();
      }
      const podFile = (name: string): string => {
        const file = join(dir(), `${name}.json`);
        writeFileSync(file, JSON.stringify({ metadata: { name, namespace: 'restart', uid: `uid-${name}`, attempt: 0 }, log_directory: join(dir(), `${name}-logs`) }));
        return file;
      };
      const kept = (await runCrictl(first, ['runp', podFile('kept')])).stdout.trim();
      const keptIp = (await crictlJson(first, ['inspectp', kept])).status.network.ip as string;
      expect(keptIp).to.equal(`${prefix(updated)}.2`);
      if (how === 'SIGKILL') await first.kill();
      else await first.stop();
      rt = undefined;

      const second = await start();
      expect((await crictlJson(second, ['info'])).config).to.include({ podCidr: updated, kubeletPodCidr: '10.244.1.0/24' });
      expect((await crictlJson(second, ['inspectp', kept])).status.network.ip).to.equal(keptIp);
      // The pool comes back with the reloaded sandbox's address taken.
      const next = (await runCrictl(second, ['runp', podFile('next')])).stdout.trim();
      expect((await crictlJson(second, ['inspectp', next])).status.network.ip).to.equal(`${prefix(updated)}.3`);
      await second.stop();
      rt = undefined;

      const ephemeral = await start(['--ephemeral']);
      const config = (await crictlJson(ephemeral, ['info'])).config;
      expect(config.podCidr).to.equal(podCidr);
      expect(config).to.not.have.property('kubeletPodCidr');
    });
  }

  it('a stored pod CIDR the runtime cannot read is logged and skipped: --pod-cidr is used', async () => {
    const first = await start();
    const cri = createCriClient(first.endpoint);
    try {
      await unaryCall(cri.runtime, 'UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: '127.99.0.0/16' } } });
    } finally {
      cri.close();
    }
    await first.stop();
    rt = undefined;
    const db = new Database(join(dir(), 'state', 'metadata.db'));
    const row = db.prepare("SELECT data FROM records WHERE kind = 'meta' AND id = 'network'").get() as { data: string };
    expect(JSON.parse(row.data)).to.deep.equal({ v: 1, id: 'network', podCidr: '127.99.0.0/16', kubeletPodCidr: '' });
    db.prepare("UPDATE records SET data = ? WHERE kind = 'meta' AND id = 'network'").run(JSON.stringify({ v: 1, id: 'network', podCidr: '127.99.0.0/33', kubeletPodCidr: '' }));
    db.close();
    const second = await start();
    expect(second.output()).to.contain('skipped a stored record the runtime cannot read').and.to.contain('pod CIDR \\"127.99.0.0/33\\" is not an IPv4 CIDR');
    expect((await crictlJson(second, ['info'])).config.podCidr).to.equal(podCidr);
  });

  it('the state dir is 0700 and a symlink planted as the database is refused', async () => {
    const first = await start();
    expect(statSync(join(dir(), 'state')).mode & 0o777).to.equal(0o700);
    await first.stop();
    rt = undefined;
    const stateDir = join(dir(), 'state2');
    mkdirSync(stateDir, { mode: 0o700 });
    writeFileSync(join(dir(), 'elsewhere'), '');
    symlinkSync(join(dir(), 'elsewhere'), join(stateDir, 'metadata.db'));
    const failed = await startRuntime({ dir: dir(), args: ['--state-dir', stateDir] }).then(
      (r) => { rt = r; return ''; },
      (err: Error) => err.message,
    );
    expect(failed).to.contain('metadata.db is a symlink');
  });

  for (const [how, reboot] of [['SIGKILL', false], ['SIGTERM', false], ['SIGKILL and --simulate-reboot', true]] as const) {
    it(`the static-pod loop adopts the runtime's pod after ${how} instead of creating another`, async () => {
      const manifests = join(dir(), 'manifests');
      mkdirSync(manifests);
      writeFileSync(join(manifests, 'adopted.yaml'), staticPod);
      const loopOn = (r: RuntimeHandle) => {
        const cri = createCriClient(r.endpoint);
        const loop = new StaticPodSyncLoop(cri, {
          manifestDir: manifests,
          cluster: new DirectoryClusterSource(join(examples, 'cluster')),
          user: requestingUser('alice'),
          podLogsRoot: join(dir(), 'pods'),
          gracePeriodSeconds: 1,
        });
        return { cri, loop };
      };
      const first = await start();
      const a = loopOn(first);
      try {
        expect((await a.loop.syncOnce()).started).to.deep.equal(['default/adopted']);
      } finally {
        a.cri.close();
      }
      const before = await crictlJson(first, ['pods', '-o', 'json']);
      if (how.startsWith('SIGKILL')) await first.kill();
      else await first.stop();
      rt = undefined;
      const second = await start(reboot ? ['--simulate-reboot'] : []);
      const b = loopOn(second);
      try {
        const report = await b.loop.syncOnce();
        const pods = await listNodePods(b.cri);
        expect(pods.map((p) => [p.name, p.sandboxReady, p.containers.map((c) => c.state)])).to.deep.equal([['adopted', true, ['Running']]]);
        if (reboot) {
          // A new sandbox and container, the old NOTREADY one removed: still one pod.
          expect(report.started).to.deep.equal(['default/adopted']);
          expect(pods[0]!.sandboxId).to.not.equal(before.items[0].id);
        } else {
          expect(report.started).to.deep.equal([]);
          expect(pods[0]!.sandboxId).to.equal(before.items[0].id);
        }
        expect((await crictlJson(second, ['pods', '-o', 'json'])).items).to.have.length(1);
      } finally {
        b.cri.close();
      }
    });
  }

  it('bounded crash test: SIGKILL between and during the RPCs of GMSA lifecycles; state matches the model after each restart', async function () {
    const seed = Number(process.env['CRASH_SEED'] ?? Date.now() % 1_000_000);
    // A handful here; `npm run soak` runs 10,000 (CRASH_ROUNDS).
    const rounds = Number(process.env['CRASH_ROUNDS'] ?? 40);
    const lanes = Number(process.env['CRASH_LANES'] ?? 3);
    this.timeout(120_000 + rounds * 2_000);
    const figures = await runCrashRounds({ dir: dir(), seed, rounds, lanes });
    expect(figures.killedDuringAnRpc + figures.killedBetweenRpcs).to.equal(rounds);
    // The kill lands inside an RPC in a fair share of the rounds (a third in the runs so far; with
    // 40 rounds, 2 or fewer such kills has a chance of about 1 in 50,000).
    if (rounds >= 40) expect(figures.killedDuringAnRpc, 'kills during an RPC').to.be.above(rounds / 20);
    if (process.env['CRASH_REPORT'] !== undefined) console.log(JSON.stringify(figures));
  });
});
