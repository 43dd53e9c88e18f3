import { expect } from 'chai';
import type { GCProfilerResult } from 'node:v8';
import { promotionOf, recordPromotion } from '../../bench/gc-promotion.js';

type Statistic = GCProfilerResult['statistics'][number];

/** One collection as V8's GC profiler reports it, with only the space figures that matter here. */
function gc(gcType: string, before: Record<string, number>, after: Record<string, number>): Statistic {
  const spaces = (used: Record<string, number>) =>
    ['new_space', 'old_space', 'code_space', 'large_object_space'].map((spaceName) => ({
      spaceName,
      spaceSize: 0,
      spaceUsedSize: used[spaceName] ?? 0,
      spaceAvailableSize: 0,
      physicalSpaceSize: 0,
    }));
  return { gcType, cost: 0, beforeGC: { heapStatistics: {} as never, heapSpaceStatistics: spaces(before) }, afterGC: { heapStatistics: {} as never, heapSpaceStatistics: spaces(after) } };
}

describe('promotion by scavenges', () => {
  const cases: { name: string; statistics: Statistic[]; scavenges: number; promotedBytes: number }[] = [
    { name: 'no collections', statistics: [], scavenges: 0, promotedBytes: 0 },
    {
      name: 'what the old and large-object spaces gain in a scavenge',
      statistics: [gc('Scavenge', { new_space: 9000, old_space: 1000, large_object_space: 0 }, { new_space: 100, old_space: 1300, large_object_space: 200 })],
      scavenges: 1,
      promotedBytes: 500,
    },
    {
      name: 'summed over scavenges; code space and the young generation do not count',
      statistics: [
        gc('Scavenge', { old_space: 1000, code_space: 10 }, { old_space: 1100, code_space: 90 }),
        gc('Scavenge', { old_space: 1200 }, { old_space: 1250 }),
      ],
      scavenges: 2,
      promotedBytes: 150,
    },
    {
      name: 'full collections shrink the old generation and are not promotion',
      statistics: [gc('MarkSweepCompact', { old_space: 5000 }, { old_space: 1000 }), gc('Scavenge', { old_space: 1000 }, { old_space: 1040 })],
      scavenges: 1,
      promotedBytes: 40,
    },
    {
      name: 'a scavenge after which the old generation is smaller counts as none',
      statistics: [gc('Scavenge', { old_space: 2000 }, { old_space: 1900 })],
      scavenges: 1,
      promotedBytes: 0,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(promotionOf(c.statistics)).to.deep.equal({ scavenges: c.scavenges, promotedBytes: c.promotedBytes });
    });
  }

  it('counts what this process promotes while recording', () => {
    const recording = recordPromotion();
    // Objects kept across several scavenges must be promoted: about 8 MB of them.
    const kept: number[][] = [];
    for (let i = 0; i < 20_000; i++) kept.push(new Array<number>(50).fill(i));
    let garbage = 0;
    for (let i = 0; i < 200_000; i++) garbage += new Array<number>(20).fill(i).length;
    const { scavenges, promotedBytes } = recording.stop();
    expect(garbage).to.be.above(0);
    expect(kept.length).to.equal(20_000);
    expect(scavenges).to.be.above(0);
    expect(promotedBytes).to.be.above(4_000_000);
  });
});
