/**
 * What the store tricks of src/tuning save: the JavaScript heap per live pod (a ready sandbox and
 * one running container, as the list step of `npm run bench` builds them) of a runtime opened in
 * process with each RuntimeTuning variant, after full collections. Each variant runs in a child
 * of its own (`node --expose-gc`), in the order A B C D D C B A, so a slow phase of a shared
 * machine falls on all alike; heap bytes do not depend on the machine's load the way times do.
 *
 *   node dist/bench/tuning-memory.js [--pods 5000] [--rounds 2]
 *
 * Prints one line per run and a summary (median per variant); bench/README.md ("Tuning tricks")
 * has the figures. With `--idle-collection` it measures the idle collection instead
 * (src/tuning/idle-collector.ts): the resident memory after a burst of `--pods` whole pod
 * lifecycles (nothing left live) before and after the collection the idle collector makes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NodeRuntime } from '../src/runtime/node-runtime.js';
import { compactingCollection } from '../src/tuning/idle-collector.js';
import { MEASURED_TUNING, PLAIN_TUNING, type RuntimeTuning } from '../src/tuning/runtime-tuning.js';
import { imageSpec } from '../test/runtime/helpers.js';
import { runProcess } from '../test/support/process.js';
import { runtimeServiceDefinition } from '../src/cri/proto.js';
import type { CreateContainerRequest__Output } from '../src/generated/runtime/v1/CreateContainerRequest.js';
import type { RunPodSandboxRequest__Output } from '../src/generated/runtime/v1/RunPodSandboxRequest.js';
import type { StartContainerRequest__Output } from '../src/generated/runtime/v1/StartContainerRequest.js';
import { BENCH_IMAGE, containerConfig, sandboxConfig, type PodShape } from './workload.js';

const service = runtimeServiceDefinition() as unknown as Record<string, { requestSerialize(value: unknown): Buffer; requestDeserialize(bytes: Buffer): unknown }>;
/** `request` encoded and decoded again by the RPC's codec. */
function decoded<T>(method: string, request: unknown): T {
  const definition = service[method];
  if (definition === undefined) throw new Error(`no method ${method}`);
  return definition.requestDeserialize(definition.requestSerialize(request)) as T;
}

const VARIANTS: Record<string, RuntimeTuning> = {
  measured: MEASURED_TUNING,
  plain: PLAIN_TUNING,
  'no-encoded-configs': { ...MEASURED_TUNING, encodedContainerConfigs: false },
  'no-shared-strings': { ...MEASURED_TUNING, sharedStrings: false },
};

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, not ${process.argv[i + 1]}`);
  return value;
}

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) gc();
}

/** One variant in this process: heap and RSS per live pod. */
async function measure(variant: string, pods: number): Promise<{ variant: string; pods: number; heapPerPod: number; rssPerPod: number }> {
  const tuning = VARIANTS[variant];
  if (tuning === undefined) throw new Error(`unknown variant ${variant}`);
  const stateDir = await mkdtemp(join(tmpdir(), 'winsim-tuning-memory-'));
  const runtime = await NodeRuntime.open({ stateDir, pullDelayMs: 0, tuning });
  try {
    await runtime.pullImage({ image: imageSpec(BENCH_IMAGE), auth: null, sandbox_config: null });
    collect();
    const before = process.memoryUsage();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < pods) {
        // As the server gets them: the bench's messages through the service's own codec, so every
        // string and object of a request is a fresh copy, as after decoding.
        const pod: PodShape = { name: `live-${next++}`, gmsa: false };
        const sandbox = sandboxConfig(pod);
        const run = decoded<RunPodSandboxRequest__Output>('RunPodSandbox', { config: sandbox });
        const podSandboxId = (await runtime.runPodSandbox(run)).pod_sandbox_id ?? '';
        const create = decoded<CreateContainerRequest__Output>('CreateContainer', { pod_sandbox_id: podSandboxId, config: containerConfig(pod, BENCH_IMAGE), sandbox_config: sandbox });
        const containerId = (await runtime.createContainer(create)).container_id ?? '';
        await runtime.startContainer(decoded<StartContainerRequest__Output>('StartContainer', { container_id: containerId }));
      }
    };
    await Promise.all(Array.from({ length: 16 }, () => worker()));
    // Let tidy-up and the log writers settle, then collect.
    await new Promise((resolve) => setTimeout(resolve, 500));
    collect();
    const after = process.memoryUsage();
    return { variant, pods, heapPerPod: Math.round((after.heapUsed - before.heapUsed) / pods), rssPerPod: Math.round((after.rss - before.rss) / pods) };
  } finally {
    await runtime.close();
    await rm(stateDir, { recursive: true, force: true });
  }
}

/** A burst of whole pod lifecycles, then RSS before and after the idle collector's collection. */
async function idleCollection(pods: number): Promise<void> {
  const stateDir = await mkdtemp(join(tmpdir(), 'winsim-tuning-idle-'));
  const runtime = await NodeRuntime.open({ stateDir, pullDelayMs: 0 });
  try {
    await runtime.pullImage({ image: imageSpec(BENCH_IMAGE), auth: null, sandbox_config: null });
    const rssAtStart = process.memoryUsage().rss;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < pods) {
        const pod: PodShape = { name: `burst-${next++}`, gmsa: next % 2 === 0 };
        const sandbox = sandboxConfig(pod);
        const podSandboxId = (await runtime.runPodSandbox(decoded<RunPodSandboxRequest__Output>('RunPodSandbox', { config: sandbox }))).pod_sandbox_id ?? '';
        const create = decoded<CreateContainerRequest__Output>('CreateContainer', { pod_sandbox_id: podSandboxId, config: containerConfig(pod, BENCH_IMAGE), sandbox_config: sandbox });
        const containerId = (await runtime.createContainer(create)).container_id ?? '';
        await runtime.startContainer(decoded<StartContainerRequest__Output>('StartContainer', { container_id: containerId }));
        await runtime.stopContainer({ container_id: containerId, timeout: '0' });
        await runtime.removeContainer({ container_id: containerId });
        await runtime.stopPodSandbox({ pod_sandbox_id: podSandboxId });
        await runtime.removePodSandbox({ pod_sandbox_id: podSandboxId });
      }
    };
    await Promise.all(Array.from({ length: 16 }, () => worker()));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const before = process.memoryUsage();
    await compactingCollection()();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const after = process.memoryUsage();
    const mib = (bytes: number): string => (bytes / 1048576).toFixed(1);
    process.stdout.write(`idle collection after ${pods} pods: RSS ${mib(before.rss)} -> ${mib(after.rss)} MiB (at start ${mib(rssAtStart)}), heap used ${mib(before.heapUsed)} -> ${mib(after.heapUsed)} MiB\n`);
  } finally {
    await runtime.close();
    await rm(stateDir, { recursive: true, force: true });
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : Math.round(((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2);
};

const pods = option('--pods', 5000);
const child = process.argv.indexOf('--variant');
if (process.argv.includes('--idle-collection')) {
  await idleCollection(pods);
} else if (child >= 0) {
  process.stdout.write(`${JSON.stringify(await measure(process.argv[child + 1] ?? '', pods))}\n`);
} else {
  const rounds = option('--rounds', 2);
  const names = Object.keys(VARIANTS);
  const order = Array.from({ length: rounds }, (_, r) => (r % 2 === 0 ? names : [...names].reverse())).flat();
  const results = new Map<string, { heap: number[]; rss: number[] }>();
  for (const variant of order) {
    const script = fileURLToPath(import.meta.url);
    const run = await runProcess(process.execPath, ['--expose-gc', script, '--variant', variant, '--pods', String(pods)], { killAfterMs: 600_000 });
    if (run.code !== 0) throw new Error(`${variant}: exit ${String(run.code)}\n${run.stderr}`);
    const line = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as { heapPerPod: number; rssPerPod: number };
    process.stdout.write(`${variant}: heap ${line.heapPerPod} B per live pod, RSS ${line.rssPerPod} B\n`);
    const entry = results.get(variant) ?? { heap: [], rss: [] };
    entry.heap.push(line.heapPerPod);
    entry.rss.push(line.rssPerPod);
    results.set(variant, entry);
  }
  const measured = median(results.get('measured')?.heap ?? [0]);
  for (const [variant, { heap, rss }] of results) {
    const h = median(heap);
    process.stdout.write(`median ${variant}: heap ${h} B per live pod (${((h / measured - 1) * 100).toFixed(1)} % against measured), RSS ${median(rss)} B\n`);
  }
}
