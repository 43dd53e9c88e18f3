// client-go v0.34 util/flowcontrol/backoff.go (Next, IsInBackOffSinceUpdate, GC, hasExpired) with
// the kubelet's container back-off: backOffPeriod 10 s, MaxContainerBackOff 300 s
// (kubernetes v1.34 pkg/kubelet/kubelet.go and the kubelet config).
import { expect } from 'chai';
import { Backoff, ContainerBackoff, backOffPeriodMs, maxContainerBackOffMs } from '../../../src/kubelet/sync/backoff.js';

describe('Backoff (client-go flowcontrol)', () => {
  it('defaults to the kubelet container back-off: 10 s doubling to 300 s', () => {
    expect([backOffPeriodMs, maxContainerBackOffMs]).to.deep.equal([10_000, 300_000]);
    const b = new Backoff();
    const delays: number[] = [];
    let now = 0;
    for (let i = 0; i < 8; i++) {
      b.next('pod/c', now);
      delays.push(b.get('pod/c'));
      now += 1_000;
    }
    expect(delays).to.deep.equal([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000]);
  });

  it('Get of a key never backed off is 0, and nothing holds it', () => {
    const b = new Backoff();
    expect(b.get('x')).to.equal(0);
    expect(b.isInBackOffSinceUpdate('x', 5)).to.equal(false);
    expect(b.endsAt('x', 5)).to.equal(undefined);
  });

  it('holds a key for its delay since the last Next, and no longer', () => {
    const b = new Backoff(10_000, 300_000);
    b.next('k', 1_000);
    expect(b.isInBackOffSinceUpdate('k', 10_999)).to.equal(true);
    expect(b.endsAt('k', 10_999)).to.equal(11_000);
    expect(b.isInBackOffSinceUpdate('k', 11_000)).to.equal(false);
  });

  it('starts a key over after twice the cap of quiet (hasExpired)', () => {
    const b = new Backoff(10_000, 300_000);
    b.next('k', 0);
    b.next('k', 1);
    expect(b.get('k')).to.equal(20_000);
    b.next('k', 1 + 600_000);
    expect(b.get('k')).to.equal(40_000);
    b.next('k', 1 + 600_000 + 600_001);
    expect(b.get('k')).to.equal(10_000);
  });

  it('GC drops the entries quiet for more than twice the cap; Reset drops one', () => {
    const b = new Backoff(10_000, 300_000);
    b.next('old', 0);
    b.next('new', 500_000);
    b.gc(600_001);
    expect(b.keys()).to.deep.equal(['new']);
    b.reset('new');
    expect(b.keys()).to.deep.equal([]);
  });

  it('keys are independent', () => {
    const b = new Backoff(10, 100);
    b.next('a', 0);
    b.next('a', 0);
    b.next('b', 0);
    expect([b.get('a'), b.get('b')]).to.deep.equal([20, 10]);
  });
});

// kuberuntime_manager.go doBackOff (backOff.Next on every restart of an exited container),
// pod_workers.go completeWork (a failed sync is retried after backOffPeriod, not doubled), and
// the image manager's pull back-off (ImagePullBackOff).
describe('ContainerBackoff (the kubelet restart back-off)', () => {
  it('an exited container doubles its back-off; a start that left no exited container retries at the initial delay', () => {
    const b = new ContainerBackoff(10_000, 300_000);
    b.noteFailure('u1/a', undefined, 0);
    b.noteFailure('u1/a', 'RunContainerError', 10_000);
    expect(b.heldBack('u1/a', 10_000)).to.deep.equal({ delayMs: 20_000, reason: 'CrashLoopBackOff' });
    b.noteFailure('u1/a', 'RunContainerError', 30_000, false);
    expect(b.heldBack('u1/a', 30_000)).to.deep.equal({ delayMs: 10_000, reason: 'CrashLoopBackOff' });
    expect(b.causeOf('u1/a', 40_000)).to.deep.equal({ reason: 'CrashLoopBackOff', failure: 'RunContainerError', holding: false });
  });

  it('a failed pull is ImagePullBackOff and always advances', () => {
    const b = new ContainerBackoff(10_000, 300_000);
    b.noteFailure('u1/a', 'ErrImagePull', 0, false);
    b.noteFailure('u1/a', 'ErrImagePull', 10_000, false);
    expect(b.heldBack('u1/a', 10_000)).to.deep.equal({ delayMs: 20_000, reason: 'ImagePullBackOff' });
  });

  it('tells when the earliest back-off of a pod ends, and forgets a pod whole', () => {
    const b = new ContainerBackoff(10_000, 300_000);
    b.noteFailure('u1', 'ContainerCreating', 0);
    b.noteFailure('u1/a', undefined, 5_000);
    b.noteFailure('u10/a', undefined, 0);
    expect(b.nextDelay(1_000, 'u1')).to.equal(9_000);
    expect(b.nextDelay(11_000, 'u1')).to.equal(4_000);
    expect(b.nextDelay(16_000)).to.equal(undefined);
    b.forget('u1');
    expect([b.heldBack('u1', 1_000), b.heldBack('u1/a', 6_000)]).to.deep.equal([undefined, undefined]);
    expect(b.heldBack('u10/a', 1_000)).to.deep.equal({ delayMs: 10_000, reason: 'CrashLoopBackOff' });
  });
});
