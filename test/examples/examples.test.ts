// Every runnable example (examples/demo and examples/stories/*) against a real runtime process:
// `cri-winsim runtime --node <the example's node file> --ad-mode <its mode>` on a temporary
// socket, the fake kubelet over CRI, and each row of the example's expect.yaml asserted
// (outcome, message fragment, effective user and gMSA from ContainerStatus verbose, the
// container's log). Identity commands run through the real crictl (`crictl exec -s`) and logs
// are read with `crictl logs` when crictl is installed; otherwise through the same CRI calls.
import { runProcess } from '../support/process.js';
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parse as parseYamlSync } from 'yaml';
import { createCriClient, type CriClient } from '../../src/cri/proto.js';
import { loadExampleManifest, type ExampleManifest, type ExampleRun, type OutcomeExpectation } from '../../src/demo/example-manifest.js';
import { runExample, type ExampleReport, type ExecFunction, type LogReader, type RowVerdict } from '../../src/demo/run-example.js';
import { runCrictl } from '../support/crictl.js';
import { cliPath, criToolPath, repoRoot } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';

const examplesDir = join(repoRoot, 'examples');
const storiesDir = join(examplesDir, 'stories');

/** examples/demo and every story, as paths of their expect.yaml. */
function exampleFiles(): string[] {
  const stories = readdirSync(storiesDir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => join(storiesDir, e.name, 'expect.yaml'))
    .sort();
  return [join(examplesDir, 'demo', 'expect.yaml'), ...stories];
}

const YAML_FILE = /\.ya?ml$/;

function yamlFilesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return yamlFilesUnder(p);
    return YAML_FILE.test(e.name) ? [p] : [];
  });
}

/** `crictl exec -s`: crictl exits 1 for any non-zero exit code of the command (REFERENCE §2). */
function crictlExec(rt: RuntimeHandle): ExecFunction {
  return async (containerId, command) => {
    const res = await runCrictl(rt, ['exec', '-s', containerId, ...command], { check: false });
    if (res.timedOut) throw new Error(`${res.command} was killed after its time limit`);
    return { exitCode: res.code ?? -1, stdout: res.stdout, stderr: res.stderr };
  };
}

function crictlLogs(rt: RuntimeHandle): LogReader {
  return async (containerId) => {
    const res = await runCrictl(rt, ['logs', containerId]);
    return `${res.stdout}${res.stderr}`;
  };
}

interface KubeletCliRun {
  code: number | null;
  pods: PodJson[];
  stderr: string;
}

interface PodJson {
  metadata?: { name?: string };
  status?: { containerStatuses?: Array<{ name: string; state: { running?: object; terminated?: { exitCode: number; reason?: string; message?: string }; waiting?: { reason: string; message?: string } } }> };
}

/** `cri-winsim kubelet run FILES --cluster DIR --container-runtime-endpoint EP [--as U --as-group G] --gmsa-design D -o json`. */
async function kubeletRun(rt: RuntimeHandle, manifest: ExampleManifest, run: ExampleRun): Promise<KubeletCliRun> {
  const args = [
    cliPath, 'kubelet', 'run', ...run.pods,
    '--cluster', manifest.cluster,
    '--container-runtime-endpoint', rt.endpoint,
    '--root-dir', join(rt.dir, 'kubelet'),
    '-o', 'json',
    ...(run.as === undefined ? [] : ['--as', run.as]),
    ...run.groups.flatMap((g) => ['--as-group', g]),
    '--gmsa-design', run.gmsaDesign,
  ];
  const { code, stdout, stderr } = await runProcess(process.execPath, args, { cwd: rt.dir, killAfterMs: 60_000 });
  let pods: PodJson[] = [];
  if (stdout.trim() !== '') {
    try {
      const value = JSON.parse(stdout) as PodJson & { kind?: string; items?: PodJson[] };
      pods = value.kind === 'List' ? (value.items ?? []) : [value];
    } catch {
      throw new Error(`kubelet run -o json printed no JSON:\n${stdout}\nstderr: ${stderr}`);
    }
  }
  return { code, pods, stderr };
}

/** What the kubelet CLI says about one expected row, in the words of compareRow. */
function cliProblems(cli: KubeletCliRun, e: OutcomeExpectation): string[] {
  const pod = cli.pods.find((p) => p.metadata?.name === e.pod);
  if (e.container === undefined) {
    const problems: string[] = [];
    if (pod !== undefined) problems.push(`pod ${e.pod} was created, expected ${e.outcome}`);
    if (e.message !== undefined && !cli.stderr.includes(e.message)) problems.push(`stderr ${JSON.stringify(cli.stderr.trim())} does not contain ${JSON.stringify(e.message)}`);
    return problems;
  }
  const status = pod?.status?.containerStatuses?.find((c) => c.name === e.container);
  if (status === undefined) return [`no status for ${e.pod}/${e.container}; stderr: ${cli.stderr.trim()}`];
  const { running, terminated, waiting } = status.state;
  // "Running" in an expect.yaml means the kubelet started it; a one-shot command may have ended since.
  const outcome = running !== undefined || (terminated !== undefined && terminated.exitCode === 0) ? 'Running' : (waiting?.reason ?? terminated?.reason ?? 'Unknown');
  const message = waiting?.message ?? terminated?.message ?? '';
  const problems: string[] = [];
  if (outcome !== e.outcome) problems.push(`state ${JSON.stringify(status.state)}, expected ${e.outcome}`);
  if (e.message !== undefined && !message.includes(e.message)) problems.push(`message ${JSON.stringify(message)} does not contain ${JSON.stringify(e.message)}`);
  return problems;
}

function describeVerdict(v: RowVerdict): string {
  const who = v.row ?? v.expectation!;
  return `${who.pod}${who.container === undefined ? '' : `/${who.container}`}`;
}

describe('runnable examples', function () {
  this.timeout(120_000);

  describe('layout', () => {
    it('every story has a README.md and an expect.yaml', () => {
      const stories = readdirSync(storiesDir, { withFileTypes: true }).filter((e) => e.isDirectory());
      expect(stories.length).to.be.greaterThan(10);
      for (const s of stories) {
        expect(existsSync(join(storiesDir, s.name, 'README.md')), `${s.name}/README.md`).to.equal(true);
        expect(existsSync(join(storiesDir, s.name, 'expect.yaml')), `${s.name}/expect.yaml`).to.equal(true);
      }
    });

    it('every pod file of examples/ is run by some expect.yaml, and every node file is used', async () => {
      const manifests = await Promise.all(exampleFiles().map((f) => loadExampleManifest(f)));
      const podsRun = new Set(manifests.flatMap((m) => m.runs.flatMap((r) => r.pods)));
      const nodesUsed = new Set(manifests.map((m) => m.node).filter((n) => n !== undefined));
      const podFiles = [
        ...yamlFilesUnder(join(examplesDir, 'pods')),
        ...readdirSync(storiesDir).flatMap((s) => yamlFilesUnder(join(storiesDir, s, 'pods'))),
      ];
      const notRun = podFiles.filter((f) => !podsRun.has(resolve(f))).map((f) => relative(repoRoot, f));
      expect(notRun, 'pod files no example runs').to.deep.equal([]);
      const nodeFiles = [...yamlFilesUnder(join(examplesDir, 'nodes')), ...readdirSync(storiesDir).map((s) => join(storiesDir, s, 'node.yaml')).filter(existsSync)];
      const unused = nodeFiles.filter((f) => !nodesUsed.has(resolve(f))).map((f) => relative(repoRoot, f));
      expect(unused, 'node files no example uses').to.deep.equal([]);
    });

    it('the examples README lists every story', () => {
      const readme = readFileSync(join(examplesDir, 'README.md'), 'utf8');
      for (const s of readdirSync(storiesDir)) expect(readme, `examples/README.md mentions stories/${s}`).to.include(`stories/${s}/`);
    });
  });

  for (const file of exampleFiles()) {
    const name = relative(examplesDir, join(file, '..'));
    describe(name, function () {
      let manifest: ExampleManifest;
      let rt: RuntimeHandle | undefined;
      let cri: CriClient | undefined;
      let report: ExampleReport;

      before(async function () {
        manifest = await loadExampleManifest(file);
        rt = await startRuntime({
          name,
          args: [...(manifest.node === undefined ? [] : ['--node', manifest.node]), '--ad-mode', manifest.adMode],
        });
        cri = createCriClient(rt.endpoint);
        const withCrictl = criToolPath('crictl') !== undefined;
        report = await runExample(cri, manifest, {
          podLogsRoot: join(rt.dir, 'pod-logs'),
          ...(withCrictl ? { exec: crictlExec(rt), logs: crictlLogs(rt) } : {}),
        });
      });

      after(async () => {
        cri?.close();
        if (rt !== undefined) {
          const exit = await rt.stop();
          expect(exit.socketLeft, 'socket left behind').to.equal(false);
        }
      });

      it('has exactly the rows its expect.yaml lists', () => {
        const unexpected = report.runs.flatMap((r) => r.verdicts).filter((v) => v.expectation === undefined || v.row === undefined);
        expect(unexpected.map((v) => `${describeVerdict(v)}: ${v.problems.join('; ')}`)).to.deep.equal([]);
      });

      // One test per expected row, so a failure names the pod and container and says what differs.
      for (const [runIndex, key] of parseRowsForTitles(file)) {
        it(`run ${runIndex + 1}: ${key}`, () => {
          const verdict = report.runs[runIndex]!.verdicts.find((v) => describeVerdict(v) === key);
          expect(verdict, `no verdict for ${key}`).to.not.equal(undefined);
          expect(verdict!.problems, `${key} in ${relative(repoRoot, file)}`).to.deep.equal([]);
        });
      }

      // The same runs through the kubelet's command line, on a runtime of their own.
      describe('through `cri-winsim kubelet run`', () => {
        let cliRt: RuntimeHandle | undefined;
        const cliRuns: KubeletCliRun[] = [];

        before(async () => {
          cliRt = await startRuntime({
            name: `${name} (kubelet CLI)`,
            args: [...(manifest.node === undefined ? [] : ['--node', manifest.node]), '--ad-mode', manifest.adMode],
          });
          for (const run of manifest.runs) cliRuns.push(await kubeletRun(cliRt, manifest, run));
        });

        after(async () => {
          if (cliRt !== undefined) expect((await cliRt.stop()).socketLeft, 'socket left behind').to.equal(false);
        });

        for (const [runIndex, key] of parseRowsForTitles(file)) {
          it(`run ${runIndex + 1}: ${key}`, () => {
            const e = manifest.runs[runIndex]!.expect.find((x) => `${x.pod}${x.container === undefined ? '' : `/${x.container}`}` === key)!;
            expect(cliProblems(cliRuns[runIndex]!, e), `${key} in ${relative(repoRoot, file)}`).to.deep.equal([]);
          });
        }

        it('exits 0 only when every pod of a run is expected to run', () => {
          for (const [i, run] of manifest.runs.entries()) {
            const allRun = run.expect.every((e) => e.outcome === 'Running');
            expect(cliRuns[i]!.code, `run ${i + 1}: ${cliRuns[i]!.stderr}`).to.equal(allRun ? 0 : 1);
          }
        });
      });
    });
  }
});

/**
 * The (run, pod[/container]) keys of an expect.yaml, read synchronously at suite definition
 * time (mocha defines tests before any hook runs). The full validation is loadExampleManifest's.
 */
function parseRowsForTitles(file: string): Array<[number, string]> {
  const data = parseYamlSync(readFileSync(file, 'utf8')) as { runs?: Array<{ expect?: Array<{ pod: string; container?: string }> }> };
  return (data.runs ?? []).flatMap((run, i) => (run.expect ?? []).map((e): [number, string] => [i, `${e.pod}${e.container === undefined ? '' : `/${e.container}`}`]));
}
