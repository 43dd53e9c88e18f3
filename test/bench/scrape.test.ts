import { expect } from 'chai';
import { RuntimeMetrics } from '../../src/cri/metrics.js';
import { handlerTotals, meanHandlerMs, scrapeHandlerTotals } from '../../bench/scrape.js';

describe('bench scrape of the runtime handler timing', () => {
  it('reads sum and count of one operation from the exposition text', () => {
    const text = [
      'cri_winsim_runtime_operations_duration_seconds_sum{operation_type="list_containers"} 0.25',
      'cri_winsim_runtime_operations_duration_seconds_count{operation_type="list_containers"} 5',
      'cri_winsim_runtime_operations_duration_seconds_sum{operation_type="list_podsandbox"} 9',
    ].join('\n');
    expect(handlerTotals(text, 'list_containers')).to.deep.equal({ sum: 0.25, count: 5 });
    expect(handlerTotals(text, 'version')).to.deep.equal({ sum: 0, count: 0 });
  });

  it('turns two scrapes into a mean in milliseconds', () => {
    expect(meanHandlerMs({ sum: 1, count: 10 }, { sum: 1.5, count: 20 })).to.equal(50);
    expect(meanHandlerMs({ sum: 1, count: 10 }, { sum: 1, count: 10 })).to.equal(null);
  });

  it('scrapes a live RuntimeMetrics endpoint', async () => {
    const m = new RuntimeMetrics({ processMetrics: false });
    m.onCall('ListContainers', 0.02, 0);
    m.onCall('ListContainers', 0.04, 0);
    const endpoint = await m.serve('127.0.0.1:0');
    try {
      const t = await scrapeHandlerTotals(endpoint.url, 'list_containers');
      expect(t.count).to.equal(2);
      expect(t.sum).to.be.closeTo(0.06, 1e-9);
    } finally {
      await endpoint.close();
    }
  });
});
