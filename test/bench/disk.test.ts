import { expect } from 'chai';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { QUIET_CREATE_P90_MS, measureFileCreates, waitForQuietDisk } from '../../bench/disk.js';
import { summarize } from '../../bench/stats.js';
import { tempDirPerTest } from '../support/temp-dir.js';

describe('bench disk probe', () => {
  const dir = tempDirPerTest('winsim-disk-');

  it('times each create and keeps the files it made (a removal would slow the runs it describes)', async () => {
    const summary = measureFileCreates(dir(), 25);
    expect(summary.count).to.equal(25);
    expect(summary.min).to.be.greaterThan(0);
    const [probeDir, ...others] = await readdir(dir());
    expect(others).to.deep.equal([]);
    expect(await readdir(join(dir(), probeDir!))).to.have.length(25);
  });

  /** A probe that reports the given p90s in turn, on a clock that the waits move. */
  function scripted(p90s: number[]) {
    let clock = 0;
    const waits: number[] = [];
    return {
      waits,
      probe: () => summarize([p90s.shift() ?? Number.NaN]),
      sleep: async (ms: number) => {
        waits.push(ms);
        clock += ms;
      },
      now: () => clock,
    };
  }

  it('goes on after a second quiet probe one interval later, saying nothing', async () => {
    const s = scripted([0.03, 0.04]);
    const lines: string[] = [];
    const result = await waitForQuietDisk(dir(), { maxWaitMs: 60_000, intervalMs: 15_000, ...s, log: (l) => lines.push(l) });
    expect(result).to.deep.equal({ settled: true, waitedMs: 15_000, probesP90Ms: [0.03, 0.04] });
    expect(s.waits).to.deep.equal([15_000]);
    expect(lines).to.deep.equal([]);
  });

  it('waits while creates are slow, counts quiet probes only in a row, and says when it goes on', async () => {
    const s = scripted([0.3, QUIET_CREATE_P90_MS, 0.25, 0.04, 0.03]);
    const lines: string[] = [];
    const result = await waitForQuietDisk(dir(), { maxWaitMs: 120_000, intervalMs: 15_000, ...s, log: (l) => lines.push(l) });
    expect(result).to.deep.equal({ settled: true, waitedMs: 60_000, probesP90Ms: [0.3, 0.08, 0.25, 0.04, 0.03] });
    expect(s.waits).to.deep.equal([15_000, 15_000, 15_000, 15_000]);
    expect(lines[0]).to.contain('p90 0.300 ms');
    expect(lines).to.have.length(3);
    expect(lines.at(-1)).to.equal('disk: settled after 60 s (create p90 0.030 ms)');
  });

  it('gives up at its bound and reports the disk as not settled', async () => {
    const s = scripted([0.3, 0.3, 0.02, 0.3]);
    const lines: string[] = [];
    const result = await waitForQuietDisk(dir(), { maxWaitMs: 40_000, intervalMs: 15_000, ...s, log: (l) => lines.push(l) });
    expect(result).to.deep.equal({ settled: false, waitedMs: 30_000, probesP90Ms: [0.3, 0.3, 0.02] });
    expect(lines.at(-1)).to.equal('disk: still busy after 30 s (create p90 0.020 ms); going on');
  });

  it('with no wait allowed probes once and goes on, settled or not', async () => {
    for (const [p90, settled] of [
      [0.3, false],
      [0.02, true],
    ] as const) {
      const s = scripted([p90]);
      const lines: string[] = [];
      const result = await waitForQuietDisk(dir(), { maxWaitMs: 0, intervalMs: 15_000, ...s, log: (l) => lines.push(l) });
      expect(result).to.deep.equal({ settled, waitedMs: 0, probesP90Ms: [p90] });
      expect(s.waits).to.deep.equal([]);
      expect(lines).to.deep.equal([]);
    }
  });
});
