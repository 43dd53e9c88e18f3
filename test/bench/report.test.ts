import { expect } from 'chai';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { escapeXml, formatValue, renderBarChart } from '../../bench/chart.js';
import { compareLifecycle, writeReport, type BenchReport, type LifecycleRun } from '../../bench/report.js';
import { summarize } from '../../bench/stats.js';

function run(rpcsPerSecond: number, latencies: number[]): LifecycleRun {
  return {
    pods: 10,
    failedPods: 0,
    elapsedMs: 1000,
    podsPerSecond: rpcsPerSecond / 8,
    rpcsPerSecond,
    stoppedBy: 'time',
    errors: [],
    operations: { RunPodSandbox: summarize(latencies) },
  };
}

function sampleReport(): BenchReport {
  const ours = summarize([10, 20, 30]);
  const floor = summarize([1, 2, 3]);
  return {
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:01:00.000Z',
    command: 'node dist/bench/run.js --quick',
    machine: { cpus: 2, cpuModel: 'test', totalMemoryMiB: 1024, node: 'v20', platform: 'linux-x64' },
    loadGenerator: { nodeArgs: ['--single-threaded-gc'], kubelet: 'a process of its own' },
    bounds: { secondsPerLifecycleRun: 2 },
    runtime: { startupMs: 300, startupSamplesMs: [300], rssAtStartKiB: 50000, memory: [] },
    lifecycle: [compareLifecycle('gmsa-lifecycle', 64, run(600, [2, 4]), run(1000, [1, 2]))],
    lists: [{ operation: 'ListContainers', liveObjects: 10000, itemsReturned: 10000, runtime: ours, floor, ratios: { p50: 10, p90: 10, p99: 10 } }],
    kubelet: null,
    targets: [],
    notes: [],
  };
}

describe('bench report writers', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bench-report-test-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('compares a lifecycle run with the floor figure by figure', () => {
    const c = compareLifecycle('plain-lifecycle', 1, run(300, [3, 6]), run(1000, [1, 2]));
    expect(c.ratios.rpcsPerSecond).to.equal(0.3);
    expect(c.ratios.podsPerSecond).to.equal(0.3);
    expect(c.ratios.operations.RunPodSandbox).to.deep.equal({ p50: 3, p90: 3, p99: 3 });
  });

  it('writes the JSON document and two SVG charts that name every row', () => {
    const paths = writeReport(dir, sampleReport());
    expect(readdirSync(dir).sort()).to.deep.equal(['bench-results.json', 'lifecycle-throughput.svg', 'list-latency.svg']);
    expect(paths).to.have.length(3);
    const json = JSON.parse(readFileSync(join(dir, 'bench-results.json'), 'utf8')) as BenchReport;
    expect(json.lifecycle[0].ratios.rpcsPerSecond).to.equal(0.6);
    expect(json.lists[0].runtime.p50).to.equal(20);
    const throughput = readFileSync(join(dir, 'lifecycle-throughput.svg'), 'utf8');
    expect(throughput).to.match(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(throughput).to.contain('gmsa-lifecycle c=64');
    expect(throughput).to.contain('>600<');
    expect(throughput).to.contain('>1000<');
    expect(throughput.trimEnd()).to.match(/<\/svg>$/);
    const lists = readFileSync(join(dir, 'list-latency.svg'), 'utf8');
    expect(lists).to.contain('ListContainers 10,000');
  });

  it('scales bars to the largest value and marks missing values', () => {
    const svg = renderBarChart({
      title: 'T',
      unit: 'ms',
      series: [{ name: 'a', color: '#000' }, { name: 'b', color: '#fff' }],
      rows: [{ label: 'x', values: [100, 50] }, { label: 'y', values: [null, 25] }],
    });
    const widths = [...svg.matchAll(/<rect x="230" y="\d+" width="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(widths).to.deep.equal([400, 200, 100]);
    expect(svg).to.contain('not measured');
  });

  it('escapes text and refuses rows that do not fit the series', () => {
    expect(escapeXml('<a & "b">')).to.equal('&lt;a &amp; &quot;b&quot;&gt;');
    const svg = renderBarChart({ title: 'p<50> & co', unit: 'ms', series: [{ name: 's', color: '#000' }], rows: [] });
    expect(svg).to.contain('p&lt;50&gt; &amp; co');
    expect(() =>
      renderBarChart({ title: 't', unit: 'u', series: [{ name: 's', color: '#000' }], rows: [{ label: 'bad', values: [1, 2] }] }),
    ).to.throw(RangeError, /"bad" has 2 values for 1 series/);
    expect(() =>
      renderBarChart({ title: 't', unit: 'u', series: [{ name: 's', color: '#000' }], rows: [{ label: 'neg', values: [-1] }] }),
    ).to.throw(RangeError, /"neg"/);
  });

  it('formats values to about three significant digits', () => {
    expect(formatValue(1234.56)).to.equal('1235');
    expect(formatValue(12.345)).to.equal('12.3');
    expect(formatValue(1.2345)).to.equal('1.23');
    expect(formatValue(0.012345)).to.equal('0.0123');
    expect(formatValue(0)).to.equal('0');
  });
});
