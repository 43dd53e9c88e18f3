// The kubelet's garbage collection (kubernetes v1.34): container and sandbox decisions of
// pkg/kubelet/kuberuntime/kuberuntime_gc.go, image decisions and texts of
// pkg/kubelet/images/image_gc_manager.go, and one collection over a real runtime socket.
import { expect } from 'chai';
import { join } from 'node:path';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { GarbageCollector } from '../../src/kubelet/gc/garbage-collector.js';
import {
  containersToRemove,
  defaultContainerGcPolicy,
  defaultImageGcPolicy,
  freeDiskSpaceFailedMessage,
  imagesToRemove,
  type GcContainer,
  type GcSandbox,
  type ImageRecord,
} from '../../src/kubelet/gc/gc-policy.js';
import type { PodEvent } from '../../src/kubelet/pod-worker-options.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { waitUntil } from '../support/wait.js';
import { useScriptedRuntime } from './support/scripted-runtime.js';

const dead = (id: string, podUid: string, name: string, createdAtMs: number, extra: Partial<GcContainer> = {}): GcContainer => ({ id, podUid, name, sandboxId: `sb-${podUid}`, running: false, unknown: false, createdAtMs, ...extra });
const ids = (list: readonly { id: string }[]): string[] => list.map((c) => c.id).sort();

describe('container GC decisions (kuberuntime_gc.go v1.34)', () => {
  const none = (): boolean => false;
  const containers = [
    dead('a1', 'p', 'app', 1000),
    dead('a2', 'p', 'app', 2000),
    dead('a3', 'p', 'app', 3000),
    dead('b1', 'p', 'sidecar', 1500),
    dead('r', 'p', 'app', 4000, { running: true }),
    dead('q1', 'q', 'app', 500),
    dead('q2', 'q', 'app', 600),
  ];
  const table: { name: string; policy: Partial<typeof defaultContainerGcPolicy>; now?: number; removed?: (uid: string) => boolean; expected: string[] }[] = [
    { name: 'defaults: the newest dead container of each container kept, never a running one', policy: {}, expected: ['a1', 'a2', 'q1'] },
    { name: 'no per-container limit and no total: nothing', policy: { maxPerPodContainer: -1 }, expected: [] },
    { name: 'a minimum age keeps the young ones out of the count', policy: { minAgeMs: 2500 }, now: 4000, expected: ['q1'] },
    { name: 'a minimum age: only those old enough count', policy: { minAgeMs: 1000 }, now: 3000, expected: ['a1', 'q1'] },
    { name: 'a removed pod loses every dead container', policy: {}, removed: (uid) => uid === 'q', expected: ['a1', 'a2', 'q1', 'q2'] },
    { name: 'a total cap: an equal share per container, at least one', policy: { maxPerPodContainer: -1, maxContainers: 3 }, expected: ['a1', 'a2', 'q1'] },
    { name: 'a total cap below the number of containers: then the oldest across all', policy: { maxPerPodContainer: -1, maxContainers: 2 }, expected: ['a1', 'a2', 'q1', 'q2'] },
  ];
  for (const c of table) {
    it(c.name, () => {
      const decision = containersToRemove(containers, [], { ...defaultContainerGcPolicy, ...c.policy }, c.now ?? 10_000, c.removed ?? none);
      expect(ids(decision.containers)).to.deep.equal(c.expected);
    });
  }

  it('sandboxes: inactive ones but the newest go; one that keeps a container stays; all of a removed pod', () => {
    const sandboxes: GcSandbox[] = [
      { id: 's-new', podUid: 'p', ready: false, createdAtMs: 300 },
      { id: 's-mid', podUid: 'p', ready: false, createdAtMs: 200 },
      { id: 's-old', podUid: 'p', ready: false, createdAtMs: 100 },
      { id: 's-ready', podUid: 'p', ready: true, createdAtMs: 50 },
      { id: 'gone-1', podUid: 'gone', ready: false, createdAtMs: 100 },
    ];
    const kept = dead('k', 'p', 'app', 1, { sandboxId: 's-mid', running: true });
    const decision = containersToRemove([kept], sandboxes, defaultContainerGcPolicy, 10_000, (uid) => uid === 'gone');
    expect([...decision.sandboxes].sort()).to.deep.equal(['gone-1', 's-old']);
  });
});

describe('image GC decisions (image_gc_manager.go v1.34)', () => {
  const image = (id: string, sizeBytes: number, lastUsedMs: number, firstDetectedMs = 0, pinned = false): ImageRecord => ({ id, sizeBytes, pinned, firstDetectedMs, lastUsedMs });
  const now = 1_000_000;
  const records = [image('old', 30, 10), image('older', 30, 5), image('used', 50, now), image('pause', 40, 0, 0, true), image('fresh', 30, 0, now - 60_000)];
  const inUse = new Set(['used']);

  it('below the high threshold nothing is freed', () => {
    expect(imagesToRemove(records, inUse, { capacityBytes: 1000, availableBytes: 200 }, defaultImageGcPolicy, now)).to.deep.equal({ kind: 'nothing', usagePercent: 80 });
  });

  it('at the high threshold: down to the low one, least recently used first, never used, pinned or young images', () => {
    const d = imagesToRemove(records, inUse, { capacityBytes: 1000, availableBytes: 150 }, defaultImageGcPolicy, now);
    // usage 85 % ≥ 85: free 1000 × 20 % − 150 = 50 bytes: "older" then "old".
    expect(d).to.deep.include({ kind: 'free', usagePercent: 85, bytesToFree: 50, bytesFreed: 60 });
    expect(d.kind === 'free' ? d.images.map((i) => i.id) : []).to.deep.equal(['older', 'old']);
  });

  it('not enough eligible: what there is, and the FreeDiskSpaceFailed text', () => {
    const d = imagesToRemove(records, inUse, { capacityBytes: 1000, availableBytes: 0 }, defaultImageGcPolicy, now);
    expect(d).to.deep.include({ bytesToFree: 200, bytesFreed: 60 });
    expect(freeDiskSpaceFailedMessage(200, 60)).to.equal('Failed to garbage collect required amount of images. Attempted to free 200 bytes, but only found 60 bytes eligible to free.');
  });

  it('a capacity of 0 is invalid', () => {
    expect(imagesToRemove(records, inUse, { capacityBytes: 0, availableBytes: 0 }, defaultImageGcPolicy, now)).to.deep.equal({ kind: 'invalid-capacity', message: 'invalid capacity 0 on image filesystem' });
  });
});

describe('garbage collector periods and events (kubelet.go StartGarbageCollection v1.34)', () => {
  const fx = useScriptedRuntime('winsim-gc-');

  it('runs on its periods; ImageGCFailed only for a repeated image failure; nothing after stop', async () => {
    // A manual scheduler: the test fires each period itself.
    const due: { fn: () => void; delayMs: number }[] = [];
    const scheduler = { schedule: (fn: () => void, delayMs: number) => (due.push({ fn, delayMs }), { cancel: () => undefined }) };
    const events: PodEvent[] = [];
    const gc = new GarbageCollector(fx.cri, { imageFsCapacityBytes: 1000, scheduler, onNodeEvent: (e) => events.push(e) });
    gc.start();
    expect(due.map((d) => d.delayMs)).to.deep.equal([60_000, 300_000]);
    const fire = async (delayMs: number): Promise<void> => {
      const i = due.findIndex((d) => d.delayMs === delayMs);
      due.splice(i, 1)[0]!.fn();
      await waitUntil('the next period scheduled', () => due.some((d) => d.delayMs === delayMs), 5000);
    };
    // The scripted runtime has no ImageFsInfo: each image collection fails.
    await fire(300_000);
    expect(events).to.deep.equal([]);
    await fire(300_000);
    expect(events.map((e) => e.reason)).to.deep.equal(['ImageGCFailed']);
    expect(events[0]!.message).to.match(/^rpc error: code = Unimplemented desc = /);
    await fire(60_000);
    expect(fx.runtime.calls.filter((c) => c === 'ListContainers').length).to.be.greaterThan(0);
    await gc.stop();
    const before = due.length;
    for (const d of due.splice(0)) d.fn();
    await gc.stop();
    expect(before).to.equal(2);
    expect(due).to.deep.equal([]);
  });
});

describe('garbage collector over a real runtime socket', function () {
  this.timeout(60_000);
  let runtime: RuntimeHandle;
  let cri: CriClient;
  const call = { timeoutMs: 10_000 };
  before(async () => {
    runtime = await startRuntime();
    cri = createCriClient(runtime.endpoint);
  });
  after(async () => {
    cri?.close();
    await runtime?.stop();
  });

  it('removes dead containers beyond one per container and an unused image; keeps the rest', async () => {
    const nano = 'mcr.microsoft.com/windows/nanoserver:ltsc2022';
    const unused = 'mcr.microsoft.com/windows/servercore:ltsc2022';
    for (const image of [nano, unused]) await unaryCall(cri.image, 'PullImage', { image: { image } }, call);
    const labels = { 'io.kubernetes.pod.uid': 'gc-uid', 'io.kubernetes.pod.name': 'gc', 'io.kubernetes.pod.namespace': 'default' };
    const config = { metadata: { name: 'gc', namespace: 'default', uid: 'gc-uid', attempt: 0 }, labels, log_directory: join(runtime.dir, 'pods', 'gc') };
    const sandbox = (await unaryCall(cri.runtime, 'RunPodSandbox', { config }, call)).pod_sandbox_id;
    const attempts: string[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const created = await unaryCall(cri.runtime, 'CreateContainer', {
        pod_sandbox_id: sandbox,
        config: { metadata: { name: 'app', attempt }, image: { image: nano }, command: ['cmd', '/c', 'exit 0'], labels: { ...labels, 'io.kubernetes.container.name': 'app' }, log_path: `app/${attempt}.log` },
        sandbox_config: config,
      }, call);
      await unaryCall(cri.runtime, 'StartContainer', { container_id: created.container_id }, call);
      attempts.push(created.container_id);
    }
    await waitUntil('every attempt exited', async () => (await unaryCall(cri.runtime, 'ListContainers', {}, call)).containers.every((c) => c.state === 2), 20_000, 20);

    const events: PodEvent[] = [];
    const usedBytes = (await unaryCall(cri.image, 'ImageFsInfo', {}, call)).image_filesystems.reduce((n, f) => n + Number(f.used_bytes?.value ?? 0), 0);
    // An image filesystem only just big enough: usage is over the high threshold.
    const gc = new GarbageCollector(cri, { imageFsCapacityBytes: Math.ceil(usedBytes / 0.9), imagePolicy: { ...defaultImageGcPolicy, minAgeMs: 0 }, onNodeEvent: (e) => events.push(e), now: () => Date.now() + 1000 });
    const removed = await gc.collectContainers();
    expect([...removed.containers].sort()).to.deep.equal(attempts.slice(0, 2).sort());
    const left = (await unaryCall(cri.runtime, 'ListContainers', {}, call)).containers.map((c) => c.id);
    expect(left).to.deep.equal([attempts[2]]);

    await gc.collectImages().catch(() => undefined);
    const images = (await unaryCall(cri.image, 'ListImages', {}, call)).images.flatMap((i) => i.repo_tags);
    expect(images).to.include(nano); // a dead container still uses it
    expect(images).to.not.include(unused);
    await gc.stop();
  });
});
