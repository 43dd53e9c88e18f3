import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { DirectoryClusterSource } from '../../src/apiserver/cluster.js';
import { listNodePods } from '../../src/kubelet/node-pods.js';
import { PodRecordStore } from '../../src/kubelet/pod-records.js';
import { CallConditions } from '../../src/runtime/call-conditions/call-conditions.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { StaticPodSyncLoop, type SyncReport } from '../../src/kubelet/static-pods.js';
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

/** A seed whose StartContainer fault draws (rate 0.5, node WINNODE1) fail, fail, then pass. */
function seedFailingTwice(): number {
  for (let seed = 1; ; seed++) {
    const conditions = new CallConditions({ seed, faults: [{ method: 'StartContainer', code: 'Unknown', rate: 0.5 }] }, 'WINNODE1');
    const fails = [0, 1, 2].map(() => conditions.plan('StartContainer', {}).fault !== undefined);
    if (fails[0] && fails[1] && !fails[2]) return seed;
  }
}

// kubernetes v1.34 pkg/kubelet/kuberuntime: kuberuntime_container.go startContainer (a failed
// StartContainer: event Failed `Error: <message>`, reason RunContainerError), kuberuntime_manager.go
// SyncPod/doBackOff (`back-off <d> restarting failed container=<c> pod=<name>_<ns>(<uid>)`, only
// with an exited container to count from), pkg/kubelet/container/helpers.go
// ShouldContainerBeRestarted (a container left created is started again), pod_workers.go
// completeWork (a failed sync is tried again after backOffPeriod, 10 s).
describe('static pod sync loop: StartContainer failures', function () {
  this.timeout(60_000);
  let runtime: RuntimeHandle | undefined;
  let cri: CriClient | undefined;
  let manifests: string;
  let clock: number;
  afterEach(async () => {
    cri?.close();
    await runtime?.stop();
    await rm(manifests, { recursive: true, force: true });
  });

  async function open(args: string[]): Promise<{ loop: StaticPodSyncLoop; records: PodRecordStore }> {
    runtime = await startRuntime({ args });
    cri = createCriClient(runtime.endpoint);
    manifests = await mkdtemp(join(tmpdir(), 'winsim-static-'));
    clock = 1_000_000;
    const records = new PodRecordStore(join(runtime.dir, 'records'));
    const loop = new StaticPodSyncLoop(cri, {
      manifestDir: manifests,
      cluster: new DirectoryClusterSource(join(examples, 'cluster')),
      user: requestingUser('alice'),
      podLogsRoot: join(runtime.dir, 'pods'),
      records,
      gracePeriodSeconds: 1,
      now: () => clock,
    });
    return { loop, records };
  }
  const waitingOf = async (records: PodRecordStore, name: string) => (await records.list()).find((r) => r.pod.metadata?.name === name)?.containers.main;

  it('an injected StartContainer fault: RunContainerError and a Failed event, then the created container is started again every 10 s until it runs', async () => {
    const seed = seedFailingTwice();
    const { loop, records } = await open(['--inject-fault', 'StartContainer=Unknown:0.5', '--seed', String(seed)]);
    const message = 'fault injected by cri-winsim (--inject-fault StartContainer=Unknown:0.5): StartContainer failed before doing anything';
    await writeFile(join(manifests, 'flaky.yaml'), podYaml('flaky', ['ping', '-t', 'localhost']));

    const first = await loop.syncOnce();
    expect(first.events.map((e) => [e.reason, e.message])).to.deep.include.members([['Created', 'Created container: main'], ['Failed', `Error: ${message}`]]);
    expect(await waitingOf(records, 'flaky')).to.deep.include({ reason: 'RunContainerError', message });
    expect(first.pods.find((p) => p.name === 'flaky')).to.deep.include({ ready: '0/1', status: 'RunContainerError', restarts: 0 });
    // The fault did nothing: the container is left created, no exited one for doBackOff to count.
    expect((await listNodePods(cri!))[0]!.containers.map((c) => c.state)).to.deep.equal(['Created']);

    // Not before the pod worker's 10 s.
    clock += 9_000;
    expect((await loop.syncOnce()).restarted).to.deep.equal([]);
    clock += 1_000;
    const second = await loop.syncOnce();
    expect(second.events.map((e) => e.reason)).to.deep.equal(['Pulled', 'Created', 'Failed']);
    expect(await waitingOf(records, 'flaky')).to.deep.include({ attempt: 1, reason: 'RunContainerError', message });
    expect(second.pods.find((p) => p.name === 'flaky')).to.deep.include({ status: 'RunContainerError', restarts: 1 });
    // Still 10 s, not doubled: no exited container, no crash-loop back-off.
    expect(loop.nextBackoffDelay()).to.equal(10_000);

    clock += 10_000;
    const third = await loop.syncOnce();
    expect(third.restarted).to.deep.equal(['default/flaky']);
    expect(third.pods.find((p) => p.name === 'flaky')).to.deep.include({ ready: '1/1', status: 'Running', restarts: 2 });
    const states = (await listNodePods(cri!))[0]!.containers.map((c) => [c.attempt, c.state]).sort();
    expect(states).to.deep.equal([[0, 'Created'], [1, 'Created'], [2, 'Running']]);
  });

  it('a start the runtime fails (container exited, StartError): CrashLoopBackOff, back-off doubling from 10 s', async () => {
    const { loop, records } = await open([]);
    // An account the node does not know: the start fails (REFERENCE.md §9, "unknown runAsUserName").
    const user = '  securityContext:\n    windowsOptions:\n      runAsUserName: "NoSuchUser"\n';
    await writeFile(join(manifests, 'baduser.yaml'), podYaml('baduser', ['ping', '-t', 'localhost'], 'Always', 'default', user));
    const first = await loop.syncOnce();
    const failed = first.events.find((e) => e.reason === 'Failed');
    expect(failed?.message).to.match(/^Error: /);
    const [pod] = await listNodePods(cri!);
    expect(pod!.containers.map((c) => [c.state, c.reason])).to.deep.equal([['Exited', 'StartError']]);
    const uid = pod!.uid;
    expect(first.pods.find((p) => p.name === 'baduser')).to.deep.include({ status: 'CrashLoopBackOff', restarts: 0 });
    expect(await waitingOf(records, 'baduser')).to.deep.include({ reason: 'CrashLoopBackOff', message: `back-off 10s restarting failed container=main pod=baduser_default(${uid})` });

    clock += 10_000;
    const second = await loop.syncOnce();
    expect(second.events.map((e) => e.reason)).to.include.members(['BackOff', 'Created', 'Failed']);
    expect(second.pods.find((p) => p.name === 'baduser')).to.deep.include({ status: 'CrashLoopBackOff', restarts: 1 });
    expect(await waitingOf(records, 'baduser')).to.deep.include({ reason: 'CrashLoopBackOff', message: `back-off 20s restarting failed container=main pod=baduser_default(${uid})` });
    expect(loop.nextBackoffDelay()).to.equal(20_000);
  });
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
    expect(row(second, 'once')).to.deep.include({ status: 'Error', restarts: 0 });

    await exited('crash');
    const third = await loop.syncOnce();
    expect(third.restarted).to.deep.equal([]);
    // doBackOff (kubernetes v1.34 kuberuntime_manager.go): a sync that finds the exited container
    // in its back-off sends BackOff; the Never pod's exited container is not restarted at all.
    expect(third.events.filter((e) => e.reason === 'BackOff').map((e) => [e.pod, e.message])).to.deep.equal([
      ['default/crash', `Back-off restarting failed container main in pod crash_default(${(await listNodePods(cri)).find((p) => p.name === 'crash')!.uid})`],
    ]);
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
    await writeFile(join(manifests, 'nope.yaml'), podYaml('nope', ['ping', '-t', 'localhost']).replace('mcr.microsoft.com/windows/nanoserver:ltsc2022', 'mcr.microsoft.com/windows/nanoserver:nope'));
    const first = await loop.syncOnce();
    expect(first.events.find((e) => e.reason === 'Failed')!.message).to.match(/^Failed to pull image "mcr.microsoft.com\/windows\/nanoserver:nope": rpc error: code = /);
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
      await until('a BackOff event for each exit the back-off holds', () => (backOffs() >= 3 ? true : undefined));
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
