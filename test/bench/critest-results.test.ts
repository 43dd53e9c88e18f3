import { expect } from 'chai';
import { parseCritestResults, summarizeCritestResults } from '../../bench/critest-results.js';

describe('critest benchmark results', () => {
  const file = {
    operationsNames: ['CreateContainer', 'StartContainer'],
    numParallel: 2,
    datapoints: [
      { sampleIndex: 0, startTime: 1_000_000_000, endTime: 1_004_000_000, operationsDurationsNs: [1_000_000, 3_000_000], metaInfo: null },
      { sampleIndex: 1, startTime: 2_000_000_000, endTime: 2_002_000_000, operationsDurationsNs: [2_000_000, 500_000], metaInfo: null },
    ],
  };

  it('summarises each operation and the whole lifecycle in milliseconds', () => {
    const s = summarizeCritestResults(parseCritestResults('container_benchmark_data.json', file));
    expect(s.samples).to.equal(2);
    expect(s.numParallel).to.equal(2);
    expect(Object.keys(s.operations)).to.deep.equal(['CreateContainer', 'StartContainer']);
    expect(s.operations.CreateContainer.p50).to.equal(1);
    expect(s.operations.CreateContainer.max).to.equal(2);
    expect(s.operations.StartContainer.min).to.equal(0.5);
    expect(s.lifecycle?.p99).to.equal(4);
  });

  it('refuses a file of the wrong shape, naming the file and field', () => {
    expect(() => parseCritestResults('x.json', null)).to.throw('x.json: not a JSON object');
    expect(() => parseCritestResults('x.json', { datapoints: [] })).to.throw('x.json: operationsNames must be an array of strings');
    expect(() => parseCritestResults('x.json', { operationsNames: [], datapoints: [{ operationsDurationsNs: ['1'] }] })).to.throw(
      'x.json: datapoints[0].operationsDurationsNs must be an array of numbers',
    );
  });
});

describe('critest output parsing', () => {
  it('reads Go durations', async () => {
    const { parseGoDurationMs } = await import('../../bench/critest-results.js');
    expect(parseGoDurationMs('5ms')).to.equal(5);
    expect(parseGoDurationMs('1.5s')).to.equal(1500);
    expect(parseGoDurationMs('1m2s')).to.equal(62000);
    expect(parseGoDurationMs('250µs')).to.equal(0.25);
    expect(parseGoDurationMs('0s')).to.equal(0);
    expect(parseGoDurationMs('fast')).to.equal(null);
  });

  it('finds the median of the start-a-container-from-scratch row', async () => {
    const { startFromScratchMedianMs } = await import('../../bench/critest-results.js');
    const log = [
      '  start-container-benchmark',
      '  Name                                        | N | Min | Median | Mean | StdDev | Max',
      '  create PodSandbox and container [duration] | 1 | 5ms | 7ms    | 5ms  | 0s     | 5ms',
    ].join('\n');
    expect(startFromScratchMedianMs(log)).to.equal(7);
    expect(startFromScratchMedianMs('nothing here')).to.equal(null);
  });
});
