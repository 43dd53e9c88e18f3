import { expect } from 'chai';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GcSummary, TailAttribution } from '../../bench/tail-attribution.js';
import { LIFECYCLE_RPCS } from '../../bench/workload.js';
import { runProcess } from '../support/process.js';
import { repoRoot } from '../support/paths.js';

const script = join(repoRoot, 'dist', 'bench', 'handler-timing.js');

type GcSide = GcSummary & { scavenges: number; promotedBytesPerPod: number };

interface TimingReport {
  target: string;
  client: Record<string, { count: number; p50: number; max: number }>;
  handler: Record<string, { count: number; p50: number; max: number }>;
  tail: TailAttribution;
  gc: { server: GcSide; client: GcSide };
}

function expectEveryCallAttributed(report: TimingReport, pods: number): void {
  expect(report.tail.total).to.equal(LIFECYCLE_RPCS.length * pods);
  expect(Object.values(report.tail.byCause).reduce((a, b) => a + b, 0)).to.equal(report.tail.total);
  for (const rpc of LIFECYCLE_RPCS) {
    const op = report.tail.perOperation[rpc]!;
    expect(op.over, rpc).to.equal(pods);
    expect(op.serverGc + op.clientGc + op.handler + op.other, rpc).to.equal(pods);
  }
  for (const side of [report.gc.server, report.gc.client]) {
    expect(side.maxMs).to.be.at.most(side.totalMs);
    expect(Number.isInteger(side.promotedBytesPerPod) && side.promotedBytesPerPod >= 0, 'promoted bytes per pod').to.equal(true);
    expect(side.scavenges).to.be.at.least(0);
  }
}

describe('bench handler timing', function () {
  this.timeout(60_000);

  it('times every lifecycle RPC at the client and inside the server, the handler within the call', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-ht-test-'));
    try {
      const out = join(dir, 'timing.json');
      // --tail-ms 0: every call is in the tail, so each must be put down to exactly one cause.
      const result = await runProcess(process.execPath, [script, '--scenario', 'gmsa', '--pods', '4', '--warmup', '1', '--tail-ms', '0', '--out', out], {
        killAfterMs: 45_000,
      });
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout).to.contain('gmsa lifecycle against the runtime, 4 pods at concurrency 1 after 1 warm-up pods');
      expect(result.stdout).to.match(/^Promoted by scavenges, bytes per pod: server \d+, client \d+$/m);
      expect(result.stdout).to.match(/^Disk: creating a file in the pod log root, p50 [\d.]+ p99 [\d.]+ ms \(after the run\)$/m);
      const report = JSON.parse(await readFile(out, 'utf8')) as TimingReport;
      expect(report.target).to.equal('runtime');
      expectEveryCallAttributed(report, 4);
      for (const rpc of LIFECYCLE_RPCS) {
        expect(report.client[rpc]?.count, rpc).to.equal(4);
        // The warm-up's calls were reset: only the measured pods' handlers are counted.
        expect(report.handler[rpc]?.count, rpc).to.equal(4);
        // Each handler runs inside its call, so its percentiles cannot exceed the call's.
        expect(report.handler[rpc]!.p50, rpc).to.be.at.most(report.client[rpc]!.p50);
        expect(report.handler[rpc]!.max, rpc).to.be.at.most(report.client[rpc]!.max);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('drives the no-op floor with the same client, which reports no handler spans', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-ht-test-'));
    try {
      const out = join(dir, 'timing.json');
      const result = await runProcess(process.execPath, [script, '--target', 'floor', '--scenario', 'plain', '--pods', '3', '--warmup', '0', '--tail-ms', '0', '--out', out], {
        killAfterMs: 45_000,
      });
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout).to.contain('plain lifecycle against the floor, 3 pods');
      const report = JSON.parse(await readFile(out, 'utf8')) as TimingReport;
      expect(report.target).to.equal('floor');
      expect(report.handler).to.deep.equal({});
      expectEveryCallAttributed(report, 3);
      expect(report.tail.byCause.handler).to.equal(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('runs to its end and removes its temporary directory when the reader of its output has gone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-ht-test-'));
    try {
      const runTmp = join(dir, 'tmp');
      await mkdir(runTmp);
      const out = join(dir, 'timing.json');
      // The reader closes its end before the first line (as `| head -0` would): every write fails
      // with EPIPE. Before, the first one ended the run before its clean-up.
      const result = await runProcess(process.execPath, [script, '--scenario', 'plain', '--pods', '2', '--warmup', '0', '--out', out], {
        env: { ...process.env, TMPDIR: runTmp },
        killAfterMs: 45_000,
        stdoutClosed: true,
      });
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stderr).to.equal('');
      expect((JSON.parse(await readFile(out, 'utf8')) as TimingReport).client.StartContainer?.count).to.equal(2);
      expect(await readdir(runTmp)).to.deep.equal([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a bad option value, naming it', async () => {
    const result = await runProcess(process.execPath, [script, '--pods', 'many'], { killAfterMs: 20_000 });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.contain('--pods must be an integer from 1 to 100000, not "many"');
    const target = await runProcess(process.execPath, [script, '--target', 'containerd'], { killAfterMs: 20_000 });
    expect(target.code).to.equal(1);
    expect(target.stderr).to.contain('--target must be runtime or floor, not "containerd"');
  });
});
