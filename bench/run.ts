/**
 * `npm run bench`: drives the runtime through its real unix socket with the project's gRPC client
 * and compares every figure with a no-op gRPC server (the floor) driven by the same client in the
 * same run. Writes bench/results/bench-results.json and two SVG charts.
 *
 *   node dist/bench/run.js [options]    (`--help` lists them: USAGE below)
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_IDLE_GC_SECONDS } from '../src/tuning/idle-collector.js';
import { createCriClient, unaryCall, type CriClient } from '../src/cri/proto.js';
import { measureFileCreates, waitForQuietDisk, type DiskSettling } from './disk.js';
import { startFloorProcess, type FloorProcess } from './floor-process.js';
import { abbaOrder, runConcurrently } from './runner.js';
import { readThreadCpu, startRuntime, type RuntimeProcess } from './runtime-process.js';
import {
  compareLatency,
  compareLifecycle,
  writeReport,
  type BenchReport,
  type LifecycleComparison,
  type LifecycleRun,
  type ListComparison,
  type Target,
} from './report.js';
import type { TargetCheck } from './target-check.js';
import { LatencyRecorder, summarize } from './stats.js';
import { meanHandlerMs, scrapeHandlerTotals, scrapeProcessFigures, type HandlerTotals } from './scrape.js';
import { operationType } from '../src/cri/metrics.js';
import { timeCrictl, writeCrictlConfig } from './crictl-timing.js';
import type { KubeletRun } from './kubelet-throughput.js';
import { kubeletThroughputInChild } from './kubelet-process.js';
import { dropOutputWhenReaderLeaves } from './closed-stdout.js';
import { asLoadGenerator, LOAD_GENERATOR_NODE_ARGS } from './load-generator.js';
import { NODE_FLAGS } from '../src/tuning/node-flags.js';
import { IMAGE_WORLD_DEFAULTS, formatImageWorld, imageWorldTarget, measureImageWorld } from './image-world.js';
import { LIFECYCLE_RPCS, addLiveContainers, addLiveSandboxes, podLifecycle, pullBenchImage } from './workload.js';

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Each server's warm-up, in pods. V8 optimises a function once it has run enough bytecode, and
 * most of the runtime's functions run once or twice per pod: with V8's default budget and a
 * warm-up of 100 pods its optimising compiler was still at work, on a helper thread, through the
 * first several thousand timed pods (about 230 functions optimised in the first 4 s at
 * concurrency 1, still 5–10 a second after 6,000 pods), taking a core from the client and the
 * server at random moments. The floor's few functions run many times per pod and are optimised
 * within the first hundred. The runtime now lowers the budget (src/tuning/jit.ts) and reaches its
 * steady state within a few hundred pods; 5,000 pods (about 20 s per server) measure both servers
 * as a node that has been up for a while, whatever the budget.
 */
const DEFAULT_WARMUP_PODS = 5000;

/**
 * The part of the warm-up run one pod at a time. A lone call takes paths of its own (FileCallPolicy: the
 * file work inline), which concurrent pods never reach; without this part they were compiled and
 * optimised during the first timed run at concurrency 1.
 */
const WARMUP_LONE_FRACTION = 0.2;

/**
 * --idle-gc-seconds of the runtime the lifecycle runs use: longer than any pause they leave it
 * (two of the floor's rounds, at most 30 s), so that the idle collection, meant for a node that
 * has gone quiet, does not run between its timed rounds. After one the runtime is
 * slower for a few hundred pods: V8 drops the optimised code of about 150 functions whose weakly
 * held objects the collection freed, and the young generation starts small again (README,
 * Performance). The list and kubelet runs keep the default.
 */
const LIFECYCLE_IDLE_GC_SECONDS = 120;

/**
 * Seconds each server gets at concurrency 1, per scenario. A p99 there is the 1% tail of a few
 * hundred pods a second, and the target compares the worst of sixteen such ratios: with 10 s each
 * p99 rested on the ~23 slowest calls of a kind, and the worst ratio of eight runs of one build
 * ranged from 1.78 to 3.75; 60 s rests each p99 on about 120-130.
 */
const DEFAULT_SECONDS_AT_CONCURRENCY_1 = 60;

interface Settings {
  /** Options of the node-mode scale run after the rest; undefined: --skip-nodes. */
  nodeScaleArgs: string[] | undefined;
  /** Seconds each server gets in one lifecycle run (over its rounds), at concurrency 16 and 64. */
  seconds: number;
  /**
   * The same at concurrency 1: a p99 there is the 1% tail of a few hundred pods per second, so
   * 4 s rested it on the 8 or 9 slowest calls of a kind, and single events decided it.
   */
  secondsAtConcurrency1: number;
  concurrency: number[];
  listSizes: number[];
  listSeconds: number;
  listIterations: number;
  /** Pods each server runs, GMSA and plain alternately, before anything is timed. */
  warmupPods: number;
  warmupConcurrency: number;
  /** Upper bound of each server's warm-up. */
  warmupSeconds: number;
  /** Longest wait for the file system to settle before the lifecycle runs (0: no wait). */
  diskSettleSeconds: number;
  lifecycle: boolean;
  scenarios: LifecycleComparison['scenario'][];
  lists: boolean;
  /** The open-world images section (bench/image-world.ts); undefined: --skip-images. */
  images: { iterations: number; seconds: number; warmupIterations: number } | undefined;
  /** Path of crictl for the Go-client list timing; undefined when not installed (.tools/bin/crictl). */
  crictl: string | undefined;
  /** Pod counts of the fake kubelet throughput runs (empty: skipped). */
  kubeletSizes: number[];
  cpuProf: boolean;
  /** Run the runtime with --metrics-addr 127.0.0.1:0 (measures the metrics' cost). */
  metrics: boolean;
  /** --log-level for the runtime; undefined keeps the runtime's default (info). */
  runtimeLogLevel: string | undefined;
  /** Run the runtime with --ephemeral (no metadata database): the figures without durability. */
  ephemeral: boolean;
  out: string;
  /** The CLI to start as the runtime (default: this package's dist/src/cli.js); lets two builds be compared. */
  cli: string;
  /** Upper bound of lifecycle pods per run (per target, scenario and concurrency). */
  maxPods: number;
  setupSecondsPer10k: number;
}

/**
 * How long the bench waits at most for the file system to settle before the lifecycle runs
 * (bench/disk.ts): ext4 without a journal took up to about six and a half minutes on the
 * development machine to come back from a removal of tens of thousands of files (the end of the
 * previous bench run, a run of `npm test`).
 */
const DEFAULT_DISK_SETTLE_SECONDS = 480;
/** Between two probes of the file system while waiting for it to settle. */
const DISK_SETTLE_PROBE_INTERVAL_MS = 15_000;

const USAGE = `Usage: npm run bench -- [options]   (or: node dist/bench/run.js [options])

Drives the runtime and a no-op gRPC server (the floor) through their unix sockets with the same
client, reports ours/floor for every figure and checks the targets; writes bench-results.json and
two SVG charts to the output directory. bench/README.md explains each step.

  --quick                   2 s per scenario, 200 warm-up pods, lists up to 10,000, kubelet 100
  --seconds N               each lifecycle run at concurrency 16 and 64, in (0, 60] (default 4)
  --seconds-c1 N            each lifecycle run at concurrency 1, in (0, 60] (default ${DEFAULT_SECONDS_AT_CONCURRENCY_1})
  --concurrency LIST        lifecycle concurrencies (default 1,16,64)
  --scenarios LIST          gmsa, plain or both (default gmsa,plain)
  --warmup-pods N           untimed pods per server first, 0-100000 (default ${DEFAULT_WARMUP_PODS})
  --disk-settle-seconds N   longest wait for the file system to settle, 0-1800 (default ${DEFAULT_DISK_SETTLE_SECONDS})
  --list-sizes LIST         live pods for the list timings (default 1000,10000,50000)
  --kubelet-sizes LIST      pod counts of the fake kubelet runs (default 100,1000)
  --image-iterations N      open-world against catalogue pull+start, iterations per kind, 2-10000 (default ${IMAGE_WORLD_DEFAULTS.iterations})
  --image-seconds N         the same, longest timed part, in (0, 600] (default ${IMAGE_WORLD_DEFAULTS.seconds})
  --skip-lifecycle, --skip-lists, --skip-images, --skip-kubelet, --skip-nodes
  --node-scale=ARGS         options of the node-mode scale run that follows (bench/node-scale.ts,
                            its --help; default: its own, 1,000 nodes and 10,000 pods against kwok;
                            with --quick: --nodes 50 --pods 500)
  --metrics                 run the runtime with --metrics-addr 127.0.0.1:0
  --runtime-log-level LEVEL the runtime's --log-level (default: its own, info)
  --ephemeral               run the runtime with --ephemeral (no metadata database; default: durable)
  --cpu-prof                a CPU profile of each runtime started, in <out>/profiles/
  --cli PATH                the CLI to benchmark (default: this package's dist/src/cli.js)
  --out DIR                 output directory (default bench/results)
  -h, --help                this text
`;

/** A bad command line: reported in one line, without a stack, with exit code 2. */
class UsageError extends Error {}

function numberList(text: string, flag: string): number[] {
  const values = text.split(',').map((s) => Number(s.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new UsageError(`${flag} ${JSON.stringify(text)}: expected comma-separated positive integers`);
  }
  return values;
}

function parseScenarios(text: string): LifecycleComparison['scenario'][] {
  const names = text.split(',').map((s) => s.trim());
  const known: Record<string, LifecycleComparison['scenario']> = { gmsa: 'gmsa-lifecycle', plain: 'plain-lifecycle' };
  const bad = names.filter((n) => known[n] === undefined);
  if (bad.length > 0 || names.length === 0) throw new UsageError(`--scenarios ${JSON.stringify(text)}: expected a comma-separated list of gmsa, plain`);
  return names.map((n) => known[n]);
}

const OPTIONS = {
  quick: { type: 'boolean', default: false },
  seconds: { type: 'string' },
  'seconds-c1': { type: 'string' },
  concurrency: { type: 'string' },
  'warmup-pods': { type: 'string' },
  'disk-settle-seconds': { type: 'string' },
  'list-sizes': { type: 'string' },
  'skip-lifecycle': { type: 'boolean', default: false },
  scenarios: { type: 'string' },
  'skip-lists': { type: 'boolean', default: false },
  'skip-images': { type: 'boolean', default: false },
  'image-iterations': { type: 'string' },
  'image-seconds': { type: 'string' },
  'kubelet-sizes': { type: 'string' },
  'skip-kubelet': { type: 'boolean', default: false },
  'skip-nodes': { type: 'boolean', default: false },
  'node-scale': { type: 'string' },
  'cpu-prof': { type: 'boolean', default: false },
  metrics: { type: 'boolean', default: false },
  'runtime-log-level': { type: 'string' },
  ephemeral: { type: 'boolean' },
  out: { type: 'string' },
  cli: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

function parseOptions(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, strict: true }).values;
  } catch (err) {
    // node:util's own errors (an unknown option, a missing value) name the option already.
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

function parseSettings(argv: string[]): Settings | 'help' {
  const values = parseOptions(argv);
  if (values.help === true) return 'help';

  const quick = values.quick === true;
  const seconds = values.seconds !== undefined ? Number(values.seconds) : quick ? 2 : 4;
  if (!(seconds > 0 && seconds <= 60)) throw new UsageError(`--seconds ${values.seconds}: expected a number in (0, 60]`);
  const secondsAtConcurrency1 = values['seconds-c1'] !== undefined ? Number(values['seconds-c1']) : quick ? 2 : DEFAULT_SECONDS_AT_CONCURRENCY_1;
  if (!(secondsAtConcurrency1 > 0 && secondsAtConcurrency1 <= 60)) throw new UsageError(`--seconds-c1 ${values['seconds-c1']}: expected a number in (0, 60]`);
  const warmupPods = values['warmup-pods'] !== undefined ? Number(values['warmup-pods']) : quick ? 200 : DEFAULT_WARMUP_PODS;
  if (!Number.isInteger(warmupPods) || warmupPods < 0 || warmupPods > 100_000) {
    throw new UsageError(`--warmup-pods ${values['warmup-pods']}: expected an integer from 0 to 100000`);
  }
  const diskSettleSeconds = values['disk-settle-seconds'] !== undefined ? Number(values['disk-settle-seconds']) : quick ? 0 : DEFAULT_DISK_SETTLE_SECONDS;
  if (!(diskSettleSeconds >= 0 && diskSettleSeconds <= 1800)) throw new UsageError(`--disk-settle-seconds ${values['disk-settle-seconds']}: expected a number from 0 to 1800`);
  const imageIterations = values['image-iterations'] !== undefined ? Number(values['image-iterations']) : quick ? 40 : IMAGE_WORLD_DEFAULTS.iterations;
  if (!Number.isInteger(imageIterations) || imageIterations < 2 || imageIterations > 10_000) {
    throw new UsageError(`--image-iterations ${values['image-iterations']}: expected an integer from 2 to 10000`);
  }
  const imageSeconds = values['image-seconds'] !== undefined ? Number(values['image-seconds']) : quick ? 10 : IMAGE_WORLD_DEFAULTS.seconds;
  if (!(imageSeconds > 0 && imageSeconds <= 600)) throw new UsageError(`--image-seconds ${values['image-seconds']}: expected a number in (0, 600]`);
  return {
    seconds,
    secondsAtConcurrency1,
    diskSettleSeconds,
    concurrency: values.concurrency !== undefined ? numberList(values.concurrency, '--concurrency') : [1, 16, 64],
    listSizes: values['list-sizes'] !== undefined ? numberList(values['list-sizes'], '--list-sizes') : quick ? [1000, 10000] : [1000, 10000, 50000],
    listSeconds: quick ? 2 : 4,
    listIterations: quick ? 10 : 40,
    warmupPods,
    warmupConcurrency: 16,
    warmupSeconds: 90,
    lifecycle: values['skip-lifecycle'] !== true,
    scenarios: parseScenarios(values.scenarios ?? 'gmsa,plain'),
    lists: values['skip-lists'] !== true,
    images: values['skip-images'] === true ? undefined : { iterations: imageIterations, seconds: imageSeconds, warmupIterations: quick ? 5 : IMAGE_WORLD_DEFAULTS.warmupIterations },
    crictl: existsSync(join(PACKAGE_ROOT, '.tools', 'bin', 'crictl')) ? join(PACKAGE_ROOT, '.tools', 'bin', 'crictl') : undefined,
    kubeletSizes:
      values['skip-kubelet'] === true
        ? []
        : values['kubelet-sizes'] !== undefined
          ? numberList(values['kubelet-sizes'], '--kubelet-sizes')
          : quick
            ? [100]
            : [100, 1000],
    // The node-mode scale run (issue: node mode at 1,000 nodes against kwok), after the rest.
    nodeScaleArgs:
      values['skip-nodes'] === true
        ? undefined
        : values['node-scale'] !== undefined
          ? values['node-scale'].split(/\s+/).filter((a) => a !== '')
          : quick
            ? ['--nodes', '50', '--pods', '500']
            : [],
    cpuProf: values['cpu-prof'] === true,
    metrics: values.metrics === true,
    runtimeLogLevel: values['runtime-log-level'],
    ephemeral: values.ephemeral === true,
    out: resolve(values.out ?? join(PACKAGE_ROOT, 'bench', 'results')),
    cli: resolve(values.cli ?? join(PACKAGE_ROOT, 'dist', 'src', 'cli.js')),
    maxPods: 20000,
    setupSecondsPer10k: 60,
  };
}

const CALL = { timeoutMs: 15000 };
/** Longest wait, after the idle collection, for the runtime's RSS to stop moving before it is sampled. */
const RSS_SETTLE_SECONDS = 20;
const CRICTL_SAMPLES = 5;
/** File creations timed in the log directory before and after the lifecycle runs. */
const DISK_SAMPLES = 300;

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Rounds each server gets in one lifecycle run at concurrency 16 and 64 (ABBA twice). */
const ROUNDS_EACH = 4;
/**
 * About how long one round lasts at concurrency 1. A p99 there rests on the slowest 1 % of calls
 * of a kind, and this machine has slow phases of a few seconds (a busy loop of 200 µs chunks
 * sees one in four hundred take twice as long, the longest 7 ms, on an idle machine): with rounds
 * of 7.5 s one such phase could fall into one server's rounds only, and the worst ratio of a run
 * moved with it (1.59 to 2.03 × in runs of one build). With rounds of 2 s (30 each at the default
 * 60 s) both servers take turns through every phase.
 */
const ROUND_SECONDS_AT_CONCURRENCY_1 = 2;

function lifecycleOrder(concurrency: number, settings: Settings): Target[] {
  const roundsEach =
    concurrency === 1 ? Math.max(ROUNDS_EACH, 2 * Math.round(settings.secondsAtConcurrency1 / ROUND_SECONDS_AT_CONCURRENCY_1 / 2)) : ROUNDS_EACH;
  return abbaOrder<Target>('runtime', 'floor', roundsEach);
}

/**
 * One lifecycle scenario at one concurrency against both targets: each gets settings.seconds
 * (secondsAtConcurrency1 at concurrency 1) in total, split over its rounds of lifecycleOrder;
 * samples and counts of the rounds are merged.
 */
async function lifecyclePair(
  clients: Record<Target, CriClient>,
  pids: Record<Target, number>,
  scenario: LifecycleComparison['scenario'],
  concurrency: number,
  image: string,
  logRoot: string,
  settings: Settings,
): Promise<Record<Target, LifecycleRun>> {
  const order = lifecycleOrder(concurrency, settings);
  const rounds = order.filter((t) => t === 'runtime').length;
  type Acc = { recorder: LatencyRecorder; completed: number; failed: number; elapsedMs: number; mainMs: number; otherMs: number; stoppedBy: Set<string>; errors: Set<string> };
  const fresh = (): Acc => ({ recorder: new LatencyRecorder(), completed: 0, failed: 0, elapsedMs: 0, mainMs: 0, otherMs: 0, stoppedBy: new Set(), errors: new Set() });
  const acc: Record<Target, Acc> = { runtime: fresh(), floor: fresh() };
  const gmsa = scenario === 'gmsa-lifecycle';
  for (const [round, target] of order.entries()) {
    const a = acc[target];
    const cpuBefore = await readThreadCpu(pids[target]);
    const outcome = await runConcurrently(
      {
        concurrency,
        maxIterations: Math.ceil(settings.maxPods / rounds),
        maxDurationMs: ((concurrency === 1 ? settings.secondsAtConcurrency1 : settings.seconds) * 1000) / rounds,
        maxFailures: 20,
      },
      (_worker, i) =>
        podLifecycle(clients[target], a.recorder, { name: `${target}-${scenario}-c${concurrency}-r${round}-${i}`, gmsa, logRoot }, image, CALL),
    );
    const cpuAfter = await readThreadCpu(pids[target]);
    a.mainMs += cpuAfter.mainMs - cpuBefore.mainMs;
    a.otherMs += cpuAfter.otherMs - cpuBefore.otherMs;
    a.completed += outcome.completed;
    a.failed += outcome.failed;
    a.elapsedMs += outcome.elapsedMs;
    a.stoppedBy.add(outcome.stoppedBy);
    for (const e of outcome.errors) a.errors.add(e);
    if (outcome.stoppedBy === 'failures') break;
  }
  const finish = (target: Target): LifecycleRun => {
    const a = acc[target];
    const seconds = a.elapsedMs / 1000;
    const all = a.completed + a.failed > 0 ? a.recorder.summaries() : {};
    const operations: LifecycleRun['operations'] = {};
    for (const rpc of LIFECYCLE_RPCS) if (all[rpc]) operations[rpc] = all[rpc];
    return {
      pods: a.completed,
      failedPods: a.failed,
      elapsedMs: Math.round(a.elapsedMs),
      podsPerSecond: seconds > 0 ? round(a.completed / seconds) : 0,
      rpcsPerSecond: seconds > 0 ? round((a.completed * LIFECYCLE_RPCS.length) / seconds) : 0,
      stoppedBy: [...a.stoppedBy].join(','),
      errors: [...a.errors].slice(0, 5),
      operations,
      serverCpuMsPerPod: a.completed > 0 ? { mainThread: round(a.mainMs / a.completed, 3), otherThreads: round(a.otherMs / a.completed, 3) } : undefined,
    };
  };
  return { runtime: finish('runtime'), floor: finish('floor') };
}

function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/**
 * The unfiltered list, timed one call at a time. With `change`, each timed call follows an untimed
 * `change.apply(i)` (ListContainers after one StopContainer: a list that changed since the last
 * one), at most `change.count` times.
 */
async function timeList(
  cri: CriClient,
  operation: ListComparison['operation'],
  settings: Settings,
  change?: { count: number; apply: (iteration: number) => Promise<unknown> },
): Promise<ReturnType<typeof summarize>> {
  const recorder = new LatencyRecorder();
  const outcome = await runConcurrently(
    {
      concurrency: 1,
      maxIterations: Math.min(settings.listIterations, change?.count ?? Number.POSITIVE_INFINITY),
      maxDurationMs: settings.listSeconds * 1000,
      maxFailures: 3,
    },
    async (_worker, iteration) => {
      await change?.apply(iteration);
      await recorder.time<unknown>(operation, () =>
        operation === 'ListContainers'
          ? unaryCall(cri.runtime, 'ListContainers', { filter: {} }, CALL)
          : unaryCall(cri.runtime, 'ListPodSandbox', { filter: {} }, CALL),
      );
    },
  );
  if (outcome.completed === 0) throw new Error(`${operation}${change ? ' after a change' : ''}: every call failed: ${outcome.errors.join('; ')}`);
  return recorder.summaries()[operation];
}

function fmt(n: number | null | undefined, digits = 2): string {
  return n === null || n === undefined ? '-' : n.toFixed(digits);
}

function checkTargets(report: BenchReport): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const gmsa64 = report.lifecycle.find((c) => c.scenario === 'gmsa-lifecycle' && c.concurrency === 64);
  const r = gmsa64?.ratios.rpcsPerSecond ?? null;
  checks.push({ name: 'full GMSA lifecycle RPCs/s at concurrency 64, ours/floor', measured: r, limit: '>= 0.6', pass: r === null ? null : r >= 0.6 });
  let worst: number | null = null;
  let worstName = '';
  for (const c of report.lifecycle.filter((x) => x.concurrency === 1)) {
    for (const [op, ratios] of Object.entries(c.ratios.operations)) {
      if (ratios.p99 !== null && (worst === null || ratios.p99 > worst)) {
        worst = ratios.p99;
        worstName = `${c.scenario} ${op}`;
      }
    }
  }
  checks.push({
    name: `worst lifecycle RPC p99 at concurrency 1, ours/floor${worstName ? ` (${worstName})` : ''}`,
    measured: worst,
    limit: '<= 2',
    pass: worst === null ? null : worst <= 2,
  });
  const list10k = report.lists.find((l) => l.operation === 'ListContainers' && l.liveObjects === 10000);
  const p50 = list10k ? round(list10k.runtime.p50) : null;
  checks.push({ name: 'ListContainers over 10,000 containers p50 (ms), project client (grpc-js + protobufjs)', measured: p50, limit: '< 50', pass: p50 === null ? null : p50 < 50 });
  const viaCrictl = list10k?.crictl ? round(list10k.crictl.runtime.p50 - list10k.crictl.versionBaseline.p50) : null;
  checks.push({
    name: 'ListContainers over 10,000 containers p50 (ms), Go client: crictl ps -a -q minus crictl version',
    measured: viaCrictl,
    limit: '< 50',
    pass: viaCrictl === null ? null : viaCrictl < 50,
  });
  // Of the steps that gave every new sandbox a running container (a step cut short by the runtime
  // mixes tens of thousands of sandboxes' garbage into the container half), the one that started
  // the most containers is the least noisy: its container half is the cost of one more idle
  // (running) container.
  const mem = report.runtime.memory
    .filter((m) => m.step !== undefined && m.step.containersAdded === m.step.sandboxesAdded)
    .sort((a, b) => (b.step?.containersAdded ?? 0) - (a.step?.containersAdded ?? 0))[0];
  const perContainer = mem?.step?.bytesPerRunningContainer ?? null;
  checks.push({
    name: `resident memory per idle running container (bytes, sandbox not included; step of ${mem?.step?.containersAdded ?? 0} containers to ${mem?.liveContainers ?? 0} live pods)`,
    measured: perContainer,
    limit: '< 4096',
    pass: perContainer === null ? null : perContainer < 4096,
  });
  const kubelet = (report.kubelet as { runs?: KubeletRun[] } | null)?.runs?.find((r) => r.pods === 1000);
  const kubeletSeconds = kubelet ? round(kubelet.elapsedMs / 1000) : null;
  checks.push({
    name: `fake kubelet: 1,000 gMSA pods Running (seconds${kubelet ? `, ${kubelet.running} of 1000 Running` : ''})`,
    measured: kubeletSeconds,
    limit: '< 5',
    pass: kubelet === undefined || kubeletSeconds === null ? null : kubelet.running === 1000 && kubeletSeconds < 5,
  });
  checks.push(imageWorldTarget(report.imageWorld));
  return checks;
}

async function main(): Promise<void> {
  dropOutputWhenReaderLeaves();
  const settings = parseSettings(process.argv.slice(2));
  if (settings === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  // The client's collector must not take a core from the server being timed (load-generator.ts).
  if (!(await asLoadGenerator())) return;
  const startedAt = new Date().toISOString();
  const work = mkdtempSync(join(tmpdir(), 'cri-winsim-bench-'));
  const logRoot = join(work, 'pod-logs');
  let runtime: RuntimeProcess | undefined;
  let floor: FloorProcess | undefined;
  let ours: CriClient | undefined;
  let base: CriClient | undefined;
  const notes: string[] = [];
  try {
    floor = await startFloorProcess(join(work, 'floor.sock'));
    const profileDir = join(settings.out, 'profiles');
    const launch = async (name: string, extraArgs: string[] = []): Promise<RuntimeProcess> =>
      startRuntime({
        cliPath: settings.cli,
        socketPath: join(work, `${name}.sock`),
        stateDir: join(work, `${name}-state`),
        nodeArgs: settings.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
        // Above info the runtime does not print its ready line: watch the socket instead.
        probeSocket: settings.runtimeLogLevel !== undefined && !['info', 'debug', 'trace'].includes(settings.runtimeLogLevel),
        runtimeArgs: [
          ...(settings.metrics ? ['--metrics-addr', '127.0.0.1:0'] : []),
          ...(settings.runtimeLogLevel !== undefined ? ['--log-level', settings.runtimeLogLevel] : []),
          ...(settings.ephemeral ? ['--ephemeral'] : []),
          ...extraArgs,
        ],
      });
    runtime = await launch('runtime', ['--idle-gc-seconds', String(LIFECYCLE_IDLE_GC_SECONDS)]);
    const rssAtStartKiB = await runtime.rssKiB();
    const startupSamplesMs = [round(runtime.startupMs)];
    log(`runtime pid ${runtime.pid} ready in ${runtime.startupMs.toFixed(0)} ms, RSS ${rssAtStartKiB} KiB`);
    ours = createCriClient(runtime.endpoint);
    base = createCriClient(floor.endpoint);
    await unaryCall(ours.runtime, 'Version', {}, CALL);
    await unaryCall(base.runtime, 'Version', {}, CALL);
    const image = await pullBenchImage(ours, CALL);
    await pullBenchImage(base, CALL);

    const report: BenchReport = {
      startedAt,
      finishedAt: '',
      command: `node dist/bench/run.js ${process.argv.slice(2).join(' ')}`.trim(),
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        totalMemoryMiB: Math.round(totalmem() / 2 ** 20),
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        loadAverageAtStart: loadavg().map((l) => round(l)),
        loadAverageAtEnd: [],
      },
      loadGenerator: {
        nodeArgs: [...LOAD_GENERATOR_NODE_ARGS],
        kubelet: `a process of its own with the command's node flags (${NODE_FLAGS.join(' ')}), as \`cri-winsim kubelet\` runs`,
      },
      bounds: {
        secondsPerLifecycleRun: settings.seconds,
        secondsPerLifecycleRunAtConcurrency1: settings.secondsAtConcurrency1,
        diskSettleSeconds: settings.diskSettleSeconds,
        maxPodsPerLifecycleRun: settings.maxPods,
        concurrency: settings.concurrency,
        listSizes: settings.listSizes,
        listIterations: settings.listIterations,
        listSeconds: settings.listSeconds,
        runtimeMetrics: settings.metrics ? 'on (--metrics-addr 127.0.0.1:0)' : 'off',
        runtimeLogLevel: settings.runtimeLogLevel ?? 'default (info)',
        durable: settings.ephemeral ? 'no (--ephemeral)' : 'yes',
        lifecycleRuntimeIdleGcSeconds: LIFECYCLE_IDLE_GC_SECONDS,
        imageIterationsPerKind: settings.images?.iterations ?? 'skipped',
        imageSeconds: settings.images?.seconds ?? 'skipped',
      },
      runtime: { nodeArgs: [...NODE_FLAGS], startupMs: round(runtime.startupMs), startupSamplesMs, rssAtStartKiB, memory: [] },
      lifecycle: [],
      lists: [],
      kubelet: { status: 'not measured in this run' },
      targets: [],
      notes,
    };

    if (settings.lifecycle) {
      // What the disk itself costs the runtime's file creations (log files, credential specs).
      mkdirSync(logRoot, { recursive: true });
      const settling: DiskSettling = await waitForQuietDisk(logRoot, {
        maxWaitMs: settings.diskSettleSeconds * 1000,
        intervalMs: DISK_SETTLE_PROBE_INTERVAL_MS,
        log,
      });
      report.disk = { settling, fileCreateBefore: measureFileCreates(logRoot, DISK_SAMPLES) };
      log(`disk: creating a file in the log directory p50 ${fmt(report.disk.fileCreateBefore.p50)} p99 ${fmt(report.disk.fileCreateBefore.p99)} ms`);
      // Warm both sides (JIT, connection, image cache) before anything is timed: see DEFAULT_WARMUP_PODS.
      const warmed = { runtime: { pods: 0, elapsedMs: 0 }, floor: { pods: 0, elapsedMs: 0 } };
      const lonePods = Math.round(settings.warmupPods * WARMUP_LONE_FRACTION);
      // The floor first: the runtime's first timed round follows its own warm-up directly.
      for (const [cri, target] of [[base, 'floor'], [ours, 'runtime']] as const) {
        const warm = new LatencyRecorder();
        for (const [concurrency, pods] of [
          [settings.warmupConcurrency, settings.warmupPods - lonePods],
          [1, lonePods],
        ] as const) {
          if (pods === 0) continue;
          const outcome = await runConcurrently(
            { concurrency, maxIterations: pods, maxDurationMs: (settings.warmupSeconds * 1000) / 2, maxFailures: 3 },
            (_w, i) => podLifecycle(cri, warm, { name: `warmup-${target}-c${concurrency}-${i}`, gmsa: i % 2 === 0, logRoot }, image, CALL),
          );
          if (outcome.failed > 0) throw new Error(`warm-up against the ${target} failed: ${outcome.errors.join('; ')}`);
          warmed[target].pods += outcome.completed;
          warmed[target].elapsedMs += Math.round(outcome.elapsedMs);
          log(`warm-up: ${target} ${outcome.completed} pods at concurrency ${concurrency} in ${(outcome.elapsedMs / 1000).toFixed(1)} s`);
        }
      }
      report.warmup = { podsPerTarget: settings.warmupPods, concurrency: settings.warmupConcurrency, lonePods, ...warmed };
      for (const scenario of settings.scenarios) {
        for (const concurrency of settings.concurrency) {
          const { runtime: r, floor: f } = await lifecyclePair({ runtime: ours, floor: base }, { runtime: runtime.pid, floor: floor.pid }, scenario, concurrency, image, logRoot, settings);
          const c = compareLifecycle(scenario, concurrency, r, f);
          report.lifecycle.push(c);
          log(
            `${scenario} c=${concurrency}: runtime ${r.pods} pods ${r.rpcsPerSecond} RPCs/s (${r.failedPods} failed), ` +
              `floor ${f.rpcsPerSecond} RPCs/s, ratio ${fmt(c.ratios.rpcsPerSecond)}; ` +
              `server CPU per pod main/other threads: runtime ${fmt(r.serverCpuMsPerPod?.mainThread)}/${fmt(r.serverCpuMsPerPod?.otherThreads)} ms, ` +
              `floor ${fmt(f.serverCpuMsPerPod?.mainThread)}/${fmt(f.serverCpuMsPerPod?.otherThreads)} ms`,
          );
          for (const rpc of LIFECYCLE_RPCS) {
            const o = r.operations[rpc];
            const b = f.operations[rpc];
            if (!o) continue;
            log(
              `  ${rpc.padEnd(17)} p50 ${fmt(o.p50)} p90 ${fmt(o.p90)} p99 ${fmt(o.p99)} ms` +
                `  | floor p50 ${fmt(b?.p50)} p99 ${fmt(b?.p99)}  | ratio p50 ${fmt(c.ratios.operations[rpc].p50)} p99 ${fmt(c.ratios.operations[rpc].p99)}`,
            );
          }
          if (r.errors.length > 0) log(`  runtime errors: ${r.errors.join(' | ')}`);
        }
      }
    }

    if (report.disk !== undefined) {
      report.disk.fileCreateAfter = measureFileCreates(logRoot, DISK_SAMPLES);
      log(`disk: creating a file in the log directory p50 ${fmt(report.disk.fileCreateAfter.p50)} p99 ${fmt(report.disk.fileCreateAfter.p99)} ms (after the lifecycle runs)`);
    }

    const lifecycleMetricsUrl = runtime.metricsUrl();
    if (settings.lifecycle && lifecycleMetricsUrl !== undefined) {
      try {
        report.runtime.processAfterLifecycle = await scrapeProcessFigures(lifecycleMetricsUrl);
      } catch (err) {
        notes.push(`metrics scrape after the lifecycle runs failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }

    if (settings.images !== undefined) {
      // On the lifecycle runtime (each iteration removes what it made, the image included).
      try {
        report.imageWorld = await measureImageWorld(ours, { ...settings.images, logRoot: join(logRoot, 'images'), timeoutMs: CALL.timeoutMs });
        for (const line of formatImageWorld(report.imageWorld)) log(line);
        // The section removed the catalogue image it shares with the lifecycle runs: back as it was.
        await pullBenchImage(ours, CALL);
      } catch (err) {
        const note = `open-world images could not be measured: ${err instanceof Error ? err.message : String(err)}`;
        notes.push(note);
        log(note);
      }
    }

    if (settings.lists) {
      // A fresh runtime for the lists: its RSS before any object is the baseline of the memory
      // per live pod, untouched by the garbage of the lifecycle runs. Also a second start-up sample.
      ours.close();
      const stopped = await runtime.stop();
      if (settings.cpuProf) notes.push(`lifecycle runtime exited: code ${stopped.code}, signal ${stopped.signal}`);
      runtime = await launch('lists');
      startupSamplesMs.push(round(runtime.startupMs));
      ours = createCriClient(runtime.endpoint);
      await pullBenchImage(ours, CALL);
      const crictlConfigs = { runtime: writeCrictlConfig(work, runtime.endpoint), floor: writeCrictlConfig(work, floor.endpoint) };
      let live = 0;
      const rssBeforeKiB = await runtime.rssKiB();
      // Sample RSS once the runtime is idle: after the last changing RPC it collects garbage once
      // (--idle-gc-seconds, default DEFAULT_IDLE_GC_SECONDS); wait that long and two seconds more,
      // then for the collection to end. It runs on the event loop (src/tuning/node-flags.ts) and took
      // over two seconds at 50,000 pods, while RSS went down as it freed pages (433 MB at two
      // seconds, 365 MB at ten): a Version call is answered once it is over, and RSS is read
      // until two reads a second apart agree within 1 % (RSS_SETTLE_SECONDS at most).
      const settledRss = async (): Promise<number> => {
        await sleep((DEFAULT_IDLE_GC_SECONDS + 2) * 1000);
        await unaryCall(ours!.runtime, 'Version', {}, CALL);
        let rss = await runtime!.rssKiB();
        for (let waited = 0; waited < RSS_SETTLE_SECONDS; waited++) {
          await sleep(1000);
          const next = await runtime!.rssKiB();
          const steady = Math.abs(next - rss) <= rss * 0.01;
          rss = next;
          if (steady) break;
        }
        return rss;
      };
      let setupError: string | undefined;
      for (const size of [...settings.listSizes].sort((a, b) => a - b)) {
        const setupStart = performance.now();
        const budgetMs = Math.max(30000, ((size - live) / 10000) * settings.setupSecondsPer10k * 1000);
        const setupSettings = { ...CALL, concurrency: 16, deadlineMs: budgetMs / 2 };
        // Sandboxes first, then a running container in each: the RSS in between splits the cost.
        const rssStepStartKiB = await settledRss();
        const sandboxes = await addLiveSandboxes(ours, live, size - live, setupSettings);
        const rssSandboxesKiB = await settledRss();
        const containers = await addLiveContainers(ours, sandboxes.done, image, setupSettings);
        live += containers.done.length;
        setupError = sandboxes.error ?? containers.error;
        const rssAfterKiB = await settledRss();
        if (setupError !== undefined) {
          const note = `setup towards ${size} live pods stopped at ${live} running containers (${sandboxes.done.length - containers.done.length} sandboxes left without one): ${setupError}`;
          notes.push(note);
          log(note);
        }
        // Out of file descriptors (one per running container): the remaining sandboxes get a CREATED
        // container, so the lists still see the full count of objects. Memory figures exclude these.
        let createdOnly = 0;
        const listedAfterStarts =
          containers.error?.includes('EMFILE') && sandboxes.error === undefined
            ? await unaryCall(ours.runtime, 'ListContainers', { filter: {} }, CALL).catch((err: unknown) => {
                notes.push(`listing containers after the failed starts failed: ${err instanceof Error ? err.message : String(err)}`);
                return undefined;
              })
            : undefined;
        if (listedAfterStarts !== undefined) {
          const started = new Set(containers.done);
          // The failed starts left CREATED containers behind; only sandboxes without any get one.
          const withContainer = new Set(listedAfterStarts.containers.map((c) => c.pod_sandbox_id));
          const bare = sandboxes.done.filter((sb) => !withContainer.has(sb.id));
          const created = await addLiveContainers(ours, bare, image, { ...setupSettings, start: false });
          createdOnly = created.done.length;
          const note = `${createdOnly} more containers created but not started so that ${size} pods are listed (${live} running, ${started.size} of them started in this step)`;
          notes.push(note);
          log(note);
          if (created.error === undefined) setupError = undefined;
          else notes.push(`creating the remaining containers failed: ${created.error}`);
        }
        const setupMs = performance.now() - setupStart;
        const added = sandboxes.done.length;
        const perSandbox = added > 0 ? Math.round(((rssSandboxesKiB - rssStepStartKiB) * 1024) / added) : null;
        const perContainer = containers.done.length > 0 ? Math.round(((rssAfterKiB - rssSandboxesKiB) * 1024) / containers.done.length) : null;
        const bytesPerContainer = live > 0 ? Math.round(((rssAfterKiB - rssBeforeKiB) * 1024) / live) : 0;
        report.runtime.memory.push({
          liveContainers: live,
          rssBeforeKiB,
          rssAfterKiB,
          bytesPerContainer,
          step: { sandboxesAdded: added, bytesPerSandbox: perSandbox, containersAdded: containers.done.length, bytesPerRunningContainer: perContainer },
        });
        log(
          `live pods ${live}: setup ${(setupMs / 1000).toFixed(1)} s, RSS ${rssAfterKiB} KiB, ${bytesPerContainer} bytes per live pod ` +
            `(this step: ${perSandbox ?? '-'} bytes per sandbox, ${perContainer ?? '-'} per running container)`,
        );

        for (const operation of ['ListContainers', 'ListPodSandbox'] as const) {
          // One list failing (e.g. a response over the 16 MiB message limit) only loses its own figures.
          try {
            // The floor answers with the runtime's own response, so both serialise the same bytes.
            const captured =
              operation === 'ListContainers'
                ? await unaryCall(ours.runtime, 'ListContainers', { filter: {} }, CALL)
                : await unaryCall(ours.runtime, 'ListPodSandbox', { filter: {} }, CALL);
            const items = 'containers' in captured ? captured.containers.length : captured.items.length;
            await floor.setResponse(operation, captured);
            const metricsUrl = runtime.metricsUrl();
            const opType = operationType(operation);
            // A scrape that fails (say the runtime is out of file descriptors) only loses this figure.
            const scrape = async (): Promise<HandlerTotals | undefined> => {
              if (!metricsUrl) return undefined;
              try {
                return await scrapeHandlerTotals(metricsUrl, opType);
              } catch (err) {
                notes.push(`metrics scrape at ${live} live pods failed: ${err instanceof Error ? `${err.message}${err.cause instanceof Error ? `: ${err.cause.message}` : ''}` : String(err)}`);
                return undefined;
              }
            };
            const before = await scrape();
            const r = await timeList(ours, operation, settings);
            const after = await scrape();
            const f = await timeList(base, operation, settings);
            const handlerMs = before && after ? meanHandlerMs(before, after) : null;
            // Stops some of this step's containers: after the memory figures, and the lists still count them.
            const client = ours;
            const afterChange =
              operation === 'ListContainers' && containers.done.length > 0
                ? await timeList(client, operation, settings, {
                    count: containers.done.length,
                    apply: (i) => unaryCall(client.runtime, 'StopContainer', { container_id: containers.done[i] as string, timeout: 0 }, CALL),
                  })
                : undefined;
            let crictl: ListComparison['crictl'];
            if (settings.crictl !== undefined) {
              const args = operation === 'ListContainers' ? ['ps', '-a', '-q'] : ['pods', '-q'];
              try {
                crictl = {
                  runtime: (await timeCrictl(settings.crictl, crictlConfigs.runtime, args, CRICTL_SAMPLES)).summary,
                  floor: (await timeCrictl(settings.crictl, crictlConfigs.floor, args, CRICTL_SAMPLES)).summary,
                  versionBaseline: (await timeCrictl(settings.crictl, crictlConfigs.runtime, ['version'], CRICTL_SAMPLES)).summary,
                };
              } catch (err) {
                notes.push(`crictl timing at ${live} live pods failed: ${err instanceof Error ? err.message : String(err)}`);
              }
            }
            report.lists.push({
              operation,
              // What the unfiltered list returned: sandboxes for ListPodSandbox, containers for ListContainers.
              liveObjects: items,
              itemsReturned: items,
              runtime: r,
              floor: f,
              ratios: compareLatency(r, f),
              ...(handlerMs !== null ? { runtimeHandlerMeanMs: round(handlerMs) } : {}),
              ...(afterChange !== undefined ? { runtimeAfterChange: afterChange } : {}),
              ...(crictl !== undefined ? { crictl } : {}),
            });
            log(`  ${operation} over ${live} (${items} returned): p50 ${fmt(r.p50)} p99 ${fmt(r.p99)} ms | floor p50 ${fmt(f.p50)} p99 ${fmt(f.p99)} | ratio p50 ${fmt(r.p50 / f.p50)}${handlerMs !== null ? ` | in the runtime's handler ${fmt(handlerMs)} ms` : ''}`);
            if (afterChange) log(`    after one StopContainer each: p50 ${fmt(afterChange.p50)} p99 ${fmt(afterChange.p99)} ms`);
            if (crictl) {
              log(`    crictl ${operation === 'ListContainers' ? 'ps -a -q' : 'pods -q'}: p50 ${fmt(crictl.runtime.p50)} ms | floor ${fmt(crictl.floor.p50)} ms | crictl version ${fmt(crictl.versionBaseline.p50)} ms`);
            }
          } catch (err) {
            const note = `${operation} at ${live} running containers could not be measured: ${err instanceof Error ? err.message : String(err)}`;
            notes.push(note);
            log(`  ${note}`);
          }
        }
        // The runtime could not hold more: larger sizes would fail the same way.
        if (setupError !== undefined || containers.error !== undefined) break;
      }
    }

    if (settings.kubeletSizes.length > 0) {
      // Each size on a fresh runtime: the pods stay running, and the lists' objects must not weigh on it.
      ours.close();
      await runtime.stop();
      runtime = undefined;
      const runs: KubeletRun[] = [];
      for (const count of settings.kubeletSizes) {
        runtime = await launch(`kubelet-${count}`);
        startupSamplesMs.push(round(runtime.startupMs));
        try {
          const run = await kubeletThroughputInChild(runtime.endpoint, join(work, `kubelet-${count}`), count);
          runs.push(run);
          log(
            `kubelet: ${run.running}/${run.pods} gMSA pods Running in ${(run.elapsedMs / 1000).toFixed(2)} s (${run.podsPerSecond} pods/s)` +
              (run.running < run.pods ? `; not running: ${JSON.stringify(run.notRunning)} e.g. ${JSON.stringify(run.examples)}` : ''),
          );
        } catch (err) {
          const note = `kubelet throughput at ${count} pods failed: ${err instanceof Error ? err.message : String(err)}`;
          notes.push(note);
          log(note);
        }
        await runtime.stop();
        runtime = undefined;
      }
      report.kubelet = {
        what: 'pod YAMLs with pod-level gmsaCredentialSpecName + runAsUserName, through decode, validation, GMSA admission (RBAC use), effective security context, CRI configs and the runtime (runPods of src/kubelet, one pass each)',
        runs,
      };
    }

    report.targets = checkTargets(report);
    for (const t of report.targets) log(`target: ${t.name}: ${t.measured ?? '-'} (limit ${t.limit}) ${t.pass === null ? 'not measured' : t.pass ? 'PASS' : 'FAIL'}`);
    if (runtime) {
      const stopped = await runtime.stop();
      runtime = undefined;
      if (settings.cpuProf) notes.push(`runtime exit: code ${stopped.code}, signal ${stopped.signal}`);
    }
    if (settings.cpuProf) notes.push(`runtime CPU profiles (one per runtime started) in ${profileDir}`);
    report.finishedAt = new Date().toISOString();
    report.machine.loadAverageAtEnd = loadavg().map((l) => round(l));
    for (const file of writeReport(settings.out, report)) log(`wrote ${file}`);
  } finally {
    ours?.close();
    base?.close();
    if (runtime) await runtime.stop(3000);
    if (floor) await floor.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The node-mode scale run (bench/node-scale.ts) as its own process, once the runtime's figures
 * are written: it starts a control plane and a thousand nodes, which must not share the machine
 * with the runs above.
 */
async function nodeScale(settings: Settings): Promise<void> {
  if (settings.nodeScaleArgs === undefined) return;
  const script = join(dirname(fileURLToPath(import.meta.url)), 'node-scale.js');
  const args = [script, '--out', join(settings.out, 'node-scale.json'), ...settings.nodeScaleArgs];
  log(`node mode at scale: node ${args.map((a) => relative(PACKAGE_ROOT, a) || a).join(' ')}`);
  const child = spawn(process.execPath, args, { stdio: 'inherit' });
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  if (code !== 0) throw new Error(`node-scale exited with ${signal ?? code}`);
}

main()
  .then(async () => {
    const settings = parseSettings(process.argv.slice(2));
    if (settings !== 'help' && (process.exitCode === undefined || process.exitCode === 0)) await nodeScale(settings);
  })
  .catch((err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`bench: ${err.message} (--help lists the options)\n`);
    process.exitCode = 2;
    return;
  }
  process.stderr.write(`bench: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exitCode = 1;
});
