// A durable runtime (the default of `cri-winsim runtime`) restarted on the same --state-dir, after
// SIGKILL and after SIGTERM, driven by the real crictl: pods, containers and images come back,
// a running container keeps running with its start time and identity, a created one still starts
// with its credential spec. `--simulate-reboot` exits every container with containerd's
// 255/Unknown (containerd v2.2.7 internal/cri/server/restart.go).
import { expect } from 'chai';
import { mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { prng } from '../support/seeded-random.js';
import { tempDirPerTest } from '../support/temp-dir.js';
import { IIS, KEP_EXAMPLE_CREDENTIAL_SPEC, windowsContainerConfig, windowsPodConfig } from './windows-support.js';
import { fileURLToPath } from 'node:url';
import { createCriClient } from '../../src/cri/proto.js';
import { DirectoryClusterSource } from '../../src/kubelet/cluster.js';
import { listNodePods } from '../../src/kubelet/node-pods.js';
import { requestingUser } from '../../src/kubelet/rbac.js';
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

describe('runtime restart on the same state dir (durable metadata)', function () {
  this.timeout(120_000);
  const dir = tempDirPerTest('cri-winsim-restart-');
  let rt: RuntimeHandle | undefined;
  const start = async (args: string[] = []): Promise<RuntimeHandle> => (rt = await startRuntime({ dir: dir(), args }));
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
    writeFileSync(files.created, JSON.stringify(windowsContainerConfig('later', IIS, security)));
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
    const rounds = Number(process.env['CRASH_ROUNDS'] ?? 24);
    this.timeout(60_000 + rounds * 15_000);
    const random = prng(seed);
    const logs = join(dir(), 'pod-logs');
    mkdirSync(logs, { recursive: true });
    const security = { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
    const steps = ['runp', 'create', 'start', 'stop', 'rm', 'stopp', 'rmp'] as const;
    // The model: what the pod and container are after the first n steps were answered.
    const podAfter = (n: number): string | undefined => (n === 0 || n === 7 ? undefined : n <= 5 ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY');
    const ctrAfter = (n: number): string | undefined => (n <= 1 || n >= 5 ? undefined : ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED'][n - 2]);
    const started = Date.now();
    let midCall = 0;
    try {
      let r = await start();
      await runCrictl(r, ['pull', IIS]);
      for (let round = 0; round < rounds; round++) {
        const pod = join(dir(), `pod-${round}.json`);
        const ctr = join(dir(), `ctr-${round}.json`);
        writeFileSync(pod, JSON.stringify(windowsPodConfig(`crash-${round}`, logs, security)));
        writeFileSync(ctr, JSON.stringify(windowsContainerConfig('iis', IIS, security)));
        const answered = Math.floor(random() * steps.length) + 1;
        const ids = { pod: '', ctr: '' };
        const run = async (step: (typeof steps)[number]): Promise<void> => {
          const args = { runp: ['runp', pod], create: ['create', ids.pod, ctr, pod], start: ['start', ids.ctr], stop: ['stop', ids.ctr], rm: ['rm', ids.ctr], stopp: ['stopp', ids.pod], rmp: ['rmp', ids.pod] }[step];
          const out = (await runCrictl(r, args)).stdout.trim();
          if (step === 'runp') ids.pod = out;
          if (step === 'create') ids.ctr = out;
        };
        for (let i = 0; i < answered; i++) await run(steps[i]!);
        // Half the rounds kill the runtime while the next RPC is in flight.
        const inFlight = answered < steps.length && ids.pod !== '' && random() < 0.5 ? steps[answered]! : undefined;
        let flight: Promise<void> | undefined;
        if (inFlight !== undefined && !(inFlight === 'create' && ids.pod === '')) {
          flight = run(inFlight).catch(() => undefined);
          await new Promise((res) => setTimeout(res, Math.floor(random() * 40)));
          midCall++;
        }
        await r.kill();
        await flight;
        rt = undefined;
        r = await start();
        const where = `round ${round}: killed after ${steps[answered - 1]}${flight ? ` during ${inFlight}` : ''}`;
        const allowed = flight ? [answered, answered + 1] : [answered];
        const pods = (await crictlJson(r, ['pods', '-o', 'json'])).items.filter((p: { id: string }) => p.id === ids.pod).map((p: { state: string }) => p.state);
        const ctrs = ids.ctr === '' ? [] : (await crictlJson(r, ['ps', '-a', '-o', 'json'])).containers.filter((c: { id: string }) => c.id === ids.ctr).map((c: { state: string }) => c.state);
        const observed = JSON.stringify([pods, ctrs]);
        const models = allowed.map((n) => JSON.stringify([podAfter(n) === undefined ? [] : [podAfter(n)], ctrAfter(n) === undefined || ids.ctr === '' ? [] : [ctrAfter(n)]]));
        expect(models, `${where}: state ${observed}`).to.include(observed);
        // Every sandbox and container on the node is one of this round's (none lost, none doubled).
        expect((await crictlJson(r, ['pods', '-o', 'json'])).items, where).to.have.length(pods.length);
        // No credential spec file that no record names: one at most, and only for a CREATED container.
        expect(stagedFiles().length, `${where}: credential spec files`).to.be.at.most(ctrs[0] === 'CONTAINER_CREATED' ? 1 : 0);
        if (pods.length > 0) {
          await runCrictl(r, ['stopp', ids.pod]);
          await runCrictl(r, ['rmp', ids.pod]);
        }
        expect(stagedFiles(), `${where}: after removing the pod`).to.deep.equal([]);
      }
      if (process.env['CRASH_REPORT'] !== undefined) {
        console.log(JSON.stringify({ seed, rounds, killedDuringAnRpc: midCall, restarts: rounds, seconds: Math.round((Date.now() - started) / 1000) }));
      }
    } catch (err) {
      throw new Error(`crash test failed; run again with CRASH_SEED=${seed} CRASH_ROUNDS=${rounds}: ${(err as Error).message}`, { cause: err });
    }
  });
});
