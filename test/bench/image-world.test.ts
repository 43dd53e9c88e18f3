import { expect } from 'chai';
import {
  CATALOGUE_IMAGE,
  emptySamples,
  formatImageWorld,
  imageWorldTarget,
  OPEN_WORLD_LIMIT,
  PULL_AND_START_RPCS,
  summarizeImageWorld,
  type KindSamples,
} from '../../bench/image-world.js';

/** Samples of `count` iterations whose RPCs take `perRpc` ms each, the i-th iteration i ms longer in StartContainer. */
function samples(count: number, perRpc: number): KindSamples {
  const s = emptySamples();
  for (let i = 0; i < count; i++) {
    for (const rpc of PULL_AND_START_RPCS) s.operations[rpc].push(rpc === 'StartContainer' ? perRpc + i : perRpc);
    s.pullAndStart.push(4 * perRpc + i);
  }
  return s;
}

const run = { warmupIterationsPerKind: 3, elapsedMs: 1234.5, stoppedBy: 'iterations' as const, openWorldExample: 'contoso.azurecr.io/webapp:<n>' };

describe('bench open-world images section', () => {
  it('summarises both kinds per RPC and as a whole, and divides open-world by catalogue', () => {
    const r = summarizeImageWorld({ catalogue: samples(10, 2), openWorld: samples(10, 2.5) }, run);
    expect(r.iterationsPerKind).to.equal(10);
    expect(r.warmupIterationsPerKind).to.equal(3);
    expect(r.elapsedMs).to.equal(1235);
    expect(r.catalogue.image).to.equal(CATALOGUE_IMAGE);
    expect(r.openWorld.image).to.equal('contoso.azurecr.io/webapp:<n>');
    expect(Object.keys(r.catalogue.operations)).to.deep.equal([...PULL_AND_START_RPCS]);
    // Nearest rank over 8..17 and 10..19: p50 the 5th, p90 the 9th, p99 the 10th.
    expect(r.catalogue.pullAndStart).to.include({ count: 10, p50: 12, p90: 16, p99: 17 });
    expect(r.openWorld.pullAndStart).to.include({ p50: 14, p90: 18, p99: 19 });
    expect(r.ratio).to.deep.equal({ p50: 1.167, p90: 1.125, p99: 1.118 });
    expect(r.limit).to.equal(OPEN_WORLD_LIMIT);
  });

  it('checks the median ratio against 1.1, and says when it was not measured', () => {
    const slow = imageWorldTarget(summarizeImageWorld({ catalogue: samples(10, 2), openWorld: samples(10, 2.5) }, run));
    expect(slow).to.include({ measured: 1.167, limit: '<= 1.1', pass: false });
    const even = imageWorldTarget(summarizeImageWorld({ catalogue: samples(10, 2), openWorld: samples(10, 2) }, run));
    expect(even).to.include({ measured: 1, pass: true });
    expect(imageWorldTarget(undefined)).to.include({ measured: null, pass: null });
    expect(slow.name).to.match(/^open-world pull\+start within 10 % of a catalogue one/);
  });

  it('prints a head line with the ratios and one line per kind and RPC', () => {
    const lines = formatImageWorld(summarizeImageWorld({ catalogue: samples(10, 2), openWorld: samples(10, 2.5) }, run));
    expect(lines).to.have.length(1 + 2 * (1 + PULL_AND_START_RPCS.length));
    expect(lines[0]).to.equal('images: 10 iterations each in 1.2 s (stopped by iterations), open-world / catalogue p50 1.167 p90 1.125 p99 1.118');
    expect(lines[1]).to.match(/^ {2}catalogue pull\+start p50 12\.00 p90 16\.00 p99 17\.00 ms$/);
  });

  it('refuses kinds without samples', () => {
    expect(() => summarizeImageWorld({ catalogue: emptySamples(), openWorld: emptySamples() }, run)).to.throw(RangeError, /empty/);
  });
});
