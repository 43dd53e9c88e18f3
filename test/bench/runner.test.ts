import { expect } from 'chai';
import { abbaOrder, runConcurrently } from '../../bench/runner.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('bench concurrency runner', () => {
  it('runs exactly maxIterations iterations, each index once, with at most `concurrency` in flight', async () => {
    const seen: number[] = [];
    let inFlight = 0;
    let peak = 0;
    const outcome = await runConcurrently({ concurrency: 4, maxIterations: 25, maxDurationMs: 10000 }, async (_w, i) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await sleep(2);
      seen.push(i);
      inFlight--;
    });
    expect(outcome.completed).to.equal(25);
    expect(outcome.failed).to.equal(0);
    expect(outcome.stoppedBy).to.equal('iterations');
    expect([...seen].sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 25 }, (_, i) => i));
    expect(peak).to.equal(4);
  });

  it('stops starting iterations when the time budget is spent', async () => {
    const starts: number[] = [];
    const outcome = await runConcurrently({ concurrency: 2, maxIterations: 1_000_000, maxDurationMs: 100 }, () => {
      starts.push(performance.now());
      return sleep(10);
    });
    const end = performance.now();
    expect(outcome.stoppedBy).to.equal('time');
    // How many 10 ms sleeps fit in 100 ms depends on how busy the machine is; what the budget
    // fixes is that each worker ran and none started an iteration after it was spent. The run
    // began no later than end - elapsedMs, so its budget ended no later than 100 ms after that.
    expect(outcome.completed).to.equal(starts.length);
    expect(outcome.completed).to.be.within(2, 40);
    expect(outcome.elapsedMs).to.be.at.least(100);
    for (const at of starts) expect(at).to.be.below(end - outcome.elapsedMs + 100);
  });

  it('abandons the run after maxFailures and keeps distinct error messages', async () => {
    const outcome = await runConcurrently({ concurrency: 3, maxIterations: 1000, maxDurationMs: 10000, maxFailures: 5 }, async (_w, i) => {
      await sleep(1);
      throw new Error(`failure ${i % 2}`);
    });
    expect(outcome.stoppedBy).to.equal('failures');
    expect(outcome.failed).to.be.within(5, 7);
    expect(outcome.completed).to.equal(0);
    expect([...outcome.errors].sort()).to.deep.equal(['failure 0', 'failure 1']);
  });

  it('refuses bounds that would not terminate or make no sense', async () => {
    for (const bounds of [
      { concurrency: 0, maxIterations: 1, maxDurationMs: 1 },
      { concurrency: 1, maxIterations: 0, maxDurationMs: 1 },
      { concurrency: 1, maxIterations: 1, maxDurationMs: 0 },
      { concurrency: 1.5, maxIterations: 1, maxDurationMs: 1 },
    ]) {
      let caught: unknown;
      try {
        await runConcurrently(bounds, async () => {});
      } catch (err) {
        caught = err;
      }
      expect(caught, JSON.stringify(bounds)).to.be.instanceOf(RangeError);
    }
  });
});

describe('bench round order', () => {
  it('alternates A B B A, so each target goes first as often and gets the rounds asked for', () => {
    expect(abbaOrder('a', 'b', 2)).to.deep.equal(['a', 'b', 'b', 'a']);
    const order = abbaOrder('runtime', 'floor', 30);
    expect(order).to.have.length(60);
    expect(order.filter((t) => t === 'runtime')).to.have.length(30);
    for (let i = 0; i < order.length; i += 4) expect(order.slice(i, i + 4)).to.deep.equal(['runtime', 'floor', 'floor', 'runtime']);
  });

  it('refuses an odd or too small number of rounds', () => {
    for (const n of [0, 1, 3, 2.5, -2]) expect(() => abbaOrder('a', 'b', n), String(n)).to.throw(RangeError, /even integer >= 2/);
  });
});
