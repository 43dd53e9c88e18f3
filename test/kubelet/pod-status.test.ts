import { expect } from 'chai';
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeContainer, NodePod } from '../../src/kubelet/node-pods.js';
import type { ContainerRecord, PodRecord } from '../../src/kubelet/pod-records.js';
import { mergeEvents } from '../../src/kubelet/pod-records.js';
import { computePodStatus, humanDuration, nanosToTime, podFailed, podRow, podSettled } from '../../src/kubelet/pod-status.js';

const spec = (containers: string[], init: string[] = [], restartPolicy?: string): V1Pod => ({
  metadata: { name: 'web', namespace: 'apps', uid: 'u1' },
  spec: {
    containers: containers.map((name) => ({ name, image: 'img' })),
    ...(init.length === 0 ? {} : { initContainers: init.map((name) => ({ name, image: 'img' })) }),
    ...(restartPolicy === undefined ? {} : { restartPolicy }),
  },
});

const node = (containers: Partial<NodeContainer>[], sandboxReady = true): NodePod => ({
  uid: 'u1',
  name: 'web',
  namespace: 'apps',
  sandboxId: 's1',
  sandboxIds: ['s1'],
  sandboxReady,
  createdAt: '1700000000000000000',
  podIp: '127.10.0.2',
  containers: containers.map((c, i) => ({ id: `c${i}`, name: 'app', attempt: 0, state: 'Running', startedAt: '1700000001000000000', ...c })),
});

const record = (containers: Record<string, ContainerRecord>, extra: Partial<PodRecord> = {}): PodRecord => ({
  pod: spec(['app']),
  startTime: '2023-11-14T22:13:20.000Z',
  sandboxCreated: true,
  containers,
  events: [],
  ...extra,
});

interface Case {
  readonly name: string;
  readonly pod: V1Pod;
  readonly node?: NodePod;
  readonly record?: PodRecord;
  readonly expected: { phase: string; ready: string; status: string; restarts: number; failed: boolean; settled: boolean };
}

// Each case reads as the rule: what the runtime and the kubelet's record say, and what kubectl shows.
const cases: Case[] = [
  { name: 'a running container', pod: spec(['app']), node: node([{}]), expected: { phase: 'Running', ready: '1/1', status: 'Running', restarts: 0, failed: false, settled: true } },
  {
    name: 'ErrImagePull: the container was never created, the record holds the reason',
    pod: spec(['app']),
    node: node([]),
    record: record({ app: { attempt: 0, reason: 'ErrImagePull', message: 'Failed to pull image "x": rpc error: code = NotFound desc = not found' } }),
    expected: { phase: 'Pending', ready: '0/1', status: 'ErrImagePull', restarts: 0, failed: true, settled: true },
  },
  {
    name: 'CreateContainerError from the runtime',
    pod: spec(['app']),
    node: node([]),
    record: record({ app: { attempt: 0, reason: 'CreateContainerError', message: 'invalid credential spec' } }),
    expected: { phase: 'Pending', ready: '0/1', status: 'CreateContainerError', restarts: 0, failed: true, settled: true },
  },
  {
    name: 'RunContainerError: the failed start left the runtime container exited (StartError)',
    pod: spec(['app']),
    node: node([{ id: 'c0', state: 'Exited', exitCode: 128, reason: 'StartError', message: 'logon failure' }]),
    record: record({ app: { attempt: 0, containerId: 'c0', reason: 'RunContainerError', message: 'logon failure' } }),
    expected: { phase: 'Running', ready: '0/1', status: 'RunContainerError', restarts: 0, failed: true, settled: true },
  },
  {
    name: 'a record about an older container no longer applies',
    pod: spec(['app']),
    node: node([{ id: 'c1', attempt: 1 }]),
    record: record({ app: { attempt: 0, containerId: 'c0', reason: 'RunContainerError', message: 'x' } }),
    expected: { phase: 'Running', ready: '1/1', status: 'Running', restarts: 1, failed: false, settled: true },
  },
  {
    name: 'CrashLoopBackOff recorded by the sync loop, with the exited attempt as last state',
    pod: spec(['app']),
    node: node([{ id: 'c0', attempt: 0, state: 'Exited', exitCode: 1 }, { id: 'c1', attempt: 1, state: 'Exited', exitCode: 1, finishedAt: '1700000002000000000' }]),
    record: record({ app: { attempt: 1, containerId: 'c1', reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container=app pod=web_apps(u1)' } }),
    expected: { phase: 'Running', ready: '0/1', status: 'CrashLoopBackOff', restarts: 1, failed: true, settled: true },
  },
  {
    name: 'exit 0 under restartPolicy Never: Succeeded, Completed',
    pod: spec(['app'], [], 'Never'),
    node: node([{ state: 'Exited', exitCode: 0 }]),
    expected: { phase: 'Succeeded', ready: '0/1', status: 'Completed', restarts: 0, failed: false, settled: true },
  },
  {
    name: 'exit 1 under restartPolicy Never: Failed, Error',
    pod: spec(['app'], [], 'Never'),
    node: node([{ state: 'Exited', exitCode: 1 }]),
    expected: { phase: 'Failed', ready: '0/1', status: 'Error', restarts: 0, failed: true, settled: true },
  },
  {
    name: 'exit 0 under restartPolicy Always: the kubelet would restart it, the pod stays Running',
    pod: spec(['app']),
    node: node([{ state: 'Exited', exitCode: 0 }]),
    expected: { phase: 'Running', ready: '0/1', status: 'Completed', restarts: 0, failed: false, settled: true },
  },
  {
    name: 'a created, not yet started container',
    pod: spec(['app']),
    node: node([{ state: 'Created' }]),
    expected: { phase: 'Pending', ready: '0/1', status: 'ContainerCreating', restarts: 0, failed: false, settled: false },
  },
  {
    name: 'an init container still running: Init:0/1, the app waits PodInitializing',
    pod: spec(['app'], ['setup']),
    node: node([{ name: 'setup' }]),
    expected: { phase: 'Pending', ready: '0/1', status: 'Init:0/1', restarts: 0, failed: false, settled: false },
  },
  {
    name: 'a failed init container: Init:Error',
    pod: spec(['app'], ['setup']),
    node: node([{ name: 'setup', state: 'Exited', exitCode: 2 }]),
    expected: { phase: 'Pending', ready: '0/1', status: 'Init:Error', restarts: 0, failed: true, settled: true },
  },
  {
    name: 'init done, app running',
    pod: spec(['app'], ['setup']),
    node: node([{ name: 'setup', state: 'Exited', exitCode: 0 }, { id: 'c9', name: 'app' }]),
    expected: { phase: 'Running', ready: '1/1', status: 'Running', restarts: 0, failed: false, settled: true },
  },
  {
    name: 'no sandbox: FailedCreatePodSandBox in the record',
    pod: spec(['app']),
    record: record({}, { sandboxCreated: false, sandboxError: { reason: 'FailedCreatePodSandBox', message: 'no network' } }),
    expected: { phase: 'Pending', ready: '0/1', status: 'ContainerCreating', restarts: 0, failed: true, settled: true },
  },
  {
    name: 'the first container (in spec order) with a reason decides STATUS',
    pod: spec(['a', 'b']),
    node: node([{ id: 'ca', name: 'a', state: 'Exited', exitCode: 1 }, { id: 'cb', name: 'b', state: 'Exited', exitCode: 0 }]),
    expected: { phase: 'Running', ready: '0/2', status: 'Error', restarts: 0, failed: true, settled: true },
  },
];

describe('pod status from the runtime and the kubelet record (generateAPIPodStatus, printPod)', () => {
  for (const c of cases) {
    it(c.name, () => {
      const status = computePodStatus(c.pod, c.node, c.record);
      const row = podRow(c.pod, status);
      expect({
        phase: status.phase,
        ready: row.ready,
        status: row.status,
        restarts: row.restarts,
        failed: podFailed(status, c.record),
        settled: podSettled(status, c.record),
      }).to.deep.equal(c.expected);
    });
  }

  it('container statuses carry the runtime message, ids and times as the API prints them', () => {
    const status = computePodStatus(
      spec(['app']),
      node([{ id: 'c0', state: 'Exited', exitCode: 128, reason: 'StartError', message: 'boom', startedAt: '0', finishedAt: '1700000002000000000', imageRef: 'sha256:abc' }]),
      record({ app: { attempt: 0, containerId: 'c0', reason: 'RunContainerError', message: 'boom' } }),
    );
    expect(status.containerStatuses[0]).to.deep.equal({
      name: 'app',
      image: 'img',
      imageID: 'sha256:abc',
      restartCount: 0,
      state: { waiting: { reason: 'RunContainerError', message: 'boom' } },
      lastState: { terminated: { exitCode: 128, reason: 'StartError', message: 'boom', finishedAt: '2023-11-14T22:13:22Z', containerID: 'cri-winsim://c0' } },
      ready: false,
      started: false,
      containerID: 'cri-winsim://c0',
    });
    expect(status.conditions.map((c) => [c.type, c.status, c.reason ?? '', c.message ?? ''])).to.deep.equal([
      ['PodReadyToStartContainers', 'True', '', ''],
      ['Initialized', 'True', '', ''],
      ['Ready', 'False', 'ContainersNotReady', 'containers with unready status: [app]'],
      ['ContainersReady', 'False', 'ContainersNotReady', 'containers with unready status: [app]'],
      ['PodScheduled', 'True', '', ''],
    ]);
    expect(status.startTime).to.equal('2023-11-14T22:13:20Z');
    expect(status.podIP).to.equal('127.10.0.2');
  });

  // kubernetes v1.34 pkg/kubelet/kubelet_pods.go generateAPIPodStatus: "HostNetwork Pods inherit
  // the node IPs as PodIPs", inside `if kl.kubeClient != nil` (a kubelet with an API server);
  // convertStatusToAPIStatus takes the runtime's IPs first.
  describe('podIP of a hostNetwork pod', () => {
    const hostNetworkPod: V1Pod = { ...spec(['app']), spec: { ...spec(['app']).spec!, hostNetwork: true } };
    const noIp = { ...node([{}]), podIp: '' };
    const table: [string, V1Pod, NodePod | undefined, string[] | undefined, string | undefined][] = [
      ['node mode: the node\'s IP, as the runtime reports none', hostNetworkPod, noIp, ['127.0.0.1'], '127.0.0.1'],
      ['node mode: the node\'s IP before the sandbox exists', hostNetworkPod, undefined, ['127.0.1.3'], '127.0.1.3'],
      ['node mode: a pod-network pod keeps the sandbox\'s IP', spec(['app']), node([{}]), ['127.0.0.1'], '127.10.0.2'],
      ['node mode: a pod-network pod without a ready sandbox has none', spec(['app']), noIp, ['127.0.0.1'], undefined],
      ['standalone (kubelet run, static pods): no kubeClient, no node IP', hostNetworkPod, noIp, undefined, undefined],
    ];
    for (const [name, pod, nodePod, hostIps, expected] of table) {
      it(name, () => expect(computePodStatus(pod, nodePod, undefined, undefined, hostIps).podIP).to.equal(expected));
    }
  });

  it('a running container is ready and started as the prober says (UpdatePodStatus); Ready follows ready', () => {
    const probes = (started: boolean, ready: boolean) => ({ started: () => started, ready: () => ready });
    const pod = spec(['app']);
    const running = node([{}]);
    const notStarted = computePodStatus(pod, running, undefined, probes(false, false));
    expect([notStarted.containerStatuses[0]!.started, notStarted.containerStatuses[0]!.ready]).to.deep.equal([false, false]);
    const unready = computePodStatus(pod, running, undefined, probes(true, false));
    expect([unready.containerStatuses[0]!.started, unready.containerStatuses[0]!.ready]).to.deep.equal([true, false]);
    expect(unready.conditions.filter((c) => c.type === 'Ready' || c.type === 'ContainersReady').map((c) => [c.status, c.message])).to.deep.equal([
      ['False', 'containers with unready status: [app]'],
      ['False', 'containers with unready status: [app]'],
    ]);
    // kubectl: READY 0/1 and STATUS Running for a running container that is not ready.
    expect([podRow(pod, unready).ready, podRow(pod, unready).status]).to.deep.equal(['0/1', 'Running']);
    const ready = computePodStatus(pod, running, undefined, probes(true, true));
    expect(ready.conditions.find((c) => c.type === 'Ready')!.status).to.equal('True');
    expect(podRow(pod, ready).ready).to.equal('1/1');
  });

  it('CRI nanoseconds become second-precision RFC 3339; 0 is unset', () => {
    expect(nanosToTime('1700000000123456789')).to.equal('2023-11-14T22:13:20Z');
    expect(nanosToTime('0')).to.equal(undefined);
  });
});

describe('kubectl AGE (duration.HumanDuration)', () => {
  const table: [number, string][] = [
    [-5_000, '<invalid>'], [500, '0s'], [59_000, '59s'], [119_000, '119s'], [120_000, '2m'], [150_000, '2m30s'],
    [600_000, '10m'], [3 * 3_600_000, '3h'], [3 * 3_600_000 + 60_000, '3h1m'], [10 * 3_600_000, '10h'], [50 * 3_600_000, '2d2h'], [10 * 86_400_000, '10d'],
  ];
  for (const [ms, text] of table) it(`${ms} ms is ${text}`, () => expect(humanDuration(ms)).to.equal(text));
});

describe('recorded events', () => {
  it('a repeated event counts up instead of repeating', () => {
    const e = { type: 'Warning' as const, reason: 'BackOff', message: 'Back-off restarting failed container', container: 'app' };
    const first = mergeEvents([], [e], new Date('2024-01-01T00:00:00Z'));
    const second = mergeEvents(first, [e, { ...e, reason: 'Started', type: 'Normal', message: 'Started container app' }], new Date('2024-01-01T00:00:10Z'));
    expect(second.map((r) => [r.reason, r.count, r.firstTimestamp, r.lastTimestamp])).to.deep.equal([
      ['BackOff', 2, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:10.000Z'],
      ['Started', 1, '2024-01-01T00:00:10.000Z', '2024-01-01T00:00:10.000Z'],
    ]);
  });
});
