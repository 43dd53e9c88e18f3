/**
 * Where a lifecycle RPC's time goes: the same pod lifecycle as `npm run bench` at concurrency 1,
 * timed by the client (what the bench reports) and inside the runtime's CRI server, from the
 * handler being called to its answer (what the runtime itself adds, without gRPC, HTTP/2, the
 * socket and the scheduling around them).
 *
 *   node dist/bench/handler-timing.js [--scenario gmsa|plain] [--pods 1000] [--warmup 300] [--out FILE]
 *
 * The runtime runs in a child process (its own event loop, as in the bench) built from the
 * project's NodeRuntime and CriServer with an observer that keeps every handler's duration.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createCriClient } from '../src/cri/proto.js';
import { CriServer } from '../src/cri/server.js';
import { NodeRuntime } from '../src/runtime/node-runtime.js';
import { summarize, LatencyRecorder, type LatencySummary } from './stats.js';
import { LIFECYCLE_RPCS, podLifecycle, pullBenchImage } from './workload.js';

type ToChild = { kind: 'reset' } | { kind: 'report' };
type ToParent = { kind: 'ready' } | { kind: 'report'; summaries: Record<string, LatencySummary> } | { kind: 'error'; message: string };

const CALL = { timeoutMs: 15000 };
/** The whole run is bounded: a child that does not answer in this time is killed. */
const CHILD_TIMEOUT_MS = 15_000;

/** Child side: the runtime with a CRI server whose observer keeps every handler's duration. */
async function serve(socketPath: string, stateDir: string): Promise<void> {
  const samples = new Map<string, number[]>();
  const runtime = await NodeRuntime.open({ stateDir });
  const server = new CriServer({
    runtime,
    observer: {
      onCall(method, durationSeconds) {
        let list = samples.get(method);
        if (list === undefined) samples.set(method, (list = []));
        list.push(durationSeconds * 1000);
      },
    },
  });
  await server.listen(`unix://${socketPath}`);
  const send = (m: ToParent): void => void process.send?.(m);
  process.on('message', (m: ToChild) => {
    if (m.kind === 'reset') samples.clear();
    else send({ kind: 'report', summaries: Object.fromEntries([...samples].map(([k, v]) => [k, summarize(v)])) });
  });
  process.once('disconnect', () => {
    void server.close().then(() => runtime.close()).finally(() => process.exit(0));
  });
  send({ kind: 'ready' });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', default: 'gmsa' },
      pods: { type: 'string', default: '1000' },
      warmup: { type: 'string', default: '300' },
      out: { type: 'string' },
    },
  });
  const pods = Number(values.pods);
  const warmup = Number(values.warmup);
  if (!['gmsa', 'plain'].includes(values.scenario)) throw new Error(`--scenario must be gmsa or plain, not "${values.scenario}"`);
  if (!Number.isInteger(pods) || pods < 1 || pods > 100_000) throw new Error(`--pods must be an integer from 1 to 100000, not "${values.pods}"`);
  if (!Number.isInteger(warmup) || warmup < 0 || warmup > 100_000) throw new Error(`--warmup must be an integer from 0 to 100000, not "${values.warmup}"`);
  const gmsa = values.scenario === 'gmsa';

  const dir = mkdtempSync(join(tmpdir(), 'cri-winsim-handler-timing-'));
  const socketPath = join(dir, 'cri.sock');
  const child = fork(fileURLToPath(import.meta.url), ['--serve', socketPath, join(dir, 'state')], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const next = <K extends ToParent['kind']>(kind: K): Promise<Extract<ToParent, { kind: K }>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the runtime child sent no ${kind} within ${CHILD_TIMEOUT_MS} ms`)), CHILD_TIMEOUT_MS);
      const onMessage = (m: ToParent): void => {
        if (m.kind === 'error') reject(new Error(m.message));
        if (m.kind !== kind) return;
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve(m as Extract<ToParent, { kind: K }>);
      };
      child.on('message', onMessage);
    });
  const cri = createCriClient(`unix://${socketPath}`);
  try {
    await next('ready');
    const image = await pullBenchImage(cri, CALL);
    const logRoot = join(dir, 'pod-logs');
    for (let i = 0; i < warmup; i++) await podLifecycle(cri, new LatencyRecorder(), { name: `warmup-${i}`, gmsa, logRoot }, image, CALL);
    child.send({ kind: 'reset' } satisfies ToChild);
    const recorder = new LatencyRecorder();
    for (let i = 0; i < pods; i++) await podLifecycle(cri, recorder, { name: `pod-${i}`, gmsa, logRoot }, image, CALL);
    child.send({ kind: 'report' } satisfies ToChild);
    const server = (await next('report')).summaries;
    const client = recorder.summaries();
    const fmt = (n: number | undefined): string => (n === undefined ? '-' : n.toFixed(3)).padStart(8);
    process.stdout.write(`${values.scenario} lifecycle, ${pods} pods at concurrency 1 after ${warmup} warm-up pods (ms)\n`);
    process.stdout.write(`${'RPC'.padEnd(18)}${'client p50'.padStart(11)}${'p99'.padStart(9)}${'handler p50'.padStart(12)}${'p99'.padStart(9)}\n`);
    for (const rpc of LIFECYCLE_RPCS) {
      process.stdout.write(`${rpc.padEnd(18)}   ${fmt(client[rpc]?.p50)} ${fmt(client[rpc]?.p99)}    ${fmt(server[rpc]?.p50)} ${fmt(server[rpc]?.p99)}\n`);
    }
    if (values.out !== undefined) {
      writeFileSync(values.out, `${JSON.stringify({ scenario: values.scenario, pods, warmup, client, handler: server }, null, 2)}\n`);
      process.stdout.write(`wrote ${values.out}\n`);
    }
  } finally {
    cri.close();
    child.disconnect();
    const killer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
    await exited;
    clearTimeout(killer);
    rmSync(dir, { recursive: true, force: true });
  }
}

const argv = process.argv.slice(2);
const run = argv[0] === '--serve' ? serve(argv[1] as string, argv[2] as string) : main();
run.catch((err: unknown) => {
  process.stderr.write(`handler-timing: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
  if (argv[0] === '--serve') void process.send?.({ kind: 'error', message: err instanceof Error ? err.message : String(err) } satisfies ToParent);
});
