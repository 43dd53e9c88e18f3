// The pieces that keep many simulated nodes cheap: the process's one timer wheel (lease and status
// ticks) and each node's client token bucket (client-go flowcontrol's, --kube-api-qps/-burst).
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliPath } from '../support/paths.js';
import { runProcess } from '../support/process.js';
import { RateLimitedApi, rateLimited, type ApiRequester } from '../../src/kubelet/node/api-client.js';
import { TimerWheel } from '../../src/kubelet/node/timer-wheel.js';
import { waitUntil } from '../support/wait.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('TimerWheel', () => {
  it('runs each task once, never before its due time, in due order across slots and revolutions', async () => {
    // 8 slots of 10 ms: 120 ms is more than one revolution ahead.
    const wheel = new TimerWheel(10, 8);
    const ran: { name: string; late: number }[] = [];
    const start = Date.now();
    for (const [name, delay] of [['c', 120], ['a', 0], ['b', 35], ['d', 125]] as const) {
      wheel.schedule(() => ran.push({ name, late: Date.now() - start - delay }), delay);
    }
    // A loaded machine may turn the wheel late, so wait for the four runs; then one more
    // revolution (80 ms) would show a task that runs twice.
    await waitUntil('the four tasks', () => ran.length === 4);
    await sleep(100);
    wheel.stop();
    expect(ran.map((r) => r.name)).to.deep.equal(['a', 'b', 'c', 'd']);
    for (const r of ran) expect(r.late, r.name).to.be.at.least(0);
  });

  it('does not run a cancelled task, nor anything after stop()', async () => {
    const wheel = new TimerWheel(5, 16);
    const ran: string[] = [];
    const cancelled = wheel.schedule(() => ran.push('cancelled'), 10);
    wheel.schedule(() => ran.push('kept'), 10);
    cancelled.cancel();
    // Both were due in the same slot, so the turn that ran 'kept' would have run the other.
    await waitUntil("the task that was kept", () => ran.length > 0);
    expect(ran).to.deep.equal(['kept']);
    wheel.schedule(() => ran.push('after stop'), 5);
    wheel.stop();
    wheel.schedule(() => ran.push('scheduled after stop'), 0);
    await sleep(30);
    expect(ran).to.deep.equal(['kept']);
  });

  it('a task that throws does not keep the others from running', async () => {
    const wheel = new TimerWheel(5, 16);
    const ran: string[] = [];
    wheel.schedule(() => {
      throw new Error('boom');
    }, 5);
    wheel.schedule(() => ran.push('second'), 5);
    await waitUntil('the second task', () => ran.length > 0);
    wheel.stop();
    expect(ran).to.deep.equal(['second']);
  });
});

describe('RateLimitedApi (a node client token bucket)', () => {
  const recorder = (): ApiRequester & { at: number[]; paths: string[] } => {
    const at: number[] = [];
    const paths: string[] = [];
    return {
      at,
      paths,
      description: 'test',
      async request<T>(_method: string, path: string) {
        at.push(Date.now());
        paths.push(path);
        return {} as T;
      },
      get<T>(path: string) {
        return this.request<T>('GET', path);
      },
    };
  };

  it('lets a burst through at once, then one request per 1/qps seconds, in order', async () => {
    const inner = recorder();
    const api = new RateLimitedApi(inner, 5, 3);
    const start = Date.now();
    await Promise.all(Array.from({ length: 5 }, (_, i) => api.request('GET', `/${i}`)));
    const offsets = inner.at.map((t) => t - start);
    expect(inner.paths).to.deep.equal(['/0', '/1', '/2', '/3', '/4']);
    // The 4th and 5th waited for tokens: 200 ms and 400 ms at 5 qps. Their timers are armed at
    // the same instant, so on a busy machine the 4th may fire late and close up on the 5th; what
    // holds is that the 4th went in its own slot, before the 5th's was due.
    expect(offsets[3]).to.be.at.least(195);
    expect(offsets[3]).to.be.below(395);
    expect(offsets[4]).to.be.at.least(395);
  });

  it('a negative qps means no limiter (client-go: QPS < 0 disables it)', () => {
    const inner = recorder();
    expect(rateLimited(inner, -1, 0)).to.equal(inner);
    expect(rateLimited(inner, 5, 10)).to.be.instanceOf(RateLimitedApi);
  });
});

describe('node mode: client limit flags', function () {
  this.timeout(30_000);
  for (const [flag, value, text] of [
    ['--kube-api-qps', 'abc', 'error: --kube-api-qps: "abc" is not a number'],
    ['--event-burst', '1.5', 'error: --event-burst: "1.5" is not a whole number'],
  ] as const) {
    it(`${flag} ${value}: names the flag before anything starts (no state dir)`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'cwn-qps-'));
      try {
        const res = await runProcess(process.execPath, [cliPath, 'node', '--kubeconfig', join(dir, 'missing.kubeconfig'), '--hostname-override', 'w1', '--state-dir', join(dir, 's'), flag, value], { killAfterMs: 20_000 });
        expect(res.code).to.equal(1);
        expect(res.stderr.trim()).to.equal(text);
        expect(existsSync(join(dir, 's'))).to.equal(false);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});
