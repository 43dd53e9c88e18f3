import { expect } from 'chai';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QUIET_CREATE_P50_MS, measureFileCreates, waitForQuietDisk } from '../../bench/disk.js';
import { summarize } from '../../bench/stats.js';

describe('bench disk probe', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-disk-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('times each create and keeps the files it made (a removal would slow the runs it describes)', async () => {
    const summary = measureFileCreates(dir, 25);
    expect(summary.count).to.equal(25);
    expect(summary.min).to.be.greaterThan(0);
    const [probeDir, ...others] = await readdir(dir);
    expect(others).to.deep.equal([]);
    expect(await readdir(join(dir, probeDir!))).to.have.length(25);
  });

  /** A probe that reports the given p50s in turn, on a clock that the waits move. */
  function scripted(p50s: number[]) {
    let clock = 0;
    const waits: number[] = [];
    return {
      waits,
      probe: () => summarize([p50s.shift() ?? Number.NaN]),
      sleep: async (ms: number) => {
        waits.push(ms);
        clock += ms;
      },
      now: () => clock,
    };
  }

  it('goes on at once when the file system is quiet', async () => {
    const s = scripted([0.02]);
    const lines: string[] = [];
    const result = await waitForQuietDisk(dir, { maxWaitMs: 60_000, intervalMs: 15_000, ...s, log: (l) => lines.push(l) });
    expect(result).to.deep.equal({ settled: true, waitedMs: 0, probesP50Ms: [0.02] });
    expect(s.waits).to.deep.equal([]);
    expect(lines).to.deep.equal([]);
  });

  it('waits while creates are slow and goes on once they are quiet, saying so', async () => {
    const s = scripted([0.3, 0.12, QUIET_CREATE_P50_MS]);
    const lines: string[] = [];
    const result = await waitForQuietDisk(dir, { maxWaitMs: 60_000, intervalMs: 15_000, ...s, log: (l) => lines.push(l) });
    expect(result).to.deep.equal({ settled: true, waitedMs: 30_000, probesP50Ms: [0.3, 0.12, 0.05] });
    expect(s.waits).to.deep.equal([15_000, 15_000]);
    expect(lines[0]).to.contain('p50 0.300 ms');
    expect(lines.at(-1)).to.equal('disk: settled after 30 s (create p50 0.050 ms)');
  });

  it('gives up at its bound and reports the disk as not settled', async () => {
    const s = scripted([0.3, 0.3, 0.3, 0.3]);
    const lines: string[] = [];
    const result = await waitForQuietDisk(dir, { maxWaitMs: 40_000, intervalMs: 15_000, ...s, log: (l) => lines.push(l) });
    expect(result).to.deep.equal({ settled: false, waitedMs: 30_000, probesP50Ms: [0.3, 0.3, 0.3] });
    expect(lines.at(-1)).to.equal('disk: still busy after 30 s (create p50 0.300 ms); going on');
  });

  it('with no wait allowed probes once and goes on', async () => {
    const s = scripted([0.3]);
    const lines: string[] = [];
    const result = await waitForQuietDisk(dir, { maxWaitMs: 0, intervalMs: 15_000, ...s, log: (l) => lines.push(l) });
    expect(result).to.deep.equal({ settled: false, waitedMs: 0, probesP50Ms: [0.3] });
    expect(lines).to.deep.equal([]);
  });
});
