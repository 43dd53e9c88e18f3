import { expect } from 'chai';
import { BoundedCache } from '../src/bounded-cache.js';

describe('BoundedCache', () => {
  it('computes a value once and returns the kept one afterwards', () => {
    const cache = new BoundedCache<string, { n: number }>(2);
    let computed = 0;
    const compute = (k: string) => ({ n: ++computed, k });
    const first = cache.get('a', compute);
    expect(cache.get('a', compute)).to.equal(first);
    expect(computed).to.equal(1);
  });

  it('forgets the oldest entry first when full, whatever was read since', () => {
    const cache = new BoundedCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    // A hit does not make 'a' newer.
    expect(cache.get('a', () => -1)).to.equal(1);
    cache.set('c', 3);
    expect(cache.peek('a')).to.equal(undefined);
    expect(cache.peek('b')).to.equal(2);
    expect(cache.peek('c')).to.equal(3);
    expect(cache.size).to.equal(2);
  });

  it('replaces the value of a kept key in place, without forgetting another', () => {
    const cache = new BoundedCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('a', 10);
    expect(cache.size).to.equal(2);
    expect(cache.peek('a')).to.equal(10);
    expect(cache.peek('b')).to.equal(2);
    // 'a' kept its place as the oldest.
    cache.set('c', 3);
    expect(cache.peek('a')).to.equal(undefined);
  });

  it('forgets a deleted key at once', () => {
    const cache = new BoundedCache<object, string>(4);
    const key = {};
    cache.set(key, 'x');
    cache.delete(key);
    expect(cache.peek(key)).to.equal(undefined);
    expect(cache.size).to.equal(0);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new BoundedCache(0)).to.throw('cache capacity must be a positive integer, not 0');
    expect(() => new BoundedCache(1.5)).to.throw('cache capacity must be a positive integer, not 1.5');
  });
});
