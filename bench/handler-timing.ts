/**
 * Where a lifecycle RPC's time goes: the same pod lifecycle as `npm run bench` at concurrency 1,
 * timed by the client (what the bench reports) and inside the runtime's CRI server, from the
 * handler being called to its answer (what the runtime itself adds, without gRPC, HTTP/2, the
 * socket and the scheduling around them); and, for every call slower than --tail-ms, its cause:
 * a garbage collection pause in the server or in the client, the handler, or none of these.
 *
 *   node dist/bench/handler-timing.js [--target runtime|floor] [--scenario gmsa|plain] [--pods 1000]
 *       [--warmup 300] [--tail-ms 1.5] [--out FILE]
 *
 * The server runs in a child process (its own event loop, as in the bench): the project's
 * NodeRuntime and CriServer with an observer that keeps every handler's span, or the bench's
 * no-op floor server (no handler spans) driven by the same client. The client runs with the load
 * generator's V8 flags (load-generator.ts; the script starts itself again with them), the child
 * with Node's defaults.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createCriClient } from '../src/cri/proto.js';
import { tuneJitForRequestHandlers } from '../src/tuning/jit.js';
import { CriServer } from '../src/cri/server.js';
import { NodeRuntime } from '../src/runtime/node-runtime.js';
import { NODE_FLAGS } from '../src/tuning/node-flags.js';
import { measureFileCreates } from './disk.js';
import { startFloorServer } from './floor-server.js';
import { recordPromotion, type Promotion } from './gc-promotion.js';
import { dropOutputWhenReaderLeaves } from './closed-stdout.js';
import { asLoadGenerator } from './load-generator.js';
import { summarize, LatencyRecorder, type LatencySummary } from './stats.js';
import {
  absoluteNow,
  attributeTail,
  recordGcPauses,
  summarizeGc,
  TAIL_CAUSES,
  type CallSpan,
  type GcPause,
  type TailCounts,
  type TimedSpan,
} from './tail-attribution.js';
import { LIFECYCLE_RPCS, podLifecycle, pullBenchImage } from './workload.js';

type Target = 'runtime' | 'floor';
type ToChild = { kind: 'reset' } | { kind: 'report' };
type ServerReport = { handlers: Record<string, TimedSpan[]>; gc: GcPause[]; promotion: Promotion };
type ToParent = { kind: 'ready' } | ({ kind: 'report' } & ServerReport) | { kind: 'error'; message: string };

const CALL = { timeoutMs: 15000 };
/** The whole run is bounded: a child that does not answer in this time is killed. */
const CHILD_TIMEOUT_MS = 15_000;

/**
 * One method's handler spans, as numbers in typed arrays: an object per span would itself outlive
 * the server's scavenges (it is kept for the report) and add to the promotion being measured.
 */
class SpanLog {
  private ends: Float64Array = new Float64Array(1024);
  private durations: Float64Array = new Float64Array(1024);
  private count = 0;

  add(end: number, durationMs: number): void {
    if (this.count === this.ends.length) {
      const grow = (a: Float64Array): Float64Array => {
        const next = new Float64Array(a.length * 2);
        next.set(a);
        return next;
      };
      this.ends = grow(this.ends);
      this.durations = grow(this.durations);
    }
    this.ends[this.count] = end;
    this.durations[this.count] = durationMs;
    this.count++;
  }

  spans(): TimedSpan[] {
    const out: TimedSpan[] = [];
    for (let i = 0; i < this.count; i++) out.push({ start: (this.ends[i] as number) - (this.durations[i] as number), end: this.ends[i] as number });
    return out;
  }
}

/** Child side: the server, keeping every handler's span (the runtime's), its own GC pauses and promotion. */
async function serve(target: Target, socketPath: string, stateDir: string): Promise<void> {
  const handlers = new Map<string, SpanLog>();
  let gc = recordGcPauses();
  let promotion = recordPromotion();
  let close: () => Promise<void>;
  if (target === 'floor') {
    const floor = await startFloorServer(socketPath);
    close = () => floor.close();
  } else {
    // As `cri-winsim runtime` does (src/commands/runtime.ts).
    tuneJitForRequestHandlers();
    const runtime = await NodeRuntime.open({ stateDir });
    const server = new CriServer({
      runtime,
      observer: {
        onCall(method, durationSeconds) {
          const end = absoluteNow();
          let log = handlers.get(method);
          if (log === undefined) handlers.set(method, (log = new SpanLog()));
          log.add(end, durationSeconds * 1000);
        },
      },
    });
    await server.listen(`unix://${socketPath}`);
    close = () => server.close().then(() => runtime.close());
  }
  const send = (m: ToParent): void => void process.send?.(m);
  process.on('message', (m: ToChild) => {
    if (m.kind === 'reset') {
      handlers.clear();
      gc.stop();
      gc = recordGcPauses();
      promotion.stop();
      promotion = recordPromotion();
    } else {
      const promoted = promotion.stop();
      send({ kind: 'report', handlers: Object.fromEntries([...handlers].map(([method, log]) => [method, log.spans()])), gc: gc.pauses, promotion: promoted });
    }
  });
  process.once('disconnect', () => {
    gc.stop();
    void close().finally(() => process.exit(0));
  });
  send({ kind: 'ready' });
}

/** The bench's recorder, also keeping each call's span on the absolute clock. */
class SpanRecorder extends LatencyRecorder {
  readonly calls: CallSpan[] = [];

  override async time<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const start = absoluteNow();
    try {
      return await fn();
    } finally {
      const end = absoluteNow();
      this.calls.push({ operation, start, end });
      this.record(operation, end - start);
    }
  }
}

async function main(): Promise<void> {
  dropOutputWhenReaderLeaves();
  const { values } = parseArgs({
    options: {
      target: { type: 'string', default: 'runtime' },
      scenario: { type: 'string', default: 'gmsa' },
      pods: { type: 'string', default: '1000' },
      warmup: { type: 'string', default: '300' },
      'tail-ms': { type: 'string', default: '1.5' },
      out: { type: 'string' },
    },
  });
  const pods = Number(values.pods);
  const warmup = Number(values.warmup);
  const tailMs = Number(values['tail-ms']);
  if (values.target !== 'runtime' && values.target !== 'floor') throw new Error(`--target must be runtime or floor, not "${values.target}"`);
  const target: Target = values.target;
  if (!['gmsa', 'plain'].includes(values.scenario)) throw new Error(`--scenario must be gmsa or plain, not "${values.scenario}"`);
  if (!Number.isInteger(pods) || pods < 1 || pods > 100_000) throw new Error(`--pods must be an integer from 1 to 100000, not "${values.pods}"`);
  if (!Number.isInteger(warmup) || warmup < 0 || warmup > 100_000) throw new Error(`--warmup must be an integer from 0 to 100000, not "${values.warmup}"`);
  if (!(tailMs >= 0 && tailMs <= 60_000)) throw new Error(`--tail-ms must be a number of milliseconds from 0 to 60000, not "${values['tail-ms']}"`);
  const gmsa = values.scenario === 'gmsa';
  // As in the bench: the client's collector must not take a core from the server (load-generator.ts).
  if (!(await asLoadGenerator())) return;

  const dir = mkdtempSync(join(tmpdir(), 'cri-winsim-handler-timing-'));
  const socketPath = join(dir, 'cri.sock');
  const child = fork(fileURLToPath(import.meta.url), ['--serve', target, socketPath, join(dir, 'state')], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // The server, runtime or floor, starts as the `cri-winsim` command does (src/tuning/node-flags.ts).
    execArgv: [...NODE_FLAGS],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const next = <K extends ToParent['kind']>(kind: K): Promise<Extract<ToParent, { kind: K }>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${target} child sent no ${kind} within ${CHILD_TIMEOUT_MS} ms`)), CHILD_TIMEOUT_MS);
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
    const clientGc = recordGcPauses();
    const clientPromotion = recordPromotion();
    const recorder = new SpanRecorder();
    for (let i = 0; i < pods; i++) await podLifecycle(cri, recorder, { name: `pod-${i}`, gmsa, logRoot }, image, CALL);
    clientGc.stop();
    const clientPromoted = clientPromotion.stop();
    child.send({ kind: 'report' } satisfies ToChild);
    const server = await next('report');
    const client = recorder.summaries();
    const handler: Record<string, LatencySummary> = {};
    for (const [rpc, spans] of Object.entries(server.handlers)) handler[rpc] = summarize(spans.map((h) => h.end - h.start));
    const tail = attributeTail(recorder.calls, new Map(Object.entries(server.handlers)), server.gc, clientGc.pauses, tailMs);
    const perPod = (p: Promotion): number => Math.round(p.promotedBytes / pods);
    const gc = {
      server: { ...summarizeGc(server.gc), scavenges: server.promotion.scavenges, promotedBytesPerPod: perPod(server.promotion) },
      client: { ...summarizeGc(clientGc.pauses), scavenges: clientPromoted.scavenges, promotedBytesPerPod: perPod(clientPromoted) },
    };

    // The disk's speed moves by phases on a VM; the runtime's file-creating calls move with it.
    const disk = measureFileCreates(logRoot, 200);

    const fmt = (n: number | undefined): string => (n === undefined ? '-' : n.toFixed(3)).padStart(8);
    const counts = (over: number, c: TailCounts): string => [over, ...TAIL_CAUSES.map((k) => c[k])].map((n) => `${n}`.padStart(9)).join('');
    const out = (line: string): void => void process.stdout.write(`${line}\n`);
    out(`${values.scenario} lifecycle against the ${target}, ${pods} pods at concurrency 1 after ${warmup} warm-up pods (ms)`);
    out(
      `${'RPC'.padEnd(18)}${'client p50'.padStart(11)}${'p99'.padStart(9)}${'handler p50'.padStart(12)}${'p99'.padStart(9)}  |` +
        `${`>${tailMs} ms`.padStart(9)}${TAIL_CAUSES.map((k) => k.padStart(9)).join('')}`,
    );
    for (const rpc of LIFECYCLE_RPCS) {
      const t = tail.perOperation[rpc] ?? { over: 0, serverGc: 0, clientGc: 0, handler: 0, other: 0 };
      out(`${rpc.padEnd(18)}   ${fmt(client[rpc]?.p50)} ${fmt(client[rpc]?.p99)}    ${fmt(handler[rpc]?.p50)} ${fmt(handler[rpc]?.p99)}  |${counts(t.over, t)}`);
    }
    out(`${'all'.padEnd(56)}|${counts(tail.total, tail.byCause)}`);
    out(
      `GC pauses: server ${gc.server.count} (${gc.server.totalMs} ms in all, longest ${gc.server.maxMs} ms), ` +
        `client ${gc.client.count} (${gc.client.totalMs} ms, longest ${gc.client.maxMs} ms)`,
    );
    out(`Promoted by scavenges, bytes per pod: server ${gc.server.promotedBytesPerPod}, client ${gc.client.promotedBytesPerPod}`);
    out(`Disk: creating a file in the pod log root, p50 ${disk.p50.toFixed(3)} p99 ${disk.p99.toFixed(3)} ms (after the run)`);
    if (values.out !== undefined) {
      writeFileSync(values.out, `${JSON.stringify({ target, scenario: values.scenario, pods, warmup, client, handler, tail, gc, disk }, null, 2)}\n`);
      out(`wrote ${values.out}`);
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
const run = argv[0] === '--serve' ? serve(argv[1] as Target, argv[2] as string, argv[3] as string) : main();
run.catch((err: unknown) => {
  process.stderr.write(`handler-timing: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
  if (argv[0] === '--serve') void process.send?.({ kind: 'error', message: err instanceof Error ? err.message : String(err) } satisfies ToParent);
});
