import { expect } from 'chai';
import { request } from 'node:http';
import { status } from '@grpc/grpc-js';
import { RuntimeMetrics, grpcCodeName, operationType, parseMetricsAddress } from '../../src/cri/metrics.js';

function get(url: string, method = 'GET'): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('runtime metrics', () => {
  describe('operation names', () => {
    it('uses the kubelet operation_type names', () => {
      expect(operationType('RunPodSandbox')).to.equal('run_podsandbox');
      expect(operationType('PodSandboxStatus')).to.equal('podsandbox_status');
      expect(operationType('ListPodSandboxStats')).to.equal('list_podsandbox_stats');
      expect(operationType('ListContainers')).to.equal('list_containers');
      expect(operationType('ExecSync')).to.equal('exec_sync');
      expect(operationType('ImageFsInfo')).to.equal('image_fs_info');
      expect(operationType('UpdateContainerResources')).to.equal('update_container');
      expect(operationType('Version')).to.equal('version');
    });

    it('names gRPC codes canonically', () => {
      expect(grpcCodeName(status.NOT_FOUND)).to.equal('NOT_FOUND');
      expect(grpcCodeName(0)).to.equal('OK');
      expect(grpcCodeName('invalid_argument')).to.equal('INVALID_ARGUMENT');
    });
  });

  describe('onCall', () => {
    it('observes the duration histogram per operation with the kubelet buckets', async () => {
      const m = new RuntimeMetrics({ processMetrics: false });
      m.onCall('RunPodSandbox', 0.003, 0);
      m.onCall('RunPodSandbox', 0.02, status.OK);
      const text = await m.text();
      expect(text).to.contain('cri_winsim_runtime_operations_duration_seconds_bucket{le="0.005",operation_type="run_podsandbox"} 1');
      expect(text).to.contain('cri_winsim_runtime_operations_duration_seconds_bucket{le="0.03125",operation_type="run_podsandbox"} 2');
      expect(text).to.contain('cri_winsim_runtime_operations_duration_seconds_count{operation_type="run_podsandbox"} 2');
      expect(text).to.contain('cri_winsim_runtime_operations_total{operation_type="run_podsandbox"} 2');
      expect(text).to.not.contain('cri_winsim_runtime_operations_errors_total{');
    });

    it('counts errors by operation and gRPC code, and not successes', async () => {
      const m = new RuntimeMetrics({ processMetrics: false });
      m.onCall('StartContainer', 0.001, status.NOT_FOUND);
      m.onCall('StartContainer', 0.001, status.NOT_FOUND);
      m.onCall('StartContainer', 0.001, 'FAILED_PRECONDITION');
      m.onCall('StartContainer', 0.001, 'OK');
      const text = await m.text();
      expect(text).to.contain('cri_winsim_runtime_operations_errors_total{operation_type="start_container",code="NOT_FOUND"} 2');
      expect(text).to.contain('cri_winsim_runtime_operations_errors_total{operation_type="start_container",code="FAILED_PRECONDITION"} 1');
      expect(text).to.contain('cri_winsim_runtime_operations_total{operation_type="start_container"} 4');
    });
  });

  it('reads the live gauges from their callbacks at scrape time', async () => {
    let containers = 3;
    const m = new RuntimeMetrics({ processMetrics: false, liveSandboxes: () => 2, liveContainers: () => containers });
    expect(await m.text()).to.match(/^cri_winsim_runtime_live_containers 3$/m);
    containers = 7;
    const text = await m.text();
    expect(text).to.match(/^cri_winsim_runtime_live_containers 7$/m);
    expect(text).to.match(/^cri_winsim_runtime_live_pod_sandboxes 2$/m);
  });

  it('takes the live gauge sources after construction', async () => {
    const m = new RuntimeMetrics({ processMetrics: false });
    expect(await m.text()).to.match(/^cri_winsim_runtime_live_pod_sandboxes 0$/m);
    m.setLiveObjectSources({ sandboxes: () => 11, containers: () => 12 });
    const text = await m.text();
    expect(text).to.match(/^cri_winsim_runtime_live_pod_sandboxes 11$/m);
    expect(text).to.match(/^cri_winsim_runtime_live_containers 12$/m);
  });

  it('counts credential spec files written and removed, and counts the leaked ones when scraped', async () => {
    let scrapes = 0;
    const m = new RuntimeMetrics({ processMetrics: false, leakedCredentialSpecs: async () => ++scrapes });
    m.credentialSpecs.onWritten();
    m.credentialSpecs.onWritten();
    m.credentialSpecs.onRemoved();
    expect(scrapes).to.equal(0);
    const text = await m.text();
    expect(scrapes).to.equal(1);
    expect(text).to.match(/^cri_winsim_credential_spec_files_written_total 2$/m);
    expect(text).to.match(/^cri_winsim_credential_spec_files_removed_total 1$/m);
    expect(text).to.match(/^cri_winsim_credential_spec_files_leaked 1$/m);
  });

  it('keeps instances apart: two runtimes in one process do not share counts', async () => {
    const a = new RuntimeMetrics({ processMetrics: false });
    const b = new RuntimeMetrics({ processMetrics: false });
    a.onCall('Version', 0.001, 0);
    expect(await b.text()).to.not.contain('operation_type="version"');
  });

  describe('serve', () => {
    it('serves the text format at /metrics on 127.0.0.1 and stops on close', async () => {
      const m = new RuntimeMetrics({ liveContainers: () => 5 });
      m.onCall('ListContainers', 0.002, 0);
      const endpoint = await m.serve('127.0.0.1:0');
      try {
        expect(endpoint.url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
        const res = await get(endpoint.url);
        expect(res.status).to.equal(200);
        expect(res.type).to.contain('text/plain');
        expect(res.body).to.contain('cri_winsim_runtime_operations_duration_seconds_count{operation_type="list_containers"} 1');
        expect(res.body).to.match(/^cri_winsim_runtime_live_containers 5$/m);
        expect(res.body).to.contain('cri_winsim_process_resident_memory_bytes');
        expect((await get(endpoint.url.replace('/metrics', '/other'))).status).to.equal(404);
        expect((await get(endpoint.url, 'POST')).status).to.equal(405);
      } finally {
        await endpoint.close();
      }
      let refused: unknown;
      try {
        await get(endpoint.url);
      } catch (err) {
        refused = err;
      }
      expect((refused as NodeJS.ErrnoException)?.code).to.equal('ECONNREFUSED');
    });

    it('refuses non-loopback addresses and bad ports with a message naming the flag', async () => {
      const m = new RuntimeMetrics({ processMetrics: false });
      let caught: unknown;
      try {
        await m.serve('0.0.0.0:9090');
      } catch (err) {
        caught = err;
      }
      expect((caught as Error).message).to.equal('--metrics-addr "0.0.0.0:9090": host must be a loopback address (127.0.0.1, ::1 or localhost)');
      expect(() => parseMetricsAddress('127.0.0.1:http')).to.throw('--metrics-addr "127.0.0.1:http": port must be a number from 0 to 65535');
      expect(() => parseMetricsAddress('127.0.0.1:70000')).to.throw(/port must be a number/);
    });

    it('accepts the loopback forms', () => {
      expect(parseMetricsAddress('9090')).to.deep.equal({ host: '127.0.0.1', port: 9090 });
      expect(parseMetricsAddress(':9090')).to.deep.equal({ host: '127.0.0.1', port: 9090 });
      expect(parseMetricsAddress('localhost:0')).to.deep.equal({ host: '127.0.0.1', port: 0 });
      expect(parseMetricsAddress('[::1]:9090')).to.deep.equal({ host: '::1', port: 9090 });
    });
  });
});
