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

describe('bench scrape of the runtime process figures', () => {
  it('keeps CPU, GC by kind, event-loop lag and memory, without the prefix', async () => {
    const { processFigures } = await import('../../bench/scrape.js');
    const text = [
      '# HELP cri_winsim_process_cpu_seconds_total x',
      'cri_winsim_process_cpu_seconds_total 12.5',
      'cri_winsim_nodejs_gc_duration_seconds_sum{kind="major"} 0.75',
      'cri_winsim_nodejs_gc_duration_seconds_count{kind="major"} 3',
      'cri_winsim_nodejs_eventloop_lag_p99_seconds 0.012',
      'cri_winsim_runtime_operations_total{operation_type="version"} 1',
    ].join('\n');
    expect(processFigures(text)).to.deep.equal({
      process_cpu_seconds_total: 12.5,
      'nodejs_gc_duration_seconds_sum{kind="major"}': 0.75,
      nodejs_eventloop_lag_p99_seconds: 0.012,
    });
  });
});
