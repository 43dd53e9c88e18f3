import { expect } from 'chai';
import { ProcessSignal } from '../../src/emulator/process-signal.js';

describe('ProcessSignal', () => {
  it('is not aborted and has no reason until a signal arrives; then keeps the first one', () => {
    const signal = new ProcessSignal();
    expect(signal.aborted).to.equal(false);
    expect(signal.reason).to.equal(undefined);
    signal.abort('SIGTERM');
    signal.abort('SIGKILL');
    expect(signal.aborted).to.equal(true);
    expect(signal.reason).to.equal('SIGTERM');
  });

  it('runs each listener once, in the order added, and not those removed', () => {
    const signal = new ProcessSignal();
    const calls: string[] = [];
    const removed = (): void => void calls.push('removed');
    signal.addEventListener('abort', () => calls.push(`first ${signal.reason}`), { once: true });
    signal.addEventListener('abort', removed);
    signal.addEventListener('abort', () => calls.push('second'));
    signal.removeEventListener('abort', removed);
    signal.abort('SIGINT');
    signal.abort('SIGTERM');
    expect(calls).to.deep.equal(['first SIGINT', 'second']);
  });

  it('does not call a listener added after the signal arrived (callers check aborted first, as with AbortSignal)', () => {
    const signal = new ProcessSignal();
    signal.abort('SIGTERM');
    let called = false;
    signal.addEventListener('abort', () => (called = true));
    expect(called).to.equal(false);
  });

  it('sleeps for the time given', async () => {
    const signal = new ProcessSignal();
    const started = performance.now();
    await signal.sleep(20);
    expect(performance.now() - started).to.be.at.least(19);
  });

  it('ends a sleep with an AbortError naming the signal as soon as it arrives', async () => {
    const signal = new ProcessSignal();
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const sleeping = signal.sleep(60_000).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(timers()).to.equal(before + 1);
    signal.abort('SIGTERM');
    // The sleep's 60 s timer goes with the signal.
    expect(timers()).to.equal(before);
    const err = await sleeping;
    expect(err?.name).to.equal('AbortError');
    expect(err?.message).to.equal('terminated by SIGTERM');
  });

  it('rejects a sleep started after the signal arrived at once', async () => {
    const signal = new ProcessSignal();
    signal.abort('SIGKILL');
    const err = await signal.sleep(60_000).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.equal('terminated by SIGKILL');
  });

  it('sleepUntilKilled outlasts a trapped signal and ends at SIGKILL, or after its time', async () => {
    const signal = new ProcessSignal();
    signal.abort('SIGTERM');
    let ended = false;
    const waiting = signal.sleepUntilKilled(60_000).then(() => (ended = true));
    signal.abort('SIGTERM');
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).to.equal(false);
    signal.abort('SIGKILL');
    await waiting;
    expect(signal.reason).to.equal('SIGTERM');
    const started = Date.now();
    await new ProcessSignal().sleepUntilKilled(20);
    expect(Date.now() - started).to.be.at.least(15);
    const killed = new ProcessSignal();
    killed.abort('SIGKILL');
    await killed.sleepUntilKilled(60_000);
  });
});
