import { expect } from 'chai';
import { LatencyRecorder, percentile, ratio, summarize } from '../../bench/stats.js';

describe('bench statistics', () => {
  describe('percentile (nearest rank)', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);

    it('returns the sample at rank ceil(p/100 * n)', () => {
      expect(percentile(hundred, 50)).to.equal(50);
      expect(percentile(hundred, 90)).to.equal(90);
      expect(percentile(hundred, 99)).to.equal(99);
      expect(percentile(hundred, 100)).to.equal(100);
    });

    it('never interpolates: with 10 samples p99 is the largest', () => {
      const ten = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1000];
      expect(percentile(ten, 99)).to.equal(1000);
      expect(percentile(ten, 90)).to.equal(9);
      expect(percentile(ten, 50)).to.equal(5);
    });

    it('of a single sample is that sample', () => {
      expect(percentile([7.5], 1)).to.equal(7.5);
      expect(percentile([7.5], 99)).to.equal(7.5);
    });

    it('refuses an empty set and out-of-range p', () => {
      expect(() => percentile([], 50)).to.throw(RangeError, /empty/);
      expect(() => percentile([1], 0)).to.throw(RangeError, /\(0, 100\]/);
      expect(() => percentile([1], 101)).to.throw(RangeError);
    });
  });

  describe('summarize', () => {
    it('sorts a copy and reports count, min, mean, percentiles and max', () => {
      const samples = [5, 1, 4, 2, 3];
      const s = summarize(samples);
      expect(s).to.deep.equal({ count: 5, min: 1, mean: 3, p50: 3, p90: 5, p99: 5, max: 5 });
      expect(samples).to.deep.equal([5, 1, 4, 2, 3]);
    });

    it('refuses an empty sample set', () => {
      expect(() => summarize([])).to.throw(RangeError, /empty/);
    });
  });

  describe('LatencyRecorder', () => {
    it('groups samples per operation in first-seen order', () => {
      const r = new LatencyRecorder();
      r.record('B', 2);
      r.record('A', 1);
      r.record('B', 4);
      expect(r.operations()).to.deep.equal(['B', 'A']);
      expect(r.summaries().B.count).to.equal(2);
      expect(r.summaries().B.max).to.equal(4);
    });

    it('times a call that throws and rethrows its error', async () => {
      const r = new LatencyRecorder();
      let caught: unknown;
      try {
        await r.time('Fails', async () => {
          await new Promise((resolve) => setTimeout(resolve, 20));
          throw new Error('boom');
        });
      } catch (err) {
        caught = err;
      }
      expect((caught as Error).message).to.equal('boom');
      expect(r.summaries().Fails.count).to.equal(1);
      expect(r.summaries().Fails.min).to.be.at.least(15);
    });
  });

  describe('ratio', () => {
    it('divides ours by the floor, rounded to two decimals', () => {
      expect(ratio(3, 2)).to.equal(1.5);
      expect(ratio(1, 3)).to.equal(0.33);
    });

    it('is null without a usable floor', () => {
      expect(ratio(1, 0)).to.equal(null);
      expect(ratio(1, undefined)).to.equal(null);
      expect(ratio(Number.NaN, 1)).to.equal(null);
    });
  });
});
