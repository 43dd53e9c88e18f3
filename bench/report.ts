/** The benchmark's result model and its writers: one JSON document and two small SVG charts. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderBarChart, type BarChart } from './chart.js';
import { ratio, type LatencySummary } from './stats.js';
import type { DiskSettling } from './disk.js';
import type { ImageWorldResult } from './image-world.js';
import type { TargetCheck } from './target-check.js';

export type Target = 'runtime' | 'floor';

/** One lifecycle scenario at one concurrency against one target. */
export interface LifecycleRun {
  pods: number;
  failedPods: number;
  elapsedMs: number;
  podsPerSecond: number;
  /** Successful lifecycle RPCs per second. */
  rpcsPerSecond: number;
  stoppedBy: string;
  errors: string[];
  operations: Record<string, LatencySummary>;
  /**
   * CPU of the server process per completed pod during the run (ms, from /proc, 10 ms
   * resolution): its main thread, and its other threads — V8's optimizing compiler and garbage
   * collector helpers — which compete with both processes for the machine's cores.
   */
  serverCpuMsPerPod?: { mainThread: number; otherThreads: number };
}

export interface LatencyRatios {
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

export interface LifecycleComparison {
  scenario: 'gmsa-lifecycle' | 'plain-lifecycle';
  concurrency: number;
  runtime: LifecycleRun;
  floor: LifecycleRun;
  /** runtime / floor for every figure (throughput: higher is better; latency: lower is better). */
  ratios: {
    podsPerSecond: number | null;
    rpcsPerSecond: number | null;
    operations: Record<string, LatencyRatios>;
  };
}

export interface ListComparison {
  operation: 'ListContainers' | 'ListPodSandbox';
  liveObjects: number;
  /** Items in the runtime's answer (checks the setup). */
  itemsReturned: number;
  runtime: LatencySummary;
  floor: LatencySummary;
  ratios: LatencyRatios;
  /** Mean time inside the runtime's handler (from its metrics, with --metrics): the rest is wire and client. */
  runtimeHandlerMeanMs?: number;
  /**
   * ListContainers only: each timed call follows one StopContainer (untimed), so the runtime lists,
   * encodes and sends a changed list and the client decodes it; the other figures are of an
   * unchanged set, which the runtime sends from its last bytes. No floor counterpart: the floor
   * answers one fixed response.
   */
  runtimeAfterChange?: LatencySummary;
  /**
   * The same list through the real crictl (a Go client, like the kubelet): wall time of
   * `crictl ps -a -q` / `crictl pods -q`, and of `crictl version` (process start + one small RPC).
   */
  crictl?: { runtime: LatencySummary; floor: LatencySummary; versionBaseline: LatencySummary };
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  command: string;
  machine: {
    cpus: number;
    cpuModel: string;
    totalMemoryMiB: number;
    node: string;
    platform: string;
    /** 1/5/15-minute load averages: the machine may be shared, and the figures are only as quiet as it was. */
    loadAverageAtStart?: number[];
    loadAverageAtEnd?: number[];
  };
  /**
   * How the client ran: the V8 flags of the process that drives the lifecycle and list runs
   * (load-generator.ts), and where the fake kubelet ran.
   */
  loadGenerator: { nodeArgs: string[]; kubelet: string };
  bounds: Record<string, number | number[] | string>;
  runtime: {
    /** The node flags the runtime (and the floor) started with: the `cri-winsim` command's (src/tuning/node-flags.ts). */
    nodeArgs?: string[];
    /** Spawn to the ready line, first start. */
    startupMs: number;
    /** Every start in the run (the list scenarios use a fresh runtime). */
    startupSamplesMs: number[];
    rssAtStartKiB: number;
    /** With --metrics: the lifecycle runtime's CPU, GC and event-loop figures at the end of the lifecycle runs. */
    processAfterLifecycle?: Record<string, number>;
    /**
     * Per list size: RSS growth over the fresh runtime's baseline divided by the live pods
     * (sandbox + running container), and for the step to this size the cost split into sandbox
     * and running container.
     */
    memory: {
      liveContainers: number;
      rssBeforeKiB: number;
      rssAfterKiB: number;
      bytesPerContainer: number;
      step?: { sandboxesAdded: number; bytesPerSandbox: number | null; containersAdded: number; bytesPerRunningContainer: number | null };
    }[];
  };
  /**
   * The warm-up each server got before the lifecycle runs: pods in all, most at `concurrency` and
   * the last `lonePods` one at a time, and how many it completed in how long.
   */
  warmup?: { podsPerTarget: number; concurrency: number; lonePods: number; runtime: { pods: number; elapsedMs: number }; floor: { pods: number; elapsedMs: number } };
  /** Creating a file (open O_CREAT + close) in the log directory, before and after the lifecycle runs. */
  disk?: { settling?: DiskSettling; fileCreateBefore: LatencySummary; fileCreateAfter?: LatencySummary };
  lifecycle: LifecycleComparison[];
  lists: ListComparison[];
  kubelet: unknown;
  /** Pull+start of an open-world image against a catalogue one (bench/image-world.ts); absent: --skip-images or failed (notes). */
  imageWorld?: ImageWorldResult;
  targets: TargetCheck[];
  notes: string[];
}

export function compareLatency(ours: LatencySummary, floor: LatencySummary | undefined): LatencyRatios {
  return { p50: ratio(ours.p50, floor?.p50), p90: ratio(ours.p90, floor?.p90), p99: ratio(ours.p99, floor?.p99) };
}

export function compareLifecycle(
  scenario: LifecycleComparison['scenario'],
  concurrency: number,
  runtime: LifecycleRun,
  floor: LifecycleRun,
): LifecycleComparison {
  const operations: Record<string, LatencyRatios> = {};
  for (const [op, summary] of Object.entries(runtime.operations)) operations[op] = compareLatency(summary, floor.operations[op]);
  return {
    scenario,
    concurrency,
    runtime,
    floor,
    ratios: {
      podsPerSecond: ratio(runtime.podsPerSecond, floor.podsPerSecond),
      rpcsPerSecond: ratio(runtime.rpcsPerSecond, floor.rpcsPerSecond),
      operations,
    },
  };
}

const OURS = { name: 'cri-winsim runtime', color: '#2b6cb0' };
const FLOOR = { name: 'no-op gRPC floor', color: '#a0aec0' };

export function throughputChart(report: Pick<BenchReport, 'lifecycle'>): BarChart {
  return {
    title: 'Pod lifecycle throughput (8 RPCs per pod), higher is better',
    unit: 'RPCs/s',
    series: [OURS, FLOOR],
    rows: report.lifecycle.map((c) => ({
      label: `${c.scenario} c=${c.concurrency}`,
      values: [c.runtime.rpcsPerSecond, c.floor.rpcsPerSecond],
    })),
  };
}

export function listLatencyChart(report: Pick<BenchReport, 'lists'>): BarChart {
  return {
    title: 'List latency p50 by live objects, lower is better',
    unit: 'ms',
    series: [OURS, FLOOR],
    rows: report.lists.map((l) => ({
      label: `${l.operation} ${l.liveObjects.toLocaleString('en-US')}`,
      values: [l.runtime.p50, l.floor.p50],
    })),
  };
}

/** Writes bench-results.json, lifecycle-throughput.svg and list-latency.svg into dir; returns their paths. */
export function writeReport(dir: string, report: BenchReport): string[] {
  mkdirSync(dir, { recursive: true });
  const files: [string, string][] = [
    ['bench-results.json', JSON.stringify(report, null, 2) + '\n'],
    ['lifecycle-throughput.svg', renderBarChart(throughputChart(report))],
    ['list-latency.svg', renderBarChart(listLatencyChart(report))],
  ];
  return files.map(([name, text]) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  });
}
