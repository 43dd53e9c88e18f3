import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { status } from '@grpc/grpc-js';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { startRuntime, type RuntimeProcess } from '../../bench/runtime-process.js';
import { LatencyRecorder } from '../../bench/stats.js';
import { containerConfig, podLifecycle, pullBenchImage, sandboxConfig } from '../../bench/workload.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const cli = join(root, 'dist', 'src', 'cli.js');

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('runtime metrics served by `cri-winsim runtime --metrics-addr`', function () {
  this.timeout(30000);
  let dir: string;
  let runtime: RuntimeProcess;
  let cri: CriClient;
  let url: string;

  before(async function () {
    if (!existsSync(cli)) this.skip();
    dir = mkdtempSync(join(tmpdir(), 'metrics-runtime-test-'));
    runtime = await startRuntime({
      cliPath: cli,
      socketPath: join(dir, 'cri.sock'),
      stateDir: join(dir, 'state'),
      runtimeArgs: ['--metrics-addr', '127.0.0.1:0'],
    });
    url = runtime.metricsUrl() ?? '';
    cri = createCriClient(runtime.endpoint);
  });

  after(async () => {
    cri?.close();
    await runtime?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const scrape = async (): Promise<string> => {
    const res = await fetch(url);
    expect(res.status).to.equal(200);
    return res.text();
  };

  it('logs the metrics URL on a loopback port', () => {
    expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  });

  it('counts a gMSA pod lifecycle: operations, one credential spec written and removed, none leaked', async () => {
    const image = await pullBenchImage(cri, { timeoutMs: 5000 });
    await podLifecycle(cri, new LatencyRecorder(), { name: 'metrics-gmsa', gmsa: true, logRoot: join(dir, 'logs') }, image, { timeoutMs: 5000 });
    const text = await scrape();
    for (const op of ['run_podsandbox', 'create_container', 'start_container', 'exec_sync', 'stop_container', 'remove_container', 'stop_podsandbox', 'remove_podsandbox']) {
      expect(sample(text, `cri_winsim_runtime_operations_duration_seconds_count{operation_type="${op}"}`), op).to.equal(1);
    }
    expect(sample(text, 'cri_winsim_credential_spec_files_written_total')).to.equal(1);
    expect(sample(text, 'cri_winsim_credential_spec_files_removed_total')).to.equal(1);
    expect(sample(text, 'cri_winsim_credential_spec_files_leaked')).to.equal(0);
  });

  it('shows live sandboxes and containers, and counts errors by code', async () => {
    const image = await pullBenchImage(cri, { timeoutMs: 5000 });
    const pod = { name: 'metrics-live', gmsa: false };
    const { pod_sandbox_id } = await unaryCall(cri.runtime, 'RunPodSandbox', { config: sandboxConfig(pod) });
    await unaryCall(cri.runtime, 'CreateContainer', { pod_sandbox_id, config: containerConfig(pod, image), sandbox_config: sandboxConfig(pod) });
    let code: number | undefined;
    try {
      await unaryCall(cri.runtime, 'StartContainer', { container_id: 'f'.repeat(64) });
    } catch (err) {
      code = (err as { code?: number }).code;
    }
    expect(code).to.equal(status.NOT_FOUND);
    const text = await scrape();
    expect(sample(text, 'cri_winsim_runtime_live_pod_sandboxes')).to.equal(1);
    expect(sample(text, 'cri_winsim_runtime_live_containers')).to.equal(1);
    expect(sample(text, 'cri_winsim_runtime_operations_errors_total{operation_type="start_container",code="NOT_FOUND"}')).to.equal(1);
  });
});

describe('the in-flight gauge of `cri-winsim runtime --metrics-addr`', function () {
  // RunPodSandbox waits 3–8 s under the windows-server-2019 latency profile.
  this.timeout(60_000);
  let dir: string;
  let runtime: RuntimeProcess | undefined;
  let cri: CriClient | undefined;

  before(function () {
    if (!existsSync(cli)) this.skip();
  });

  afterEach(async () => {
    cri?.close();
    await runtime?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('counts a call from its arrival to its answer: 1 during a slow RunPodSandbox, 0 before and after', async () => {
    dir = mkdtempSync(join(tmpdir(), 'metrics-inflight-'));
    runtime = await startRuntime({
      cliPath: cli,
      socketPath: join(dir, 'cri.sock'),
      stateDir: join(dir, 'state'),
      runtimeArgs: ['--metrics-addr', '127.0.0.1:0', '--latency-profile', 'windows-server-2019', '--seed', '7'],
    });
    const url = runtime.metricsUrl() ?? '';
    cri = createCriClient(runtime.endpoint);
    const inFlight = async (): Promise<number | undefined> => sample(await (await fetch(url)).text(), 'cri_winsim_runtime_operations_in_flight');
    expect(await inFlight()).to.equal(0);
    const pod = { name: 'metrics-inflight', gmsa: false };
    let answered = false;
    const run = unaryCall(cri.runtime, 'RunPodSandbox', { config: sandboxConfig(pod) }, { timeoutMs: 30_000 }).finally(() => {
      answered = true;
    });
    let seen: number | undefined;
    while (!answered) {
      seen = await inFlight();
      if (seen === 1 && !answered) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(seen, 'the gauge while RunPodSandbox waited its simulated latency').to.equal(1);
    await run;
    expect(await inFlight()).to.equal(0);
  });
});
