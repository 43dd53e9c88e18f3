/**
 * Pulling and starting an image of the open world against a catalogue one (issue 30: "pulling and
 * starting an open-world image costs within 10 % of a catalogue one"). Against one runtime, each
 * iteration times PullImage + RunPodSandbox + CreateContainer + StartContainer of a Windows pod:
 *
 * - catalogue: mcr.microsoft.com/windows/servercore:ltsc2022 running `ping -t localhost`, the
 *   image removed after each iteration so that every pull resolves and stores it anew;
 * - open world: contoso.azurecr.io/webapp:<fresh tag>, a reference nobody described, so the
 *   unknown-image rule makes a Windows image of the node's build and its container runs the
 *   default image program; also removed after each iteration.
 *
 * Stop and removal are untimed. The two kinds take turns A B B A (runner.ts abbaOrder), bounded
 * in iterations and seconds, after an untimed warm-up of both. The runtime keeps its defaults
 * (pull delay, no latency profile): both kinds pay the same simulated registry time.
 *
 *   node dist/bench/image-world.js [--iterations N] [--seconds N] [--warmup N] [--cpu-prof] [--out FILE]
 *   (`npm run bench:images` builds first); `npm run bench` runs it as one section of its report.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createCriClient, unaryCall, type CriClient } from '../src/cri/proto.js';
import type { ContainerConfig } from '../src/generated/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig } from '../src/generated/runtime/v1/PodSandboxConfig.js';
import { dropOutputWhenReaderLeaves } from './closed-stdout.js';
import { asLoadGenerator } from './load-generator.js';
import type { TargetCheck } from './target-check.js';
import { abbaOrder } from './runner.js';
import { startRuntime } from './runtime-process.js';
import { summarize, type LatencySummary } from './stats.js';
import { BENCH_IMAGE } from './workload.js';

export type ImageKind = 'catalogue' | 'openWorld';

/** The timed RPCs of one iteration, in order. */
export const PULL_AND_START_RPCS = ['PullImage', 'RunPodSandbox', 'CreateContainer', 'StartContainer'] as const;
type TimedRpc = (typeof PULL_AND_START_RPCS)[number];

/** The lifecycle runs' image (workload.ts), a catalogue family. */
export const CATALOGUE_IMAGE = BENCH_IMAGE;
/** A long-running command the emulator knows (replies every second until stopped). */
export const CATALOGUE_COMMAND: readonly string[] = ['ping', '-t', 'localhost'];
/** A repository in no images file and not in the catalogue: the unknown-image rule's. */
export const OPEN_WORLD_REPOSITORY = 'contoso.azurecr.io/webapp';
/** The limit of issue 30's Done-when line: open-world median at most 1.1 × the catalogue's. */
export const OPEN_WORLD_LIMIT = 1.1;

const NAMESPACE = 'bench-images';
const CONTAINER_NAME = 'app';

export interface ImageWorldSettings {
  /** Timed iterations per kind at most (rounded up to a whole A B B A block). */
  iterations: number;
  /** Seconds of timed iterations at most (checked before each A B B A block). */
  seconds: number;
  /** Untimed iterations per kind first. */
  warmupIterations: number;
  /** Root of the pods' log directories (created per pod as the kubelet does); kept until the caller removes it. */
  logRoot: string;
  /** Per-call deadline, ms. */
  timeoutMs: number;
}

export interface ImageWorldSide {
  image: string;
  command: readonly string[];
  /** PullImage to StartContainer's answer, one sample per iteration. */
  pullAndStart: LatencySummary;
  operations: Record<TimedRpc, LatencySummary>;
}

export interface ImageWorldResult {
  what: string;
  iterationsPerKind: number;
  warmupIterationsPerKind: number;
  elapsedMs: number;
  stoppedBy: 'iterations' | 'seconds';
  catalogue: ImageWorldSide;
  openWorld: ImageWorldSide;
  /** openWorld / catalogue of pullAndStart, 3 decimals; the target takes p50. */
  ratio: { p50: number; p90: number; p99: number };
  limit: number;
}

/** Samples of one kind: the whole of each iteration and each RPC. */
export interface KindSamples {
  pullAndStart: number[];
  operations: Record<TimedRpc, number[]>;
}

export function emptySamples(): KindSamples {
  return { pullAndStart: [], operations: { PullImage: [], RunPodSandbox: [], CreateContainer: [], StartContainer: [] } };
}

const ratio3 = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;

/** The report section from both kinds' samples (equal counts, at least one each). */
export function summarizeImageWorld(
  samples: Record<ImageKind, KindSamples>,
  run: { warmupIterationsPerKind: number; elapsedMs: number; stoppedBy: ImageWorldResult['stoppedBy']; openWorldExample: string },
): ImageWorldResult {
  const side = (kind: ImageKind, image: string, command: readonly string[]): ImageWorldSide => {
    const s = samples[kind];
    const operations = {} as Record<TimedRpc, LatencySummary>;
    for (const rpc of PULL_AND_START_RPCS) operations[rpc] = summarize(s.operations[rpc]);
    return { image, command, pullAndStart: summarize(s.pullAndStart), operations };
  };
  const catalogue = side('catalogue', CATALOGUE_IMAGE, CATALOGUE_COMMAND);
  const openWorld = side('openWorld', run.openWorldExample, []);
  return {
    what:
      'PullImage + RunPodSandbox + CreateContainer + StartContainer of a Windows pod, one at a time against one runtime; ' +
      'a catalogue image (removed after each iteration) against an open-world reference with a fresh tag each time ' +
      '(the unknown-image rule, the default image program); stop and removal untimed; A B B A',
    iterationsPerKind: catalogue.pullAndStart.count,
    warmupIterationsPerKind: run.warmupIterationsPerKind,
    elapsedMs: Math.round(run.elapsedMs),
    stoppedBy: run.stoppedBy,
    catalogue,
    openWorld,
    ratio: {
      p50: ratio3(openWorld.pullAndStart.p50, catalogue.pullAndStart.p50),
      p90: ratio3(openWorld.pullAndStart.p90, catalogue.pullAndStart.p90),
      p99: ratio3(openWorld.pullAndStart.p99, catalogue.pullAndStart.p99),
    },
    limit: OPEN_WORLD_LIMIT,
  };
}

/** The target check of the report (not measured: pass null). */
export function imageWorldTarget(result: ImageWorldResult | undefined): TargetCheck {
  const measured = result?.ratio.p50 ?? null;
  return {
    name: 'open-world pull+start within 10 % of a catalogue one: p50 open-world / catalogue (PullImage to StartContainer)',
    measured,
    limit: `<= ${OPEN_WORLD_LIMIT}`,
    pass: measured === null ? null : measured <= OPEN_WORLD_LIMIT,
  };
}

const f2 = (n: number): string => n.toFixed(2);

/** The lines the bench prints for the section. */
export function formatImageWorld(r: ImageWorldResult): string[] {
  const row = (label: string, s: LatencySummary): string => `  ${label.padEnd(17)} p50 ${f2(s.p50)} p90 ${f2(s.p90)} p99 ${f2(s.p99)} ms`;
  const lines = [
    `images: ${r.iterationsPerKind} iterations each in ${(r.elapsedMs / 1000).toFixed(1)} s (stopped by ${r.stoppedBy}), ` +
      `open-world / catalogue p50 ${r.ratio.p50} p90 ${r.ratio.p90} p99 ${r.ratio.p99}`,
  ];
  for (const [label, side] of [['catalogue', r.catalogue], ['open world', r.openWorld]] as const) {
    lines.push(row(`${label} pull+start`, side.pullAndStart));
    for (const rpc of PULL_AND_START_RPCS) lines.push(row(`  ${rpc}`, side.operations[rpc]));
  }
  return lines;
}

function sandboxConfig(name: string, logRoot: string): PodSandboxConfig {
  const uid = `${name}-uid`;
  return {
    metadata: { name, uid, namespace: NAMESPACE, attempt: 0 },
    hostname: name,
    log_directory: join(logRoot, `${NAMESPACE}_${name}_${uid}`),
    labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': NAMESPACE, 'io.kubernetes.pod.uid': uid },
    // A Windows pod without Windows options, as the kubelet sends it (generatePodSandboxWindowsConfig).
    windows: { security_context: {} },
  };
}

function containerConfig(name: string, image: string, command: readonly string[]): ContainerConfig {
  return {
    metadata: { name: CONTAINER_NAME, attempt: 0 },
    image: { image },
    command: [...command],
    labels: { 'io.kubernetes.container.name': CONTAINER_NAME, 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': NAMESPACE },
    log_path: join(CONTAINER_NAME, '0.log'),
    windows: { security_context: {} },
  };
}

function describe(step: string, image: string, err: unknown): Error {
  const e = err as { code?: number; details?: string; message?: string };
  return new Error(`${step} (${image}): ${e.code !== undefined ? `code ${e.code}: ` : ''}${e.details ?? e.message ?? String(err)}`);
}

/**
 * One iteration of one kind: the four timed RPCs into `into` (when given), then stop and remove
 * everything, the image included, untimed. A failure tears down what was made and names the step.
 */
async function pullAndStart(cri: CriClient, kind: ImageKind, tag: string, settings: ImageWorldSettings, into: KindSamples | undefined): Promise<void> {
  const image = kind === 'catalogue' ? CATALOGUE_IMAGE : `${OPEN_WORLD_REPOSITORY}:${tag}`;
  const command = kind === 'catalogue' ? CATALOGUE_COMMAND : [];
  const name = `${kind === 'catalogue' ? 'cat' : 'open'}-${tag}`;
  const sandbox = sandboxConfig(name, settings.logRoot);
  const call = { timeoutMs: settings.timeoutMs };
  // Untimed, as the kubelet does before RunPodSandbox and CreateContainer.
  await mkdir(join(sandbox.log_directory as string, CONTAINER_NAME), { recursive: true });
  let sandboxId: string | undefined;
  let containerId: string | undefined;
  const teardown = async (): Promise<void> => {
    if (containerId !== undefined) {
      await unaryCall(cri.runtime, 'StopContainer', { container_id: containerId, timeout: 0 }, call);
      await unaryCall(cri.runtime, 'RemoveContainer', { container_id: containerId }, call);
    }
    if (sandboxId !== undefined) {
      await unaryCall(cri.runtime, 'StopPodSandbox', { pod_sandbox_id: sandboxId }, call);
      await unaryCall(cri.runtime, 'RemovePodSandbox', { pod_sandbox_id: sandboxId }, call);
    }
    await unaryCall(cri.image, 'RemoveImage', { image: { image } }, call);
  };
  let step: TimedRpc = 'PullImage';
  const times: number[] = [];
  let t = performance.now();
  const mark = (): void => {
    const now = performance.now();
    times.push(now - t);
    t = now;
  };
  try {
    await unaryCall(cri.image, 'PullImage', { image: { image }, sandbox_config: sandbox }, call);
    mark();
    step = 'RunPodSandbox';
    sandboxId = (await unaryCall(cri.runtime, 'RunPodSandbox', { config: sandbox }, call)).pod_sandbox_id;
    mark();
    step = 'CreateContainer';
    containerId = (await unaryCall(cri.runtime, 'CreateContainer', { pod_sandbox_id: sandboxId, config: containerConfig(name, image, command), sandbox_config: sandbox }, call))
      .container_id;
    mark();
    step = 'StartContainer';
    await unaryCall(cri.runtime, 'StartContainer', { container_id: containerId }, call);
    mark();
  } catch (err) {
    // Best effort: the step's error is the one reported.
    await teardown().catch(() => undefined);
    throw describe(step, image, err);
  }
  try {
    await teardown();
  } catch (err) {
    throw describe('teardown', image, err);
  }
  if (into !== undefined) {
    into.pullAndStart.push(times.reduce((a, b) => a + b, 0));
    PULL_AND_START_RPCS.forEach((rpc, i) => into.operations[rpc].push(times[i] as number));
  }
}

/** Runs the warm-up and the timed A B B A iterations against `cri`; see the file's comment. */
export async function measureImageWorld(cri: CriClient, settings: ImageWorldSettings): Promise<ImageWorldResult> {
  if (!(settings.iterations >= 2 && settings.seconds > 0 && settings.warmupIterations >= 0)) {
    throw new RangeError(`image-world bounds: iterations >= 2, seconds > 0, warm-up >= 0 (got ${settings.iterations}, ${settings.seconds}, ${settings.warmupIterations})`);
  }
  mkdirSync(settings.logRoot, { recursive: true });
  for (let i = 0; i < settings.warmupIterations; i++) {
    await pullAndStart(cri, 'catalogue', `w${i}`, settings, undefined);
    await pullAndStart(cri, 'openWorld', `w${i}`, settings, undefined);
  }
  const samples: Record<ImageKind, KindSamples> = { catalogue: emptySamples(), openWorld: emptySamples() };
  const block = abbaOrder<ImageKind>('catalogue', 'openWorld', 2);
  const started = performance.now();
  let stoppedBy: ImageWorldResult['stoppedBy'] = 'iterations';
  let i = 0;
  while (samples.catalogue.pullAndStart.length < settings.iterations) {
    if (performance.now() - started >= settings.seconds * 1000) {
      stoppedBy = 'seconds';
      break;
    }
    for (const kind of block) {
      await pullAndStart(cri, kind, String(i), settings, samples[kind]);
      i++;
    }
  }
  return summarizeImageWorld(samples, {
    warmupIterationsPerKind: settings.warmupIterations,
    elapsedMs: performance.now() - started,
    stoppedBy,
    openWorldExample: `${OPEN_WORLD_REPOSITORY}:<n>`,
  });
}

/** Defaults of the section, in `npm run bench` and alone. */
export const IMAGE_WORLD_DEFAULTS = { iterations: 200, seconds: 60, warmupIterations: 20 } as const;

const USAGE = `Usage: npm run bench:images -- [options]   (or: node dist/bench/image-world.js [options])

Times PullImage + RunPodSandbox + CreateContainer + StartContainer of a catalogue image against an
open-world one on a fresh runtime (bench/README.md, "Open-world images").

  --iterations N   timed iterations per kind, 2-10000 (default ${IMAGE_WORLD_DEFAULTS.iterations})
  --seconds N      longest timed part, in (0, 600] (default ${IMAGE_WORLD_DEFAULTS.seconds})
  --warmup N       untimed iterations per kind first, 0-1000 (default ${IMAGE_WORLD_DEFAULTS.warmupIterations})
  --cpu-prof       a CPU profile of the runtime, in the output file's directory
  --out FILE       the JSON result (default bench/results/image-world.json)
  -h, --help       this text
`;

async function main(): Promise<void> {
  // `… | head` must not end the run before it removes its runtime and temporary directory.
  dropOutputWhenReaderLeaves();
  const { values } = parseArgs({
    options: {
      iterations: { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(USAGE);
    return;
  }
  const iterations = Number(values.iterations ?? IMAGE_WORLD_DEFAULTS.iterations);
  const seconds = Number(values.seconds ?? IMAGE_WORLD_DEFAULTS.seconds);
  const warmupIterations = Number(values.warmup ?? IMAGE_WORLD_DEFAULTS.warmupIterations);
  if (!Number.isInteger(iterations) || iterations < 2 || iterations > 10_000) throw new RangeError(`--iterations ${values.iterations}: expected an integer from 2 to 10000`);
  if (!(seconds > 0 && seconds <= 600)) throw new RangeError(`--seconds ${values.seconds}: expected a number in (0, 600]`);
  if (!Number.isInteger(warmupIterations) || warmupIterations < 0 || warmupIterations > 1000) throw new RangeError(`--warmup ${values.warmup}: expected an integer from 0 to 1000`);
  // The client's collector must not take a core from the runtime (load-generator.ts).
  if (!(await asLoadGenerator())) return;
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const out = resolve(values.out ?? join(root, 'bench', 'results', 'image-world.json'));
  const work = mkdtempSync(join(tmpdir(), 'cri-winsim-bench-images-'));
  const runtime = await startRuntime({
    cliPath: join(root, 'dist', 'src', 'cli.js'),
    socketPath: join(work, 'runtime.sock'),
    stateDir: join(work, 'state'),
    nodeArgs: values['cpu-prof'] === true ? ['--cpu-prof', '--cpu-prof-dir', dirname(out)] : [],
  });
  const cri = createCriClient(runtime.endpoint);
  try {
    const startedAt = new Date().toISOString();
    const loadAverageAtStart = loadavg().map((l) => Math.round(l * 100) / 100);
    const result = await measureImageWorld(cri, { iterations, seconds, warmupIterations, logRoot: join(work, 'pod-logs'), timeoutMs: 15_000 });
    for (const line of formatImageWorld(result)) process.stdout.write(`${line}\n`);
    const target = imageWorldTarget(result);
    process.stdout.write(`target: ${target.name}: ${target.measured ?? '-'} (limit ${target.limit}) ${target.pass === true ? 'PASS' : 'FAIL'}\n`);
    const machine = { loadAverageAtStart, loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100) };
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({ startedAt, machine, imageWorld: result, target }, null, 2)}\n`);
    process.stdout.write(`wrote ${out}\n`);
  } finally {
    cri.close();
    await runtime.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:images: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
