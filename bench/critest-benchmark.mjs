#!/usr/bin/env node
// Runs the CRI benchmark suite of cri-tools against the runtime and stores its JSON beside ours:
//
//   node bench/critest-benchmark.mjs [--out DIR] [--samples N] [--parallel P] [--timeout-seconds S]
//
// Needs the build (`npx tsc -p .`) and critest in .tools/bin (scripts/install-tools.mjs).
// Writes DIR/critest/{*_benchmark_data.json, critest-summary.json, critest.log, params.yaml};
// DIR defaults to bench/results. Exits with critest's exit code.
import { spawn } from 'node:child_process';
import { copyFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const critest = join(root, '.tools', 'bin', 'critest');
const cli = join(root, 'dist', 'src', 'cli.js');
const compiled = join(root, 'dist', 'bench');

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    samples: { type: 'string', default: '100' },
    parallel: { type: 'string', default: '2' },
    'timeout-seconds': { type: 'string', default: '300' },
  },
  strict: true,
});

function positive(name, text) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`critest-benchmark: --${name} ${JSON.stringify(text)}: expected a positive integer\n`);
    process.exit(2);
  }
  return n;
}
const samples = positive('samples', values.samples);
const parallel = positive('parallel', values.parallel);
const timeoutSeconds = positive('timeout-seconds', values['timeout-seconds']);
const resultsDir = join(resolve(values.out ?? join(root, 'bench', 'results')), 'critest');

for (const [file, hint] of [
  [critest, 'run `node scripts/install-tools.mjs` first'],
  [cli, 'build first: `npx tsc -p .`'],
  [join(compiled, 'runtime-process.js'), 'build first: `npx tsc -p .`'],
]) {
  if (!existsSync(file)) {
    process.stderr.write(`critest-benchmark: ${file} not found: ${hint}\n`);
    process.exit(2);
  }
}

const { startRuntime } = await import(join(compiled, 'runtime-process.js'));
const { parseCritestResults, startFromScratchMedianMs, summarizeCritestResults } = await import(join(compiled, 'critest-results.js'));

// Images the runtime's fake registry knows (REFERENCE.md §3); critest pulls and removes them.
const PULL_IMAGE = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const LIST_IMAGES = [PULL_IMAGE, 'registry.k8s.io/e2e-test-images/nginx:1.14-2', 'registry.k8s.io/e2e-test-images/httpd:2.4.39-4'];

// Keys of cri-tools' BenchmarkingParamsType (pkg/framework/test_context.go).
const params = [
  `containersNumber: ${samples}`,
  `containersNumberParallel: ${parallel}`,
  'containerBenchmarkTimeoutSeconds: 60',
  `podsNumber: ${samples}`,
  `podsNumberParallel: ${parallel}`,
  'podBenchmarkTimeoutSeconds: 60',
  `imagesNumber: ${Math.max(1, Math.floor(samples / 5))}`,
  `imagesNumberParallel: ${parallel}`,
  'imageBenchmarkTimeoutSeconds: 60',
  `imagePullingBenchmarkImage: "${PULL_IMAGE}"`,
  'imageListingBenchmarkImages:',
  ...LIST_IMAGES.map((i) => `  - "${i}"`),
  // critest's own limit for "start a container from scratch" (5 s, REFERENCE.md §3).
  'podContainerStartBenchmarkTimeoutSeconds: 5',
  '',
].join('\n');

const work = mkdtempSync(join(tmpdir(), 'cri-winsim-critest-bench-'));
const outDir = join(work, 'out');
mkdirSync(outDir);
mkdirSync(resultsDir, { recursive: true });
const paramsFile = join(work, 'params.yaml');
writeFileSync(paramsFile, params);
copyFileSync(paramsFile, join(resultsDir, 'params.yaml'));

let runtime;
let exitCode;
try {
  runtime = await startRuntime({ cliPath: cli, socketPath: join(work, 'cri.sock'), stateDir: join(work, 'state') });
  process.stdout.write(`runtime ready in ${runtime.startupMs.toFixed(0)} ms at ${runtime.endpoint}\n`);
  const args = [
    '-benchmark',
    `-runtime-endpoint=${runtime.endpoint}`,
    `-image-endpoint=${runtime.endpoint}`,
    `-benchmarking-params-file=${paramsFile}`,
    `-benchmarking-output-dir=${outDir}`,
    '-ginkgo.no-color',
  ];
  process.stdout.write(`${critest} ${args.join(' ')}\n`);
  const logFile = createWriteStream(join(resultsDir, 'critest.log'));
  const started = performance.now();
  const child = spawn(critest, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: work });
  child.stdout.pipe(logFile, { end: false });
  child.stderr.pipe(logFile, { end: false });
  // Bounded: critest is killed when it runs past the budget.
  const killer = setTimeout(() => {
    process.stderr.write(`critest-benchmark: critest ran past ${timeoutSeconds} s, killing it\n`);
    child.kill('SIGKILL');
  }, timeoutSeconds * 1000);
  const [code, signal] = await new Promise((res) => child.once('exit', (c, s) => res([c, s])));
  clearTimeout(killer);
  await new Promise((res) => logFile.end(res));
  exitCode = code ?? 1;
  process.stdout.write(`critest exited ${code ?? signal} after ${((performance.now() - started) / 1000).toFixed(1)} s (log: ${join(resultsDir, 'critest.log')})\n`);

  const startFromScratchMs = startFromScratchMedianMs(readFileSync(join(resultsDir, 'critest.log'), 'utf8'));
  const summary = { command: `critest ${args.join(' ')}`, exitCode: code, signal, samples, parallel, startFromScratchMs, results: {} };
  process.stdout.write(`start a container from scratch (critest fails it at 5 s): ${startFromScratchMs ?? 'not found in the log'} ms\n`);
  for (const name of readdirSync(outDir).filter((f) => f.endsWith('.json')).sort()) {
    copyFileSync(join(outDir, name), join(resultsDir, name));
    const set = parseCritestResults(name, JSON.parse(readFileSync(join(outDir, name), 'utf8')));
    const s = summarizeCritestResults(set);
    summary.results[name] = s;
    process.stdout.write(`${name}: ${s.samples} samples, parallel ${s.numParallel}\n`);
    for (const [op, l] of Object.entries(s.operations)) {
      process.stdout.write(`  ${op.padEnd(22)} p50 ${l.p50.toFixed(2)} p90 ${l.p90.toFixed(2)} p99 ${l.p99.toFixed(2)} ms\n`);
    }
  }
  writeFileSync(join(resultsDir, 'critest-summary.json'), JSON.stringify(summary, null, 2) + '\n');
  process.stdout.write(`wrote ${join(resultsDir, 'critest-summary.json')}\n`);
} catch (err) {
  process.stderr.write(`critest-benchmark: ${err instanceof Error ? err.message : String(err)}\n`);
  exitCode = 1;
} finally {
  if (runtime) await runtime.stop();
  rmSync(work, { recursive: true, force: true });
}
process.exitCode = exitCode;
