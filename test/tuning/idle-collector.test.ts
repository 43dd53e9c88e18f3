import { expect } from 'chai';
import { combineObservers } from '../../src/cri/call.js';
import { IdleCollector } from '../../src/tuning/idle-collector.js';

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('idle collector', () => {
  it('collects once after the last changing RPC, re-arming on each; reads neither trigger nor delay it', async () => {
    let collections = 0;
    const collector = new IdleCollector(60, async () => {
      collections++;
    });
    try {
      collector.onCall('ListContainers');
      collector.onCall('ContainerStatus');
      await wait(120);
      expect(collections).to.equal(0);
      collector.onCall('CreateContainer');
      await wait(30);
      collector.onCall('StartContainer');
      await wait(40);
      // 70 ms after the first change but 40 ms after the second: not yet.
      expect(collections).to.equal(0);
      collector.onCall('ListContainers');
      await wait(80);
      expect(collections).to.equal(1);
      await wait(100);
      expect(collections).to.equal(1);
      expect(collector.collections).to.equal(1);
    } finally {
      collector.close();
    }
  });

  it('does nothing after close', async () => {
    let collections = 0;
    const collector = new IdleCollector(20, async () => {
      collections++;
    });
    collector.onCall('RunPodSandbox');
    collector.close();
    collector.onCall('RunPodSandbox');
    await wait(60);
    expect(collections).to.equal(0);
  });

  it('combineObservers calls each present observer and collapses one or none', () => {
    const seen: string[] = [];
    const a = { onCall: (m: string) => void seen.push(`a:${m}`) };
    const b = { onCall: (m: string) => void seen.push(`b:${m}`) };
    expect(combineObservers(undefined, undefined)).to.equal(undefined);
    expect(combineObservers(a, undefined)).to.equal(a);
    combineObservers(a, undefined, b)?.onCall('Version', 0, 0);
    expect(seen).to.deep.equal(['a:Version', 'b:Version']);
  });
});
