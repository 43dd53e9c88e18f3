// critest, the CRI validation suite (cri-tools v1.34.0), run against `cri-winsim runtime` with
// the selection of specs in critest-specs.ts. ginkgo's JSON report says which spec did what;
// every selected spec must pass (a skip counts as a failure: it would hide a missing feature).
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { requireCriTool } from '../support/paths.js';
import { testPodCidr16 } from '../support/pod-cidr.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { CRITEST_SPECS, focusRegex, specText } from './critest-specs.js';
import { CRITEST_TEST_IMAGES } from '../compose/critest-service.js';

/** The whole critest run may take this long (each spec takes a few seconds at most here). */
const CRITEST_BUDGET_MS = 6 * 60_000;

interface GinkgoSpecReport {
  ContainerHierarchyTexts: string[] | null;
  LeafNodeText: string;
  LeafNodeType: string;
  State: string;
  RunTime: number;
  Failure?: { Message?: string; Location?: { FileName?: string; LineNumber?: number }; ForwardedPanic?: string };
}

interface CritestRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  output: string;
  specs: GinkgoSpecReport[];
}

/** Runs critest with the focus and returns ginkgo's per-spec report (It nodes only). */
function runCritest(bin: string, workDir: string, args: string[], budgetMs: number): Promise<CritestRun> {
  const report = join(workDir, `report-${Date.now()}.json`);
  const tmp = join(workDir, 'tmp');
  mkdirSync(tmp, { recursive: true });
  const fullArgs = [
    `-ginkgo.focus=${focusRegex()}`,
    `-ginkgo.json-report=${report}`,
    '-ginkgo.no-color',
    `-ginkgo.timeout=${Math.floor(budgetMs / 1000)}s`,
    ...args,
  ];
  return new Promise((resolve, reject) => {
    // critest makes its pod log directories with os.MkdirTemp: keep them in the runtime's dir.
    const child = spawn(bin, fullArgs, { cwd: workDir, env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.length > 200_000) output = output.slice(-200_000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    let timedOut = false;
    // ginkgo enforces its own timeout; this is the backstop if critest hangs anyway.
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, budgetMs + 30_000);
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      let specs: GinkgoSpecReport[] = [];
      try {
        const suites = JSON.parse(readFileSync(report, 'utf8')) as Array<{ SpecReports: GinkgoSpecReport[] | null }>;
        specs = suites.flatMap((s) => s.SpecReports ?? []).filter((s) => s.LeafNodeType === 'It');
      } catch (err) {
        output += `\n(no readable ginkgo report: ${String(err)})`;
      }
      resolve({ code, signal, timedOut, output, specs });
    });
  });
}

const fullName = (s: GinkgoSpecReport) => [...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText].join(' ');

describe('critest spec selection', function () {
  it(`names exactly ${CRITEST_SPECS.length} existing critest specs (dry run)`, async function () {
    this.timeout(60_000);
    const bin = requireCriTool(this, 'critest');
    const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-critest-'));
    try {
      const dry = await runCritest(bin, dir, ['-ginkgo.dry-run'], 30_000);
      const selected = dry.specs.filter((s) => s.State !== 'skipped').map(fullName).sort();
      const wanted = CRITEST_SPECS.map(specText).sort();
      expect(selected, `critest dry run output:\n${dry.output}`).to.deep.equal(wanted);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('critest (CRI validation) against cri-winsim runtime', function () {
  this.timeout(CRITEST_BUDGET_MS + 60_000);
  let bin = '';
  let rt: RuntimeHandle | undefined;

  before(async function () {
    bin = requireCriTool(this, 'critest');
    // The networking specs bind port 80 on pod IPs: a range no other runtime on this machine uses.
    rt = await startRuntime({ name: 'critest-e2e', args: ['--pod-cidr', testPodCidr16()] });
  });

  after(async () => {
    await rt?.stop();
  });

  it('passes every selected spec', async function () {
    const runtime = rt!;
    const imagesFile = join(runtime.dir, 'critest-images.yaml');
    writeFileSync(imagesFile, toYaml(CRITEST_TEST_IMAGES));
    const started = Date.now();
    const run = await runCritest(bin, runtime.dir, [
      `-runtime-endpoint=${runtime.endpoint}`,
      `-image-endpoint=${runtime.endpoint}`,
      // Fail fast when the socket is not there instead of critest's 5-minute default.
      '-runtime-service-timeout=20s',
      '-image-service-timeout=20s',
      `-test-images-file=${imagesFile}`,
    ], CRITEST_BUDGET_MS);

    const byState = new Map<string, string[]>();
    for (const s of run.specs) {
      if (!CRITEST_SPECS.some((w) => specText(w) === fullName(s))) continue;
      byState.set(s.State, [...(byState.get(s.State) ?? []), fullName(s)]);
    }
    const passed = byState.get('passed') ?? [];
    const problems = run.specs
      .filter((s) => s.State !== 'passed' && CRITEST_SPECS.some((w) => specText(w) === fullName(s)))
      .map((s) => {
        const where = s.Failure?.Location?.FileName ? ` (${s.Failure.Location.FileName.split('/').slice(-2).join('/')}:${s.Failure.Location.LineNumber})` : '';
        const msg = (s.Failure?.ForwardedPanic || s.Failure?.Message || '').trim().split('\n').slice(0, 6).join('\n      ');
        return `  ${s.State.toUpperCase()}: ${fullName(s)}${where}\n      ${msg}`;
      });
    const summary = `critest: ${passed.length}/${CRITEST_SPECS.length} selected specs passed in ${Math.round((Date.now() - started) / 1000)} s` +
      `${run.timedOut ? ' (killed: over budget)' : ''}, exit ${run.code ?? run.signal}`;
    const details = problems.length > 0 ? `\n${problems.join('\n')}` : '';
    const tail = run.output.split('\n').slice(-40).join('\n');
    expect(problems, `${summary}${details}\n--- critest output (last lines) ---\n${tail}\n--- runtime output (last lines) ---\n${runtime.output().split('\n').slice(-20).join('\n')}`)
      .to.deep.equal([]);
    expect(passed.length, `${summary}\n${tail}`).to.equal(CRITEST_SPECS.length);
    expect(run.code, `${summary}\n${tail}`).to.equal(0);
  });
});
