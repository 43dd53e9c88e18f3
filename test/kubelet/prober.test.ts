import { expect } from 'chai';
import type { V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import { ProbeManager, type ProbedContainer, type Scheduler } from '../../src/kubelet/prober.js';
import { TimerWheel } from '../../src/kubelet/node/timer-wheel.js';
import type { PodEvent } from '../../src/kubelet/pod-worker-options.js';
import type { EffectiveProbe, ProbeOutcome, ProbeTarget } from '../../src/kubelet/probes.js';

// The worker's state machine of kubernetes v1.34.12 pkg/kubelet/prober/worker.go (doProbe),
// prober_manager.go (isContainerStarted, UpdatePodStatus) and prober.go (events, retries),
// on a manual clock.

/** A scheduler on a manual clock: advance() runs what falls due, in order, letting each settle. */
class ManualClock implements Scheduler {
  now = 1_000_000;
  private tasks: { due: number; fn: () => void; cancelled: boolean; seq: number }[] = [];
  private seq = 0;

  schedule(fn: () => void, delayMs: number) {
    const task = { due: this.now + delayMs, fn, cancelled: false, seq: this.seq++ };
    this.tasks.push(task);
    return { cancel: () => void (task.cancelled = true) };
  }

  pending(): number {
    return this.tasks.filter((t) => !t.cancelled).length;
  }

  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    for (;;) {
      await settle();
      const next = this.tasks.filter((t) => !t.cancelled && t.due <= end).sort((a, b) => a.due - b.due || a.seq - b.seq)[0];
      if (next === undefined) break;
      this.tasks = this.tasks.filter((t) => t !== next);
      this.now = Math.max(this.now, next.due);
      next.fn();
    }
    this.now = end;
  }
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

const pod = (containers: V1Container[], extra: Partial<V1Pod['spec']> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'apps', uid: 'uid-1' },
  spec: { containers, ...extra },
});
const withProbes = (probes: Partial<Pick<V1Container, 'readinessProbe' | 'livenessProbe' | 'startupProbe'>>): V1Container => ({ name: 'app', image: 'nginx', ...probes });
const exec = (extra: Partial<V1Probe> = {}): V1Probe => ({ exec: { command: ['check'] }, periodSeconds: 1, ...extra });

function fixture(answers: (type: string, target: ProbeTarget, probe: EffectiveProbe) => ProbeOutcome) {
  const clock = new ManualClock();
  const events: PodEvent[] = [];
  const synced: string[] = [];
  const runs: { type: string; containerId: string; at: number }[] = [];
  let current = 'Readiness';
  const manager = new ProbeManager({
    scheduler: clock,
    exec: () => Promise.reject(new Error('not used')),
    onResult: (uid) => synced.push(uid),
    onEvent: (_pod, event) => events.push(event),
    now: () => clock.now,
    random: () => 0,
    runProbe: (probe, target) => {
      current = probe.spec === target.container.livenessProbe ? 'Liveness' : probe.spec === target.container.startupProbe ? 'Startup' : 'Readiness';
      runs.push({ type: current, containerId: target.containerId, at: clock.now });
      return Promise.resolve(answers(current, target, probe));
    },
  });
  const running = (containerId: string, startedAtMs = clock.now): ProbedContainer => ({ name: 'app', containerId, state: 'running', startedAtMs });
  const observe = (c: ProbedContainer, phase: 'Running' | 'Succeeded' = 'Running') => manager.setPodStatus('uid-1', { phase, podIp: '127.10.0.2', containers: [c] });
  return { clock, events, synced, runs, manager, running, observe };
}

describe('prober (probe workers and results)', () => {
  it('creates workers only for containers with probes', () => {
    const fx = fixture(() => ({ result: 'success', output: '' }));
    fx.manager.addPod(pod([{ name: 'plain', image: 'nano' }]));
    expect(fx.manager.probes('uid-1')).to.equal(false);
    expect(fx.clock.pending()).to.equal(0);
    fx.manager.addPod({ ...pod([withProbes({ readinessProbe: exec(), livenessProbe: exec() }), { name: 'plain', image: 'nano' }]), metadata: { uid: 'uid-2' } });
    expect(fx.manager.probes('uid-2')).to.equal(true);
    expect(fx.clock.pending()).to.equal(2);
  });

  it('a container with a readiness probe is not ready until the probe succeeded successThreshold times', async () => {
    const fx = fixture(() => ({ result: 'success', output: '' }));
    fx.manager.addPod(pod([withProbes({ readinessProbe: exec({ successThreshold: 2 }) })]));
    fx.observe(fx.running('c1'));
    expect(fx.manager.isStarted('uid-1', 'app', 'c1')).to.equal(true);
    await fx.clock.advance(0);
    expect(fx.runs).to.have.length(1);
    // Only the initial value (failure) is published after one success.
    expect(fx.synced).to.deep.equal(['uid-1']);
    await fx.clock.advance(1000);
    expect(fx.runs).to.have.length(2);
    expect(fx.synced).to.deep.equal(['uid-1', 'uid-1']);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(true);
  });

  it('asking whether a container is ready runs its pending readiness probe at once (UpdatePodStatus trigger)', async () => {
    let answers = 0;
    const fx = fixture(() => (answers++ === 0 ? { result: 'failure', output: 'HTTP probe failed with statuscode: 503' } : { result: 'success', output: '' }));
    fx.manager.addPod(pod([withProbes({ readinessProbe: exec({ periodSeconds: 10 }) })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(0);
    expect(fx.runs).to.have.length(1);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(false);
    await fx.clock.advance(0);
    // Not ten seconds later: the trigger ran it now.
    expect(fx.runs.map((r) => r.at - 1_000_000)).to.deep.equal([0, 0]);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(true);
    // The ticker starts over from the triggered probe.
    await fx.clock.advance(9_999);
    expect(fx.runs).to.have.length(2);
    await fx.clock.advance(1);
    expect(fx.runs).to.have.length(3);
  });

  it('readiness turns false after failureThreshold failures, with an Unhealthy event for each', async () => {
    let healthy = true;
    const fx = fixture(() => (healthy ? { result: 'success', output: '' } : { result: 'failure', output: 'HTTP probe failed with statuscode: 503' }));
    fx.manager.addPod(pod([withProbes({ readinessProbe: exec({ failureThreshold: 2 }) })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(0);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(true);
    healthy = false;
    await fx.clock.advance(1000);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(true);
    await fx.clock.advance(1000);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(false);
    expect(fx.events).to.deep.equal([
      { type: 'Warning', reason: 'Unhealthy', message: 'Readiness probe failed: HTTP probe failed with statuscode: 503', container: 'app' },
      { type: 'Warning', reason: 'Unhealthy', message: 'Readiness probe failed: HTTP probe failed with statuscode: 503', container: 'app' },
    ]);
  });

  it('probes every periodSeconds, not before initialDelaySeconds', async () => {
    const fx = fixture(() => ({ result: 'success', output: '' }));
    fx.manager.addPod(pod([withProbes({ readinessProbe: exec({ initialDelaySeconds: 3, periodSeconds: 2 }) })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(7000);
    // Ticks at 0, 2, 4, 6 s; those before 3 s after the start are skipped.
    expect(fx.runs.map((r) => r.at - 1_000_000)).to.deep.equal([4000, 6000]);
  });

  it('a failed liveness probe is published once, then the worker holds until the container is replaced', async () => {
    const fx = fixture(() => ({ result: 'failure', output: '' }));
    fx.manager.addPod(pod([withProbes({ livenessProbe: exec() })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(0);
    await fx.clock.advance(1000);
    expect(fx.manager.failedProbe('c1')).to.equal(undefined);
    await fx.clock.advance(1000);
    expect(fx.manager.failedProbe('c1')).to.equal('liveness');
    expect(fx.runs).to.have.length(3);
    // Exec output is quoted as it is, empty here (prober.go "%s probe failed: %s").
    expect(fx.events.map((e) => e.message)).to.deep.equal(['Liveness probe failed: ', 'Liveness probe failed: ', 'Liveness probe failed: ']);
    await fx.clock.advance(5000);
    expect(fx.runs).to.have.length(3);
    // The restarted container starts over from success (liveness's initial value).
    fx.observe(fx.running('c2'));
    await fx.clock.advance(1000);
    expect(fx.manager.failedProbe('c2')).to.equal(undefined);
    expect(fx.runs.at(-1)!.containerId).to.equal('c2');
  });

  it('the startup probe holds liveness and readiness back until it succeeds; started follows it', async () => {
    let startupOk = false;
    const fx = fixture((type) => ({ result: type === 'Startup' && !startupOk ? 'failure' : 'success', output: 'x' }));
    fx.manager.addPod(pod([withProbes({ startupProbe: exec({ failureThreshold: 10 }), livenessProbe: exec(), readinessProbe: exec() })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(2000);
    expect(fx.manager.isStarted('uid-1', 'app', 'c1')).to.equal(false);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(false);
    expect(new Set(fx.runs.map((r) => r.type))).to.deep.equal(new Set(['Startup']));
    startupOk = true;
    await fx.clock.advance(1000);
    expect(fx.manager.isStarted('uid-1', 'app', 'c1')).to.equal(true);
    await fx.clock.advance(1000);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(true);
    expect(fx.runs.filter((r) => r.type === 'Liveness')).to.have.length.greaterThan(0);
    // Once started, the startup probe is not run again.
    const startups = fx.runs.filter((r) => r.type === 'Startup').length;
    await fx.clock.advance(3000);
    expect(fx.runs.filter((r) => r.type === 'Startup')).to.have.length(startups);
  });

  it('a startup probe that fails failureThreshold times asks for the container to be killed', async () => {
    const fx = fixture(() => ({ result: 'failure', output: 'dial tcp 127.10.0.2:80: connect: connection refused' }));
    fx.manager.addPod(pod([withProbes({ startupProbe: { tcpSocket: { port: 80 }, periodSeconds: 1, failureThreshold: 2 } })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(1000);
    expect(fx.manager.failedProbe('c1')).to.equal('startup');
    expect(fx.events[0]!.message).to.equal('Startup probe failed: dial tcp 127.10.0.2:80: connect: connection refused');
  });

  it('a probe that errors is tried 3 times, reported as errored, and not counted', async () => {
    const fx = fixture(() => ({ result: 'unknown', output: '', error: new Error('strconv.Atoi: parsing "web": invalid syntax') }));
    fx.manager.addPod(pod([withProbes({ livenessProbe: exec({ failureThreshold: 1 }) })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(0);
    expect(fx.runs).to.have.length(3);
    expect(fx.events).to.deep.equal([{ type: 'Warning', reason: 'Unhealthy', message: 'Liveness probe errored and resulted in unknown state: strconv.Atoi: parsing "web": invalid syntax', container: 'app' }]);
    expect(fx.manager.failedProbe('c1')).to.equal(undefined);
  });

  it('a redirect to another host is a success with a ProbeWarning event', async () => {
    const fx = fixture(() => ({ result: 'warning', output: 'Probe terminated redirects, Response body: moved' }));
    fx.manager.addPod(pod([withProbes({ readinessProbe: exec() })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(0);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(true);
    expect(fx.events).to.deep.equal([{ type: 'Warning', reason: 'ProbeWarning', message: 'Readiness probe warning: Probe terminated redirects, Response body: moved', container: 'app' }]);
  });

  it('a container that is not running is not probed and is not ready', async () => {
    const fx = fixture(() => ({ result: 'success', output: '' }));
    fx.manager.addPod(pod([withProbes({ readinessProbe: exec() })]));
    fx.observe(fx.running('c1'));
    await fx.clock.advance(0);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(true);
    fx.observe({ name: 'app', containerId: 'c1', state: 'terminated' });
    await fx.clock.advance(1000);
    expect(fx.runs).to.have.length(1);
    expect(fx.manager.isReady('uid-1', 'app', 'c1')).to.equal(false);
  });

  it('workers stop when the pod completed, and when it is removed', async () => {
    const fx = fixture(() => ({ result: 'success', output: '' }));
    fx.manager.addPod(pod([withProbes({ readinessProbe: exec() })]));
    fx.observe(fx.running('c1'), 'Succeeded');
    await fx.clock.advance(0);
    expect(fx.clock.pending()).to.equal(0);
    fx.manager.addPod({ ...pod([withProbes({ readinessProbe: exec() })]), metadata: { uid: 'uid-2' } });
    expect(fx.clock.pending()).to.equal(1);
    fx.manager.removePod('uid-2');
    expect(fx.clock.pending()).to.equal(0);
  });

  it('ten thousand probed pods wait on one timer of the wheel, not a timer each', () => {
    const wheel = new TimerWheel();
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const manager = new ProbeManager({ scheduler: wheel, exec: () => Promise.reject(new Error('x')), onResult: () => {}, onEvent: () => {} });
    try {
      for (let i = 0; i < 10_000; i++) manager.addPod({ ...pod([withProbes({ readinessProbe: exec(), livenessProbe: exec() })]), metadata: { uid: `uid-${i}` } });
      expect(timers() - before).to.equal(1);
      manager.stop();
    } finally {
      wheel.stop();
    }
    expect(timers()).to.equal(before);
  });

  it('workers created in the first period start at a random point of it; later ones at once', async () => {
    const clock = new ManualClock();
    const delays: number[] = [];
    const scheduler: Scheduler = { schedule: (fn, delay) => (delays.push(delay), clock.schedule(fn, delay)) };
    const manager = new ProbeManager({ scheduler, exec: () => Promise.reject(new Error('x')), onResult: () => {}, onEvent: () => {}, now: () => clock.now, random: () => 0.5 });
    manager.addPod(pod([withProbes({ readinessProbe: exec({ periodSeconds: 10 }) })]));
    await clock.advance(20_000);
    manager.addPod({ ...pod([withProbes({ readinessProbe: exec({ periodSeconds: 10 }) })]), metadata: { uid: 'uid-2' } });
    expect(delays[0]).to.equal(5000);
    expect(delays.at(-1)).to.equal(0);
  });
});
