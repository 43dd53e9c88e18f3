// kubernetes v1.34 pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions,
// computeInitContainerActions and doBackOff; pkg/kubelet/container/helpers.go
// ShouldContainerBeRestarted. Each case names the rule it pins.
import { expect } from 'chai';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { NodeContainer, NodePod } from '../../../src/kubelet/node-pods.js';
import { computePodActions, shouldRestart, shouldStartContainer, type BackoffReason, type LatestAttempt, type PodActions, type PodActionsOptions, type RestartBackoff } from '../../../src/kubelet/sync/pod-actions.js';

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

// kubernetes v1.34 pkg/kubelet/container/helpers.go ShouldContainerBeRestarted.
describe('ShouldContainerBeRestarted', () => {
  const cases: [string, string, LatestAttempt | undefined, boolean][] = [
    ['never run', 'Never', undefined, true],
    ['running', 'Always', { state: 'Running' }, false],
    ['left created by a failed start', 'Never', { state: 'Created' }, true],
    ['unknown', 'Never', { state: 'Unknown' }, true],
    ['exited 1, Always', 'Always', { state: 'Exited', exitCode: 1 }, true],
    ['exited 0, OnFailure', 'OnFailure', { state: 'Exited', exitCode: 0 }, false],
    ['exited 1, OnFailure', 'OnFailure', { state: 'Exited', exitCode: 1 }, true],
    ['exited 1, Never', 'Never', { state: 'Exited', exitCode: 1 }, false],
  ];
  for (const [name, restartPolicy, latest, expected] of cases) {
    it(`${name} (${restartPolicy}): ${expected ? 'started' : 'left alone'}`, () => {
      expect(shouldStartContainer({ spec: { restartPolicy, containers: [] } }, latest)).to.equal(expected);
    });
  }
});

const image = 'nano:ltsc2022';
const c = (name: string, extra: Partial<V1Container> = {}): V1Container => ({ name, image, ...extra });
const pod = (containers: V1Container[], spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({ metadata: { name: 'web', namespace: 'apps', uid: 'u1' }, spec: { containers, ...spec } });
const ctr = (name: string, state: NodeContainer['state'], extra: Partial<NodeContainer> = {}): NodeContainer => ({ id: `${name}-${extra.attempt ?? 0}`, name, attempt: 0, state, image, ...extra });
const status = (containers: NodeContainer[], sandboxReady = true): NodePod => ({ uid: 'u1', name: 'web', namespace: 'apps', sandboxId: 's1', sandboxReady, createdAt: '1', sandboxIds: ['s1'], containers });

/** Back-off held for the given keys at any time. */
const holding = (held: Record<string, { delayMs: number; reason: BackoffReason }> = {}): RestartBackoff => ({ heldBack: (key) => held[key] });

/** The actions as names, to read as the rules. */
function summary(actions: PodActions) {
  return {
    killPod: actions.killPod,
    createSandbox: actions.createSandbox,
    sandboxHeldBack: actions.sandboxHeldBack,
    init: actions.initContainerToStart?.container.name,
    start: actions.containersToStart.map((a) => a.container.name),
    kill: actions.containersToKill.map((k) => [k.container.name, k.message, k.gracePeriodSeconds]),
    held: actions.heldBack.map((h) => [h.container.name, h.waiting?.reason, h.waiting?.message]),
  };
}
const nothing = { killPod: false, createSandbox: false, sandboxHeldBack: false, init: undefined, start: [], kill: [], held: [] };

interface Case {
  readonly rule: string;
  readonly pod: V1Pod;
  readonly status: NodePod | undefined;
  readonly backoff?: RestartBackoff;
  readonly options?: PodActionsOptions;
  readonly expected: Partial<ReturnType<typeof summary>>;
}

const failedLiveness = (id: string): PodActionsOptions => ({ probes: { probes: () => true, failedProbe: (cid) => (cid === id ? 'liveness' : undefined) } });

const cases: Case[] = [
  { rule: 'PodSandboxChanged: no sandbox → create one with every container', pod: pod([c('a')]), status: undefined, expected: { createSandbox: true } },
  { rule: 'PodSandboxChanged: sandbox not ready (node rebooted) → kill the pod, create a new sandbox', pod: pod([c('a')]), status: status([ctr('a', 'Exited', { exitCode: 255 })], false), expected: { killPod: true, createSandbox: true } },
  { rule: "pod_workers.go: a failed sandbox creation is retried after the worker's back-off", pod: pod([c('a')]), status: undefined, backoff: holding({ u1: { delayMs: 10_000, reason: 'CrashLoopBackOff' } }), expected: { sandboxHeldBack: true } },
  { rule: 'a running container is kept', pod: pod([c('a')]), status: status([ctr('a', 'Running')]), expected: {} },
  { rule: 'ShouldContainerBeRestarted: a container never created is started', pod: pod([c('a'), c('b')]), status: status([ctr('a', 'Running')]), expected: { start: ['b'] } },
  { rule: 'restartPolicy Always: an exit 0 is restarted', pod: pod([c('a')]), status: status([ctr('a', 'Exited', { exitCode: 0 })]), expected: { start: ['a'] } },
  { rule: 'restartPolicy OnFailure: an exit 0 is left alone', pod: pod([c('a')], { restartPolicy: 'OnFailure' }), status: status([ctr('a', 'Exited', { exitCode: 0 })]), expected: {} },
  { rule: 'restartPolicy OnFailure: a failure is restarted', pod: pod([c('a')], { restartPolicy: 'OnFailure' }), status: status([ctr('a', 'Exited', { exitCode: 2 })]), expected: { start: ['a'] } },
  { rule: 'restartPolicy Never: nothing is restarted', pod: pod([c('a')], { restartPolicy: 'Never' }), status: status([ctr('a', 'Exited', { exitCode: 2 })]), expected: {} },
  { rule: 'ShouldContainerBeRestarted: a container left created by a failed start is started again, even with Never', pod: pod([c('a')], { restartPolicy: 'Never' }), status: status([ctr('a', 'Created')]), expected: { start: ['a'] } },
  {
    rule: 'doBackOff: an exited container in its back-off waits with CrashLoopBackOff',
    pod: pod([c('a')]),
    status: status([ctr('a', 'Exited', { exitCode: 1, attempt: 3 })]),
    backoff: holding({ 'u1/a': { delayMs: 80_000, reason: 'CrashLoopBackOff' } }),
    expected: { held: [['a', 'CrashLoopBackOff', 'back-off 1m20s restarting failed container=a pod=web_apps(u1)']] },
  },
  {
    rule: "image manager: a pull in its back-off waits with ImagePullBackOff",
    pod: pod([c('a')]),
    status: status([]),
    backoff: holding({ 'u1/a': { delayMs: 10_000, reason: 'ImagePullBackOff' } }),
    expected: { held: [['a', 'ImagePullBackOff', 'Back-off pulling image "nano:ltsc2022"']] },
  },
  {
    rule: "doBackOff counts exited containers only: one a failed start left created waits for the worker's retry, no CrashLoopBackOff",
    pod: pod([c('a')]),
    status: status([ctr('a', 'Created')]),
    backoff: holding({ 'u1/a': { delayMs: 10_000, reason: 'CrashLoopBackOff' } }),
    expected: { held: [['a', undefined, undefined]] },
  },
  {
    rule: 'the back-off of a container that would not be restarted holds nothing',
    pod: pod([c('a')], { restartPolicy: 'Never' }),
    status: status([ctr('a', 'Exited', { exitCode: 1 })]),
    backoff: holding({ 'u1/a': { delayMs: 10_000, reason: 'CrashLoopBackOff' } }),
    expected: {},
  },
  {
    rule: 'computePodActions: a changed definition kills the running container and starts it again',
    pod: pod([c('a', { image: 'nano:ltsc2025' })], { restartPolicy: 'Never', terminationGracePeriodSeconds: 5 }),
    status: status([ctr('a', 'Running')]),
    expected: { kill: [['a', 'Container a definition changed, will be restarted', 5]], start: ['a'] },
  },
  {
    rule: 'computePodActions: a failed liveness probe kills the container with the probe’s grace period, then restarts it',
    pod: pod([c('a', { livenessProbe: { terminationGracePeriodSeconds: 3 } })]),
    status: status([ctr('a', 'Running')]),
    options: failedLiveness('a-0'),
    expected: { kill: [['a', 'Container a failed liveness probe, will be restarted', 3]], start: ['a'] },
  },
  {
    rule: 'computePodActions: with restartPolicy Never a failed probe kills without a restart',
    pod: pod([c('a')], { restartPolicy: 'Never' }),
    status: status([ctr('a', 'Running')]),
    options: failedLiveness('a-0'),
    expected: { kill: [['a', 'Container a failed liveness probe', 30]] },
  },
  {
    rule: 'a killed container is started again at once, whatever its back-off',
    pod: pod([c('a')]),
    status: status([ctr('a', 'Running')]),
    backoff: holding({ 'u1/a': { delayMs: 10_000, reason: 'CrashLoopBackOff' } }),
    options: failedLiveness('a-0'),
    expected: { kill: [['a', 'Container a failed liveness probe, will be restarted', 30]], start: ['a'] },
  },
  { rule: 'computeInitContainerActions: the first init container not yet run is next; app containers wait', pod: pod([c('app')], { initContainers: [c('one'), c('two')] }), status: status([ctr('one', 'Exited', { exitCode: 0 })]), expected: { init: 'two' } },
  { rule: 'computeInitContainerActions: a running init container is waited for', pod: pod([c('app')], { initContainers: [c('one')] }), status: status([ctr('one', 'Running')]), expected: {} },
  { rule: 'computeInitContainerActions: a failed init container is run again (Always, OnFailure)', pod: pod([c('app')], { initContainers: [c('one')], restartPolicy: 'OnFailure' }), status: status([ctr('one', 'Exited', { exitCode: 1 })]), expected: { init: 'one' } },
  { rule: 'computeInitContainerActions: with Never a failed init container fails the pod', pod: pod([c('app')], { initContainers: [c('one')], restartPolicy: 'Never' }), status: status([ctr('one', 'Exited', { exitCode: 1 })]), expected: {} },
  {
    rule: 'doBackOff: a failed init container in its back-off waits with CrashLoopBackOff',
    pod: pod([c('app')], { initContainers: [c('one')] }),
    status: status([ctr('one', 'Exited', { exitCode: 1, attempt: 1 })]),
    backoff: holding({ 'u1/one': { delayMs: 20_000, reason: 'CrashLoopBackOff' } }),
    expected: { held: [['one', 'CrashLoopBackOff', 'back-off 20s restarting failed container=one pod=web_apps(u1)']] },
  },
  { rule: 'all init containers done: the app containers start', pod: pod([c('app')], { initContainers: [c('one')] }), status: status([ctr('one', 'Exited', { exitCode: 0 })]), expected: { start: ['app'] } },
  { rule: 'sidecar (init container with restartPolicy Always): started in its turn', pod: pod([c('app')], { initContainers: [c('proxy', { restartPolicy: 'Always' })] }), status: status([]), expected: { init: 'proxy' } },
  { rule: 'sidecar: once running it does not hold the app containers back', pod: pod([c('app')], { initContainers: [c('proxy', { restartPolicy: 'Always' }), c('setup')] }), status: status([ctr('proxy', 'Running'), ctr('setup', 'Exited', { exitCode: 0 })]), expected: { start: ['app'] } },
  {
    rule: 'sidecar: an exited sidecar is restarted whatever the pod’s restartPolicy',
    pod: pod([c('app')], { initContainers: [c('proxy', { restartPolicy: 'Always' })], restartPolicy: 'Never' }),
    status: status([ctr('proxy', 'Exited', { exitCode: 0 }), ctr('app', 'Running')]),
    expected: { start: ['proxy'] },
  },
  {
    rule: '`kubelet run` (one pass, our own rule): an exited container is left alone',
    pod: pod([c('a'), c('b')]),
    status: status([ctr('a', 'Exited', { exitCode: 1 })]),
    options: { restartExited: false },
    expected: { start: ['b'] },
  },
];

describe('computePodActions', () => {
  for (const t of cases) {
    it(t.rule, () => {
      expect(summary(computePodActions(t.pod, t.status, t.backoff ?? holding(), 0, t.options))).to.deep.equal({ ...nothing, ...t.expected });
    });
  }

  it('is pure: the same input gives the same actions, and the pod is not changed', () => {
    const p = pod([c('a')], { initContainers: [c('one')] });
    const before = JSON.stringify(p);
    const s = status([ctr('one', 'Exited', { exitCode: 0 })]);
    expect(summary(computePodActions(p, s, holding(), 0))).to.deep.equal(summary(computePodActions(p, s, holding(), 0)));
    expect(JSON.stringify(p)).to.equal(before);
  });
});
