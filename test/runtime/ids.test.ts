import { expect } from 'chai';
import { RandomSource } from '../../src/runtime/ids.js';
import { newCredentialSpecName, CREDENTIAL_SPEC_NAME_PREFIX } from '../../src/runtime/windows/credential-spec-handoff.js';

describe('runtime ids', () => {
  const random = new RandomSource();
  const newId = (): string => random.newId();
  const randomHex = (bytes: number): string => random.hex(bytes);

  it('are 64 lowercase hex characters', () => {
    for (let i = 0; i < 200; i++) expect(newId()).to.match(/^[0-9a-f]{64}$/);
  });

  it('never repeat, across many refills of the random pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(newId()); // 640,000 bytes: ~156 pool refills
    expect(seen.size).to.equal(20_000);
  });

  it('hand out each random byte once: no two consecutive draws overlap, even across a refill', () => {
    // Odd sizes so draws straddle the pool's end; a repeated slice would show as equal halves.
    const draws = Array.from({ length: 3000 }, (_, i) => randomHex(1 + (i % 97)));
    for (let i = 0; i < draws.length; i++) expect(draws[i]).to.have.length(2 * (1 + (i % 97)));
    const long = draws.filter((d) => d.length >= 64);
    expect(new Set(long).size).to.equal(long.length);
  });

  it('refuse a byte count outside 1..4096', () => {
    for (const bad of [0, -1, 4097, 1.5, Number.NaN]) expect(() => randomHex(bad)).to.throw(RangeError, /random byte count/);
    expect(randomHex(4096)).to.have.length(8192);
  });

  it('name credential spec files with the prefix and 40 random bytes', () => {
    const name = newCredentialSpecName();
    expect(name.startsWith(CREDENTIAL_SPEC_NAME_PREFIX)).to.equal(true);
    expect(name.slice(CREDENTIAL_SPEC_NAME_PREFIX.length)).to.match(/^[0-9a-f]{80}$/);
  });
});
