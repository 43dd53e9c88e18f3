import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { DirectoryClusterSource } from '../../src/kubelet/cluster.js';
import { listNodePods } from '../../src/kubelet/node-pods.js';
import { requestingUser } from '../../src/kubelet/rbac.js';
import { shouldRestart, StaticPodSyncLoop, type SyncReport } from '../../src/kubelet/static-pods.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));

const podYaml = (name: string, command: string[], restartPolicy = 'Always', namespace = 'default', extra = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${namespace}
spec:
  restartPolicy: ${restartPolicy}
${extra}  containers:
    - name: main
      image: mcr.microsoft.com/windows/nanoserver:ltsc2022
      command: ${JSON.stringify(command)}
`;

describe('restartPolicy', () => {
  const cases: [string, number, boolean][] = [
    ['Always', 0, true],
    ['Always', 1, true],
    ['OnFailure', 0, false],
    ['OnFailure', 1, true],
    ['Never', 1, false],
  ];
  for (const [policy, exitCode, expected] of cases) {
    it(`${policy} ${expected ? 'restarts' : 'does not restart'} after exit ${exitCode}`, () => {
      expect(shouldRestart({ spec: { restartPolicy: policy, containers: [] } }, exitCode)).to.equal(expected);
    });
  }
});

describe('static pod sync loop against the cri-winsim runtime', function () {
  this.timeout(60_000);
  let runtime: RuntimeHandle;
  let cri: CriClient;
  let manifests: string;
  let clock: number;
  let loop: StaticPodSyncLoop;

  beforeEach(async () => {
    runtime = await startRuntime();
    cri = createCriClient(runtime.endpoint);
    manifests = await mkdtemp(join(tmpdir(), 'winsim-static-'));
    clock = 1_000_000;
    loop = new StaticPodSyncLoop(cri, {
      manifestDir: manifests,
      cluster: new DirectoryClusterSource(join(examples, 'cluster')),
      user: requestingUser('alice'),
      podLogsRoot: join(runtime.dir, 'pods'),
      backoffInitialMs: 10_000,
      gracePeriodSeconds: 1,
      intervalMs: 50,
      pollIntervalMs: 10,
      now: () => clock,
    });
  });
  afterEach(async () => {
    cri?.close();
    await runtime?.stop();
    await rm(manifests, { recursive: true, force: true });
  });

  /** Waits (bounded) until every container of the named pod has exited. */
  async function exited(name: string): Promise<void> {
    for (let i = 0; i < 100; i++) {
      const pod = (await listNodePods(cri)).find((p) => p.name === name);
      if (pod !== undefined && pod.containers.length > 0 && pod.containers.every((c) => c.state === 'Exited')) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`containers of ${name} did not exit`);
  }
  const row = (report: SyncReport, name: string) => report.pods.find((p) => p.name === name);

  it('starts new pods, restarts a crashing one with back-off, and leaves Never pods exited', async () => {
    await writeFile(join(manifests, 'crash.yaml'), podYaml('crash', ['cmd', '/c', 'exit 1']));
    await writeFile(join(manifests, 'once.yaml'), podYaml('once', ['cmd', '/c', 'exit 3'], 'Never'));
    await writeFile(join(manifests, 'pinger.yaml'), podYaml('pinger', ['ping', '-t', 'localhost']));
    await writeFile(join(manifests, 'notes.txt'), 'not a pod');

    const first = await loop.syncOnce();
    expect(first.started).to.deep.equal(['default/crash', 'default/once', 'default/pinger']);
    expect(row(first, 'pinger')).to.deep.include({ ready: '1/1', status: 'Running', restarts: 0 });

    await exited('crash');
    await exited('once');
    const second = await loop.syncOnce();
    expect(second.started).to.deep.equal([]);
    expect(second.restarted).to.deep.equal(['default/crash']);
    expect(second.events.filter((e) => e.reason === 'BackOff').map((e) => e.pod)).to.deep.equal(['default/crash']);
    expect(row(second, 'once')).to.deep.include({ status: 'Error', restarts: 0 });

    await exited('crash');
    const third = await loop.syncOnce();
    expect(third.restarted).to.deep.equal([]);
    expect(row(third, 'crash')).to.deep.include({ ready: '0/1', status: 'CrashLoopBackOff', restarts: 1 });

    clock += 10_000;
    const fourth = await loop.syncOnce();
    expect(fourth.restarted).to.deep.equal(['default/crash']);
    expect(row(fourth, 'crash')!.restarts).to.equal(2);
  });

  // pkg/kubelet/config/file.go (kubernetes v1.34.12): a static pod runs as its file is written;
  // no API admission and no windows-gmsa webhook sees it, so nothing inlines the credential spec.
  it('runs a static pod with a gmsaCredentialSpecName and no inlined spec without a credential spec, restarts included', async () => {
    const gmsa = '  serviceAccountName: webapp\n  securityContext:\n    windowsOptions:\n      gmsaCredentialSpecName: webapplication1\n';
    await writeFile(join(manifests, 'gmsa.yaml'), podYaml('gmsa-crash', ['cmd', '/c', 'exit 1'], 'Always', 'contoso-apps', gmsa));
    expect((await loop.syncOnce()).started).to.deep.equal(['contoso-apps/gmsa-crash']);
    await exited('gmsa-crash');
    expect((await loop.syncOnce()).restarted).to.deep.equal(['contoso-apps/gmsa-crash']);
    const pod = (await listNodePods(cri)).find((p) => p.name === 'gmsa-crash')!;
    expect(pod.containers).to.have.length(2);
    for (const container of pod.containers) {
      // The runtime's verbose status echoes the config it was given (crictl inspect shows it).
      const status = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: container.id, verbose: true });
      expect(JSON.stringify(status.info)).not.to.include('WebApplication1');
    }
  });

  it('keeps the app container waiting while a failing init container backs off', async () => {
    const init = '  initContainers:\n    - name: setup\n      image: mcr.microsoft.com/windows/nanoserver:ltsc2022\n      command: ["cmd", "/c", "exit 2"]\n';
    await writeFile(join(manifests, 'init.yaml'), podYaml('init', ['ping', '-t', 'localhost'], 'Always', 'default', init));
    const first = await loop.syncOnce();
    expect(row(first, 'init')).to.deep.include({ ready: '0/1', status: 'Init:Error' });
    // The first restart is immediate; it starts the back-off.
    const second = await loop.syncOnce();
    expect(second.restarted).to.deep.equal(['default/init']);
    await exited('init');
    const third = await loop.syncOnce();
    expect(row(third, 'init')).to.deep.include({ ready: '0/1', status: 'Init:CrashLoopBackOff', restarts: 1 });
    const pod = (await listNodePods(cri)).find((p) => p.name === 'init')!;
    expect(pod.containers.map((c) => c.name)).to.deep.equal(['setup', 'setup']);
  });

  it('backs off a pull that fails: ImagePullBackOff, retried after the delay', async () => {
    await writeFile(join(manifests, 'nope.yaml'), podYaml('nope', ['ping', '-t', 'localhost']).replace('mcr.microsoft.com/windows/nanoserver:ltsc2022', 'registry.invalid/nope:1'));
    const first = await loop.syncOnce();
    expect(first.events.find((e) => e.reason === 'Failed')!.message).to.match(/^Failed to pull image "registry.invalid\/nope:1": rpc error: code = /);
    expect(row(first, 'nope')).to.deep.include({ ready: '0/1', status: 'ImagePullBackOff' });
    const second = await loop.syncOnce();
    expect(second.events.filter((e) => e.reason === 'Pulling')).to.deep.equal([]);
    clock += 10_000;
    const third = await loop.syncOnce();
    expect(third.events.filter((e) => e.reason === 'Pulling')).to.have.length(1);
    expect(row(third, 'nope')).to.deep.include({ status: 'ImagePullBackOff' });
  });

  it('removes a pod whose file is deleted and replaces one whose file changed', async () => {
    await writeFile(join(manifests, 'a.yaml'), podYaml('a', ['ping', '-t', 'localhost']));
    await writeFile(join(manifests, 'b.yaml'), podYaml('b', ['ping', '-t', 'localhost']));
    await loop.syncOnce();
    const before = await listNodePods(cri);
    const uidOfB = before.find((p) => p.name === 'b')!.uid;

    await rm(join(manifests, 'a.yaml'));
    await writeFile(join(manifests, 'b.yaml'), podYaml('b', ['ping', '-n', '100', 'localhost']));
    const report = await loop.syncOnce();
    expect([...report.deleted].sort()).to.deep.equal(['default/a', 'default/b']);
    expect(report.started).to.deep.equal(['default/b']);
    const after = await listNodePods(cri);
    expect(after.map((p) => p.name)).to.deep.equal(['b']);
    expect(after[0]!.uid).not.to.equal(uidOfB);
  });

  // The kubelet's checks are all a static pod meets: its own validation of the file
  // (pkg/kubelet/config/common.go) and its admit handlers (pkg/kubelet/lifecycle/predicate.go,
  // kubernetes v1.34.12). The webhook's service-account check is never reached.
  it("refuses only what the kubelet itself refuses; the webhook's refusals do not apply", async () => {
    await writeFile(
      join(manifests, 'sa.yaml'),
      podYaml('reporting', ['ping', '-t', 'localhost'], 'Always', 'contoso-apps', '  serviceAccountName: reporting\n  securityContext:\n    windowsOptions:\n      gmsaCredentialSpecName: webapplication1\n'),
    );
    await writeFile(join(manifests, 'broken.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: { name: broken }\nspec: { containers: [{ name: x }] }\n');
    await writeFile(join(manifests, 'linux.yaml'), podYaml('linux-pod', ['ping', '-t', 'localhost'], 'Always', 'default', '  os: { name: linux }\n'));
    const report = await loop.syncOnce();
    expect(report.started).to.deep.equal(['contoso-apps/reporting']);
    expect(report.refused).to.deep.equal([
      `${join(manifests, 'broken.yaml')}: document 1: spec.containers[0].image: Required value`,
      "default/linux-pod: PodOSNotSupported: Failed to admit pod as the OS field doesn't match node OS",
    ]);
    expect((await listNodePods(cri)).map((p) => p.name)).to.deep.equal(['reporting']);
  });

  it('run() passes until aborted', async () => {
    await writeFile(join(manifests, 'a.yaml'), podYaml('a', ['ping', '-t', 'localhost']));
    const controller = new AbortController();
    const reports: (SyncReport | Error)[] = [];
    await loop.run(controller.signal, (r) => {
      reports.push(r);
      if (reports.length === 2) controller.abort();
    });
    expect(reports).to.have.length(2);
    expect((reports[0] as SyncReport).started).to.deep.equal(['default/a']);
    expect((reports[1] as SyncReport).started).to.deep.equal([]);
  });
});

describe('static pod sync loop run(): event-driven, not polling', function () {
  this.timeout(60_000);
  let runtime: RuntimeHandle;
  let cri: CriClient;
  let manifests: string;

  beforeEach(async () => {
    runtime = await startRuntime();
    cri = createCriClient(runtime.endpoint);
    manifests = await mkdtemp(join(tmpdir(), 'winsim-static-watch-'));
  });
  afterEach(async () => {
    cri?.close();
    await runtime?.stop();
    await rm(manifests, { recursive: true, force: true });
  });

  /** Runs the loop with a resync far beyond the test, so only events can drive it. */
  function start(options: { debounceMs: number; backoffInitialMs?: number }) {
    const reports: SyncReport[] = [];
    const errors: Error[] = [];
    const controller = new AbortController();
    const loop = new StaticPodSyncLoop(cri, {
      manifestDir: manifests,
      cluster: new DirectoryClusterSource(join(examples, 'cluster')),
      user: requestingUser('alice'),
      podLogsRoot: join(runtime.dir, 'pods'),
      gracePeriodSeconds: 1,
      pollIntervalMs: 10,
      intervalMs: 600_000,
      debounceMs: options.debounceMs,
      backoffInitialMs: options.backoffInitialMs ?? 10_000,
      backoffMaxMs: 1_000,
    });
    const done = loop.run(controller.signal, (r) => (r instanceof Error ? errors.push(r) : reports.push(r)));
    return { reports, errors, done, stop: () => controller.abort() };
  }

  async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const value = await check();
      if (value !== undefined) return value;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it('a burst of new files is one pass after the debounce', async () => {
    const loop = start({ debounceMs: 400 });
    try {
      await until('the first pass', () => (loop.reports.length >= 1 ? true : undefined));
      await Promise.all(['a', 'b', 'c', 'd'].map((n) => writeFile(join(manifests, `${n}.yaml`), podYaml(n, ['ping', '-t', 'localhost']))));
      const pass = await until('a pass that starts the pods', () => loop.reports.find((r) => r.started.length > 0));
      expect(pass.started).to.deep.equal(['default/a', 'default/b', 'default/c', 'default/d']);
      expect((await listNodePods(cri)).map((p) => p.name)).to.deep.equal(['a', 'b', 'c', 'd']);
    } finally {
      loop.stop();
      await loop.done;
    }
    expect(loop.errors).to.deep.equal([]);
  });

  it('a container exit (GetContainerEvents) and the end of its back-off drive the restarts', async () => {
    const loop = start({ debounceMs: 20, backoffInitialMs: 300 });
    try {
      await writeFile(join(manifests, 'crash.yaml'), podYaml('crash', ['cmd', '/c', 'exit 1']));
      // Restart 1 follows the exit event at once; restarts 2 and 3 follow the back-off timers.
      const pod = await until('three restarts', async () => {
        const found = (await listNodePods(cri)).find((p) => p.name === 'crash');
        return found !== undefined && found.containers.some((c) => c.attempt >= 3) ? found : undefined;
      });
      expect(pod.containers.map((c) => c.attempt).sort()).to.include.members([0, 1, 2, 3]);
      // The pass that made attempt 3 reports when it ends, which may be after the list above.
      const backOffs = () => loop.reports.flatMap((r) => r.events.map((e) => e.reason)).filter((r) => r === 'BackOff').length;
      await until('a BackOff event for each restart', () => (backOffs() >= 3 ? true : undefined));
    } finally {
      loop.stop();
      await loop.done;
    }
  });

  it('stops promptly when aborted, leaving the pods running', async () => {
    await writeFile(join(manifests, 'a.yaml'), podYaml('a', ['ping', '-t', 'localhost']));
    const loop = start({ debounceMs: 20 });
    await until('the pod', () => (loop.reports.some((r) => r.started.length > 0) ? true : undefined));
    const began = Date.now();
    loop.stop();
    await loop.done;
    // Promptly: the resync is 600 s away; what stop() may wait for is the pass under way, whose
    // CRI calls to the runtime process a busy machine can stretch to seconds.
    expect(Date.now() - began).to.be.below(10_000);
    expect((await listNodePods(cri)).map((p) => [p.name, p.containers[0]?.state])).to.deep.equal([['a', 'Running']]);
  });
});
