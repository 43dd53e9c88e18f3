import { expect } from 'chai';
import { hotSpots, type CpuProfile } from '../../bench/profile-summary.js';

describe('CPU profile hot spots', () => {
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [2, 3, 4] },
      { id: 2, callFrame: { functionName: 'listContainers', url: 'file:///x/dist/src/runtime/store.js', lineNumber: 41 } },
      { id: 3, callFrame: { functionName: '(idle)', url: '', lineNumber: -1 } },
      { id: 4, callFrame: { functionName: '', url: 'file:///x/node_modules/pino/lib/proto.js', lineNumber: 9 } },
    ],
    samples: [2, 2, 3, 4, 2],
    timeDeltas: [1000, 2000, 50000, 1000, 1000],
  };

  it('ranks functions by self time, leaves idle out and shortens paths', () => {
    const spots = hotSpots(profile, 10);
    expect(spots).to.deep.equal([
      { frame: 'listContainers (dist/src/runtime/store.js:42)', selfMs: 4, selfPercent: 80 },
      { frame: '(anonymous) (node_modules/pino/lib/proto.js:10)', selfMs: 1, selfPercent: 20 },
    ]);
  });

  it('keeps only the top N', () => {
    expect(hotSpots(profile, 1)).to.have.length(1);
  });
});
