import { expect } from 'chai';
import { copied, merged } from '../../src/tuning/merged.js';

describe('merged and copied', () => {
  it('merges as a spread does: base first, extra wins, key order kept, inputs untouched', () => {
    const base = { a: 1, b: 2 };
    const extra = { b: 3, c: 4 };
    const out = merged(base, extra);
    expect(out).to.deep.equal({ a: 1, b: 3, c: 4 });
    expect(Object.keys(out)).to.deep.equal(['a', 'b', 'c']);
    expect(base).to.deep.equal({ a: 1, b: 2 });
    expect(extra).to.deep.equal({ b: 3, c: 4 });
  });

  it('keeps a __proto__ key as a plain key, as a spread defines it (annotations may carry any key)', () => {
    const annotations = JSON.parse('{"__proto__": "x", "io.kubernetes.pod.name": "p"}') as Record<string, string>;
    const out = merged(annotations, { 'io.kubernetes.cri.sandbox-id': 'id' }) as Record<string, string>;
    expect(Object.keys(out)).to.deep.equal(['__proto__', 'io.kubernetes.pod.name', 'io.kubernetes.cri.sandbox-id']);
    expect(Object.getPrototypeOf(out)).to.equal(Object.prototype);
  });

  it('copies only own enumerable properties, into a new object', () => {
    const base = Object.create({ inherited: 1 }) as Record<string, number>;
    base['own'] = 2;
    Object.defineProperty(base, 'hidden', { value: 3, enumerable: false });
    const out = copied(base);
    expect(out).to.not.equal(base);
    expect(Object.keys(out)).to.deep.equal(['own']);
    expect(out['inherited']).to.equal(undefined);
  });
});
