import { expect } from 'chai';
import { attributeTail, summarizeGc, tailCause, type GcPause, type TailCause, type TimedSpan } from '../../bench/tail-attribution.js';

describe('bench tail attribution', () => {
  const call: TimedSpan = { start: 100, end: 104 };
  const cases: { name: string; handler?: TimedSpan; server: GcPause[]; client: GcPause[]; cause: TailCause }[] = [
    { name: 'a server pause inside the call', server: [{ start: 101, duration: 2 }], client: [], cause: 'serverGc' },
    { name: 'a server pause that began before the call and ran into it', server: [{ start: 99, duration: 1.5 }], client: [], cause: 'serverGc' },
    { name: 'server before client when both paused', server: [{ start: 101, duration: 1 }], client: [{ start: 102, duration: 1 }], cause: 'serverGc' },
    { name: 'a client pause', server: [{ start: 95, duration: 2 }], client: [{ start: 103, duration: 3 }], cause: 'clientGc' },
    { name: 'a handler taking most of the call', handler: { start: 100.2, end: 103 }, server: [], client: [], cause: 'handler' },
    { name: 'a short handler in a long call', handler: { start: 100.2, end: 100.5 }, server: [], client: [], cause: 'other' },
    { name: 'pauses that ended before the call', server: [{ start: 90, duration: 10 }], client: [{ start: 98, duration: 2 }], cause: 'other' },
    { name: 'a pause that began as the call ended', server: [{ start: 104, duration: 1 }], client: [], cause: 'other' },
  ];
  for (const c of cases) {
    it(`puts a slow call down to ${c.cause}: ${c.name}`, () => {
      expect(tailCause(call, c.handler, c.server, c.client)).to.equal(c.cause);
    });
  }

  it('counts only calls over the threshold and matches the n-th call of an operation with its n-th handler', () => {
    const calls = [
      { operation: 'StartContainer', start: 0, end: 1 },
      { operation: 'StartContainer', start: 10, end: 13 },
      { operation: 'StopContainer', start: 20, end: 23 },
      { operation: 'StartContainer', start: 30, end: 33 },
    ];
    const handlers = new Map([
      ['StartContainer', [{ start: 0.1, end: 0.9 }, { start: 10.1, end: 12.9 }, { start: 30.1, end: 30.2 }]],
    ]);
    const result = attributeTail(calls, handlers, [], [{ start: 21, duration: 1 }], 1.5);
    expect(result.total).to.equal(3);
    expect(result.byCause).to.deep.equal({ serverGc: 0, clientGc: 1, handler: 1, other: 1 });
    expect(result.perOperation).to.deep.equal({
      StartContainer: { over: 2, serverGc: 0, clientGc: 0, handler: 1, other: 1 },
      StopContainer: { over: 1, serverGc: 0, clientGc: 1, handler: 0, other: 0 },
    });
  });

  it('summarises pauses', () => {
    expect(summarizeGc([{ start: 0, duration: 1.234 }, { start: 5, duration: 3.5 }])).to.deep.equal({ count: 2, totalMs: 4.73, maxMs: 3.5 });
    expect(summarizeGc([])).to.deep.equal({ count: 0, totalMs: 0, maxMs: 0 });
  });
});
