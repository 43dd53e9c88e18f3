/**
 * `npm run bench:nodes`: node mode at scale against a real API server, and kwok with the same
 * workload on the same control plane for comparison.
 *
 * The control plane is the test harness's (etcd, kube-apiserver, kube-controller-manager, kube-scheduler on loopback; the figures below were measured before the controller manager joined it). Two
 * runs, one after the other, each on a clean set of nodes:
 *
 *   1. `cri-winsim node --nodes N` as a child process (N simulated Windows nodes, each with its
 *      runtime, CRI socket and kubelet server);
 *   2. kwok (`--manage-nodes-with-annotation-selector`) with N Node objects created here the way
 *      kwok's documentation creates them; kwok simulates the pods with its default stages.
 *
 * In each run: the nodes register (time and RSS of the node process per node), then P pods are
 * created at R pods/s (scheduled by kube-scheduler), and a watch sees each one Running
 * (latency: the create request's start → the watch event with phase Running). Meanwhile a watch
 * on kube-node-lease records every renewal of every node's Lease: the largest gap between two
 * renewals (and from the last renewal to the end) per node says whether a lease could have lapsed
 * (node-lifecycle marks a node unreachable once its lease is older than 40 s).
 *
 * `--nodes 1000,5000` runs both simulators at each size in turn, on the same control plane, and
 * prints one table; `--rate max` creates the pods as fast as the API server takes them (a bounded
 * number of creates in flight); `--busy-core` keeps one core busy with a spinning process during
 * the pod workload (the issue's start-up target is set with one core busy with something else).
 *
 * With --soak-minutes, cri-winsim alone runs a pod churn for that long instead (node-soak.ts).
 *
 *   node dist/bench/node-scale.js [--nodes 1000[,5000]] [--pods 10000] [--rate 20|max] [--busy-core]
 *                                 [--skip-kwok] [--cpu-prof DIR] [--soak-minutes M] [--out FILE]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ApiClient } from '../src/kubelet/node/api-client.js';
import { NODE_FLAGS } from '../src/tuning/node-flags.js';
import { startControlPlane, type ControlPlane } from '../test/support/control-plane.js';
import { toolsBinDir } from '../test/support/paths.js';
import { cpuSecondsOf, log, percentile, rssOf } from './node-figures.js';
import { soak, type SoakResult } from './node-soak.js';

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const KWOK = join(toolsBinDir, 'kwok');
/** Where a run's pods live (deleted with grace 0 after each run). */
const NAMESPACE = 'default';
const LEASE_DURATION_S = 40;
/** Creates in flight with `--rate max`. */
const MAX_RATE_IN_FLIGHT = 32;

const USAGE = `node dist/bench/node-scale.js [options]
  --nodes N[,N…]     simulated nodes per run (default 1000); a list runs both simulators at each size
  --pods P           pods per run (default 10000)
  --rate R|max       pods created per second (default 20); max: as fast as the API server takes
                     them, ${MAX_RATE_IN_FLIGHT} creates in flight
  --busy-core        a process spinning on one core during the pod workload
  --settle S         seconds to keep watching leases after the last pod is Running (default 30)
  --max-minutes M    bound of each run (default 25): whatever is not Running by then is reported
  --skip-kwok        run cri-winsim only
  --skip-ours        run kwok only
  --cpu-prof DIR     run the node process with --cpu-prof into DIR
  --node-args "…"    extra arguments of cri-winsim node (e.g. "--kube-api-qps 5")
  --soak-minutes M   a soak of cri-winsim alone instead (kwok is not run): pods created at --rate
                     up to --pods live ones, then each new one with the deletion of the oldest, for
                     M minutes; then all deleted. Reports pods never Running or never gone, kubelet
                     events missing, RSS and descriptors over time and after the drain, lease gaps
                     (bench/node-soak.ts). The issue's: --nodes 1000 --pods 10000 --soak-minutes 30
  --sample-every S   soak: seconds between samples of the node process (default 30)
  --out FILE         JSON results (default bench/results/node-scale.json, with --soak-minutes
                     bench/results/node-soak.json)`;

interface Options {
  /** Node counts: each one a run of each simulator. */
  sizes: number[];
  pods: number;
  /** Pods created per second; Infinity: as fast as the API server takes them. */
  rate: number;
  busyCore: boolean;
  settleS: number;
  maxMinutes: number;
  kwok: boolean;
  ours: boolean;
  cpuProf?: string;
  nodeArgs: string[];
  soakMinutes?: number;
  sampleEveryS: number;
  out: string;
}

/** One run's options: one size. */
type RunOptions = Omit<Options, 'sizes'> & { nodes: number };

function options(): Options {
  const { values } = parseArgs({
    options: {
      nodes: { type: 'string', default: '1000' },
      pods: { type: 'string', default: '10000' },
      rate: { type: 'string', default: '20' },
      settle: { type: 'string', default: '30' },
      'max-minutes': { type: 'string', default: '25' },
      'busy-core': { type: 'boolean', default: false },
      'skip-kwok': { type: 'boolean', default: false },
      'skip-ours': { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      'node-args': { type: 'string', default: '' },
      'soak-minutes': { type: 'string' },
      'sample-every': { type: 'string', default: '30' },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const positive = (flag: string, v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${flag}: ${JSON.stringify(v)} is not a positive number`);
    return n;
  };
  const soakMinutes = values['soak-minutes'] === undefined ? undefined : positive('soak-minutes', values['soak-minutes']);
  if (soakMinutes !== undefined && values['skip-ours']) throw new Error('--soak-minutes soaks cri-winsim: it cannot be given with --skip-ours');
  const sizes = values.nodes.split(',').map((n) => Math.floor(positive('nodes', n)));
  if (soakMinutes !== undefined && sizes.length > 1) throw new Error('--soak-minutes soaks one size: give --nodes one number');
  return {
    sizes,
    pods: Math.floor(positive('pods', values.pods)),
    rate: values.rate === 'max' ? Infinity : positive('rate', values.rate),
    busyCore: values['busy-core'],
    settleS: positive('settle', values.settle),
    maxMinutes: positive('max-minutes', values['max-minutes']),
    kwok: !values['skip-kwok'] && soakMinutes === undefined,
    ours: !values['skip-ours'],
    ...(values['cpu-prof'] === undefined ? {} : { cpuProf: resolve(values['cpu-prof']) }),
    nodeArgs: values['node-args'].split(/\s+/).filter((a) => a !== ''),
    ...(soakMinutes === undefined ? {} : { soakMinutes }),
    sampleEveryS: positive('sample-every', values['sample-every']),
    out: resolve(values.out ?? join(PACKAGE_ROOT, 'bench', 'results', soakMinutes === undefined ? 'node-scale.json' : 'node-soak.json')),
  };
}

/** Every renewal of every Lease in kube-node-lease whose name is one of `names`. */
class LeaseWatch {
  private readonly last = new Map<string, number>();
  private readonly maxGap = new Map<string, number>();
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  renewals = 0;

  constructor(
    private readonly api: ApiClient,
    private readonly names: ReadonlySet<string>,
  ) {}

  start(): void {
    this.running = this.loop();
  }

  private note(lease: { metadata?: { name?: string }; spec?: { renewTime?: string } }): void {
    const name = lease.metadata?.name ?? '';
    if (!this.names.has(name) || lease.spec?.renewTime === undefined) return;
    const at = Date.parse(lease.spec.renewTime);
    const previous = this.last.get(name);
    if (previous !== undefined && at > previous) {
      this.maxGap.set(name, Math.max(this.maxGap.get(name) ?? 0, at - previous));
    }
    if (previous === undefined || at > previous) {
      this.last.set(name, at);
      this.renewals++;
    }
  }

  private async loop(): Promise<void> {
    let rv = '';
    while (!this.abort.signal.aborted) {
      try {
        if (rv === '') {
          const list = await this.api.get<{ metadata: { resourceVersion: string }; items: object[] }>('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases');
          for (const l of list.items) this.note(l);
          rv = list.metadata.resourceVersion;
        }
        await this.api.watch<{ metadata?: { name?: string; resourceVersion?: string }; spec?: { renewTime?: string } }>(
          `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=600`,
          (event) => {
            if (event.type === 'ERROR') {
              rv = '';
              return;
            }
            rv = event.object.metadata?.resourceVersion ?? rv;
            if (event.type !== 'BOOKMARK') this.note(event.object);
          },
          this.abort.signal,
        );
      } catch (err) {
        if (this.abort.signal.aborted) return;
        log(`lease watch: ${(err as Error).message}; again`);
        rv = '';
        await sleep(500);
      }
    }
  }

  /** Stops, and closes each node's record with the gap from its last renewal to now. */
  async stop(): Promise<{ nodesRenewing: number; renewals: number; maxGapS: number; p99NodeMaxGapS: number; lapsed: number; neverRenewed: number }> {
    this.abort.abort();
    await this.running;
    const now = Date.now();
    const perNode: number[] = [];
    let never = 0;
    for (const name of this.names) {
      const last = this.last.get(name);
      if (last === undefined) {
        never++;
        continue;
      }
      perNode.push(Math.max(this.maxGap.get(name) ?? 0, now - last) / 1000);
    }
    perNode.sort((a, b) => a - b);
    return {
      nodesRenewing: perNode.length,
      renewals: this.renewals,
      maxGapS: perNode.length === 0 ? NaN : perNode[perNode.length - 1]!,
      p99NodeMaxGapS: percentile(perNode, 99),
      lapsed: perNode.filter((g) => g > LEASE_DURATION_S).length,
      neverRenewed: never,
    };
  }
}

interface PodWorkload {
  created: number;
  /** First create → the last create answered, and the creates per second over it. */
  createdS: number;
  createdPerSecond: number;
  createErrors: number;
  running: number;
  /** First create → last pod seen Running. */
  spanS: number;
  runningPerSecond: number;
  latencyS: { p50: number; p90: number; p99: number; max: number };
  /** Pods whose node was not one of the run's. */
  misplaced: number;
  /** p99 start-up latency of each slice of a thousand pods, in creation order (a backlog shows here). */
  p99ByThousandS: number[];
}

/** Creates `count` pods at `rate`/s and waits (bounded) for each to be seen Running through a watch. */
async function podWorkload(api: ApiClient, run: string, count: number, rate: number, template: (name: string) => object, nodes: ReadonlySet<string>, deadline: number): Promise<PodWorkload> {
  const sentAt = new Map<string, number>();
  const runningAt = new Map<string, number>();
  let misplaced = 0;
  const abort = new AbortController();
  // The watch starts from the (empty) list of this run's pods, before the first create.
  const selector = `labelSelector=${encodeURIComponent(`bench-run=${run}`)}`;
  const list = await api.get<{ metadata: { resourceVersion: string } }>(`/api/v1/namespaces/${NAMESPACE}/pods?${selector}&limit=1`);
  let rv = list.metadata.resourceVersion;
  const watching = (async () => {
    while (!abort.signal.aborted) {
      try {
        await api.watch<{ metadata?: { name?: string; resourceVersion?: string }; spec?: { nodeName?: string }; status?: { phase?: string } }>(
          `/api/v1/namespaces/${NAMESPACE}/pods?watch=1&${selector}&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=900`,
          (event) => {
            rv = event.object.metadata?.resourceVersion ?? rv;
            if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return;
            const name = event.object.metadata?.name ?? '';
            if (event.object.status?.phase !== 'Running' || runningAt.has(name)) return;
            runningAt.set(name, Date.now());
            if (!nodes.has(event.object.spec?.nodeName ?? '')) misplaced++;
          },
          abort.signal,
        );
      } catch (err) {
        if (abort.signal.aborted) return;
        log(`pod watch: ${(err as Error).message}; again`);
        await sleep(200);
      }
    }
  })();
  let createErrors = 0;
  const start = Date.now();
  const creates: Promise<void>[] = [];
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; i < count && Date.now() < deadline; i++) {
    if (Number.isFinite(rate)) {
      const due = start + (i * 1000) / rate;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
    } else if (inFlight.size >= MAX_RATE_IN_FLIGHT) {
      await Promise.race(inFlight);
    }
    const name = `${run}-${i}`;
    sentAt.set(name, Date.now());
    const create: Promise<void> = api.request('POST', `/api/v1/namespaces/${NAMESPACE}/pods`, template(name)).then(
      () => undefined,
      (err: unknown) => {
        createErrors++;
        sentAt.delete(name);
        if (createErrors <= 5) log(`create ${name}: ${(err as Error).message}`);
      },
    ).finally(() => inFlight.delete(create));
    inFlight.add(create);
    creates.push(create);
    if (i > 0 && i % 1000 === 0) log(`${i} pods created, ${runningAt.size} Running`);
  }
  await Promise.all(creates);
  const createdAt = Date.now();
  const expected = sentAt.size;
  if (runningAt.size < expected) {
    log(`all ${expected} pods created; waiting for them to be Running (${runningAt.size} so far)`);
    const progress = setInterval(() => log(`${runningAt.size}/${expected} Running`), 15_000);
    // Polled (no timer left waiting for the deadline keeps the process alive afterwards).
    while (runningAt.size < expected && Date.now() < deadline) await sleep(200);
    clearInterval(progress);
  }
  abort.abort();
  await watching;
  const latencies = [...runningAt].map(([name, at]) => (at - (sentAt.get(name) ?? at)) / 1000).sort((a, b) => a - b);
  const last = Math.max(...runningAt.values());
  const p99ByThousandS: number[] = [];
  for (let from = 0; from < count; from += 1000) {
    const slice: number[] = [];
    for (let i = from; i < Math.min(count, from + 1000); i++) {
      const at = runningAt.get(`${run}-${i}`);
      const sent = sentAt.get(`${run}-${i}`);
      if (at !== undefined && sent !== undefined) slice.push((at - sent) / 1000);
    }
    p99ByThousandS.push(percentile(slice.sort((a, b) => a - b), 99));
  }
  const spanS = (last - start) / 1000;
  const createdS = (createdAt - start) / 1000;
  return {
    created: expected,
    createdS,
    createdPerSecond: expected / createdS,
    createErrors,
    running: runningAt.size,
    spanS,
    runningPerSecond: runningAt.size / spanS,
    latencyS: { p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: latencies[latencies.length - 1] ?? NaN },
    misplaced,
    p99ByThousandS,
  };
}

/** apiserver_request_total by `VERB resource[/subresource]`, from the API server's /metrics. */
async function requestCounts(api: ApiClient): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let text: string;
  try {
    text = await api.requestText('/metrics');
  } catch (err) {
    log(`metrics: ${(err as Error).message}`);
    return counts;
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const label = (name: string): string => new RegExp(`[{,]${name}="([^"]*)"`).exec(line)?.[1] ?? '';
    const key = `${label('verb')} ${label('resource')}${label('subresource') === '' ? '' : `/${label('subresource')}`}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** What the API server served during a run, by verb and resource, largest first (the bench's own requests included). */
function requestDelta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const delta: [string, number][] = [];
  for (const [key, n] of after) {
    const d = n - (before.get(key) ?? 0);
    if (d > 0) delta.push([key, d]);
  }
  return Object.fromEntries(delta.sort((a, b) => b[1] - a[1]).slice(0, 15));
}

interface RunResult {
  simulator: 'cri-winsim' | 'kwok';
  nodes: number;
  registerS: number;
  rssIdleBytes: number;
  rssPerNodeBytes: number;
  rssLoadedBytes?: number;
  rssPerPodBytes?: number;
  /** CPU time of the process at the end, and when its nodes had been Ready and idle 5 s. */
  cpuSeconds: number;
  cpuSecondsAtIdle: number;
  /** cpuSeconds over the pods Running (start-up included), and the same from the idle point on. */
  cpuPerRunningPodMs?: number;
  cpuPerRunningPodAfterReadyMs?: number;
  pods?: PodWorkload;
  /** `--soak-minutes`: the soak's figures instead of `pods`. */
  soak?: SoakResult;
  leases: Awaited<ReturnType<LeaseWatch['stop']>>;
  apiRequests: Record<string, number>;
  loadAverage: { start: number[]; end: number[] };
}

/** Waits until `count` Nodes matching `selector` are Ready; returns when (or throws at the deadline). */
async function nodesReady(api: ApiClient, selector: string, count: number, deadline: number, child: ChildProcess, lines: readonly string[]): Promise<void> {
  for (;;) {
    // A simulator that died while its nodes came up (EMFILE, out of memory) is reported, not waited for.
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the simulator exited (${child.exitCode ?? child.signalCode}) before its nodes were Ready:\n${lines.slice(-20).join('\n')}`);
    const list = await api.get<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>(`/api/v1/nodes?labelSelector=${encodeURIComponent(selector)}`);
    const ready = list.items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
    if (ready >= count) return;
    if (Date.now() > deadline) throw new Error(`${ready}/${count} nodes Ready at the deadline`);
    await sleep(1000);
  }
}

async function cleanUp(api: ApiClient, nodeSelector: string): Promise<void> {
  // Grace 0: the pods leave etcd at once (their nodes are gone; nothing would finish a graceful
  // deletion). Ten thousand take longer than one request's 30 s: again until none is left.
  const until = Date.now() + 5 * 60_000;
  for (;;) {
    try {
      await api.request('DELETE', `/api/v1/namespaces/${NAMESPACE}/pods`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 });
    } catch (err) {
      log(`deleting the pods: ${(err as Error).message}; again`);
    }
    const left = await api.get<{ items: unknown[] }>(`/api/v1/namespaces/${NAMESPACE}/pods?limit=1`);
    if (left.items.length === 0 || Date.now() > until) break;
  }
  await api.request('DELETE', `/api/v1/nodes?labelSelector=${encodeURIComponent(nodeSelector)}`);
  await api.request('DELETE', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases');
}

function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Starts a child, keeps its last lines, resolves once `ready` matches a line. */
async function spawnUntil(program: string, args: readonly string[], ready: RegExp | undefined, timeoutMs: number, env: NodeJS.ProcessEnv = process.env): Promise<{ child: ChildProcess; lines: string[] }> {
  const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const lines: string[] = [];
  let resolved = ready === undefined;
  await new Promise<void>((resolveReady, reject) => {
    if (resolved) resolveReady();
    const timer = setTimeout(() => reject(new Error(`${program} not ready within ${timeoutMs} ms:\n${lines.slice(-20).join('\n')}`)), timeoutMs);
    child.once('exit', (code, signal) => {
      if (!resolved) reject(new Error(`${program} exited (${code ?? signal}):\n${lines.slice(-20).join('\n')}`));
    });
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
        lines.push(line);
        if (lines.length > 200) lines.shift();
        if (!resolved && ready?.test(line)) {
          resolved = true;
          clearTimeout(timer);
          resolveReady();
        }
      });
    }
  }).catch(async (err: unknown) => {
    await stopChild(child, 2_000);
    throw err;
  });
  return { child, lines };
}

// The Windows pause image (entrypoint /pause.exe: waits for a signal, writes nothing), as kwok's pods run pause.
const pause = { name: 'app', image: 'mcr.microsoft.com/oss/kubernetes/pause:3.10' };

/** What differs between the two runs; runSimulator does the rest the same way for both. */
interface Simulator {
  /** Its name in the report and in the log. */
  name: RunResult['simulator'];
  /** The `bench-run` label of its pods. */
  run: string;
  /** Its Nodes are `<prefix>-1` … `<prefix>-N`. */
  nodePrefix: string;
  /** The label selector of its Nodes. */
  nodeSelector: string;
  /** What the log calls its Nodes. */
  nodesNoun: string;
  /** Starts its process (after the lease watch and the clock have started). */
  start(): Promise<{ child: ChildProcess; lines: string[] }>;
  /** What the log calls its process. */
  processName: string;
  /** How long its process has to stop after SIGTERM. */
  stopGraceMs: number;
  /** Creates the Node objects when the simulator does not register its own. */
  register?(names: ReadonlySet<string>): Promise<void>;
  pod(name: string): object;
}

/**
 * One run: the simulator's process starts, its nodes become Ready, then the pod workload, the
 * settle time and the figures; whatever happens, the process is stopped and its pods, Nodes and
 * Leases are deleted.
 */
/** A process that keeps one core busy until killed (`--busy-core`). */
function busyCore(): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  child.unref();
  return child;
}

async function runSimulator(api: ApiClient, opts: RunOptions, sim: Simulator): Promise<RunResult> {
  const load0 = loadavg();
  const requests0 = await requestCounts(api);
  const names = new Set(Array.from({ length: opts.nodes }, (_, i) => `${sim.nodePrefix}-${i + 1}`));
  const leases = new LeaseWatch(api, names);
  leases.start();
  const deadline = Date.now() + opts.maxMinutes * 60_000;
  const started = Date.now();
  const { child, lines } = await sim.start();
  try {
    await sim.register?.(names);
    await nodesReady(api, sim.nodeSelector, opts.nodes, deadline, child, lines);
    const registerS = (Date.now() - started) / 1000;
    log(`${opts.nodes} ${sim.nodesNoun} Ready after ${registerS.toFixed(1)} s`);
    await sleep(5_000);
    const rssIdle = rssOf(child.pid!);
    const cpuIdle = cpuSecondsOf(child.pid!);
    /** The figures of both kinds of run, taken at the end of the run (the lease watch stops). */
    const endFigures = async () => {
      const leaseFigures = await leases.stop();
      if (child.exitCode !== null) throw new Error(`${sim.processName} exited early:\n${lines.slice(-20).join('\n')}`);
      return {
        simulator: sim.name,
        nodes: opts.nodes,
        registerS,
        rssIdleBytes: rssIdle,
        rssPerNodeBytes: rssIdle / opts.nodes,
        cpuSecondsAtIdle: cpuIdle,
        leases: leaseFigures,
        apiRequests: requestDelta(requests0, await requestCounts(api)),
        loadAverage: { start: load0, end: loadavg() },
      };
    };
    if (opts.soakMinutes !== undefined) {
      const result = await soak(api, {
        minutes: opts.soakMinutes,
        population: opts.pods,
        rate: opts.rate,
        namespace: NAMESPACE,
        run: sim.run,
        template: (name) => sim.pod(name),
        nodes: names,
        pid: child.pid!,
        sampleEveryS: opts.sampleEveryS,
        boundS: Math.max(120, opts.settleS),
      });
      const figures = await endFigures();
      return { ...figures, cpuSeconds: cpuSecondsOf(child.pid!), soak: result };
    }
    const spinner = opts.busyCore ? busyCore() : undefined;
    let pods: PodWorkload;
    try {
      pods = await podWorkload(api, sim.run, opts.pods, opts.rate, (name) => sim.pod(name), names, deadline);
    } finally {
      spinner?.kill('SIGKILL');
    }
    log(`${sim.name}: ${pods.running}/${pods.created} Running, ${pods.runningPerSecond.toFixed(1)}/s, p99 ${pods.latencyS.p99.toFixed(2)} s; settling ${opts.settleS} s`);
    await sleep(opts.settleS * 1000);
    const rssLoaded = rssOf(child.pid!);
    const cpuSeconds = cpuSecondsOf(child.pid!);
    return {
      ...(await endFigures()),
      rssLoadedBytes: rssLoaded,
      rssPerPodBytes: (rssLoaded - rssIdle) / Math.max(1, pods.running),
      cpuSeconds,
      cpuPerRunningPodMs: (1000 * cpuSeconds) / Math.max(1, pods.running),
      cpuPerRunningPodAfterReadyMs: (1000 * (cpuSeconds - cpuIdle)) / Math.max(1, pods.running),
      pods,
    };
  } finally {
    await leases.stop().catch(() => undefined);
    await stopChild(child, sim.stopGraceMs);
    await cleanUp(api, sim.nodeSelector).catch((err: unknown) => log(`clean-up: ${(err as Error).message}`));
  }
}

function runOurs(cp: ControlPlane, api: ApiClient, opts: RunOptions, work: string): Promise<RunResult> {
  const prefix = 'win';
  const nodeFlags = opts.cpuProf === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', opts.cpuProf];
  return runSimulator(api, opts, {
    name: 'cri-winsim',
    run: 'ours',
    nodePrefix: prefix,
    nodeSelector: 'kubernetes.io/os=windows',
    nodesNoun: 'nodes',
    processName: 'cri-winsim node',
    stopGraceMs: 60_000,
    start: () => {
      log(`cri-winsim node --nodes ${opts.nodes}: starting`);
      return spawnUntil(
        process.execPath,
        // The node flags the `cri-winsim` launcher adds (src/tuning/node-flags.ts), as a user's process has them.
        [...nodeFlags, ...NODE_FLAGS, CLI, 'node', '--kubeconfig', cp.adminKubeconfig, '--nodes', String(opts.nodes), '--node-name-prefix', prefix, '--state-dir', join(work, `ours-${opts.nodes}`), '--port', '0', '--log-level', 'warn', ...opts.nodeArgs],
        // The ready line is logged at info; with --log-level warn the bench waits for the Nodes instead.
        undefined,
        60_000,
      );
    },
    pod: (name) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NAMESPACE, labels: { 'bench-run': 'ours' } },
      spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, terminationGracePeriodSeconds: 0, containers: [pause] },
    }),
  });
}

function runKwok(cp: ControlPlane, api: ApiClient, opts: RunOptions, work: string): Promise<RunResult> {
  return runSimulator(api, opts, {
    name: 'kwok',
    run: 'kwok',
    nodePrefix: 'kwok',
    nodeSelector: 'type=kwok',
    nodesNoun: 'kwok nodes',
    processName: 'kwok',
    stopGraceMs: 10_000,
    start: () => {
      const home = join(work, `kwok-home-${opts.nodes}`);
      mkdirSync(home, { recursive: true });
      log(`kwok: starting; creating ${opts.nodes} Nodes`);
      // kwok's own HOME so it reads no ~/.kwok/kwok.yaml; no stages given: its default ones (node-initialize,
      // node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete).
      return spawnUntil(
        KWOK,
        ['--kubeconfig', cp.adminKubeconfig, '--manage-nodes-with-annotation-selector', 'kwok.x-k8s.io/node=fake', '--cidr', '127.20.0.1/16', '--node-ip', '127.0.0.1', '--node-lease-duration-seconds', String(LEASE_DURATION_S)],
        undefined,
        60_000,
        { ...process.env, HOME: home },
      );
    },
    // kwok manages the Nodes it is given; they are created here the way kwok's documentation does.
    register: async (names) => {
      const all = [...names];
      for (let i = 0; i < all.length; i += 20) {
        await Promise.all(all.slice(i, i + 20).map((name) => api.request('POST', '/api/v1/nodes', {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name, annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' }, labels: { type: 'kwok', 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } },
          status: { allocatable: { cpu: '4', memory: '16Gi', pods: '110' }, capacity: { cpu: '4', memory: '16Gi', pods: '110' } },
        })));
      }
    },
    pod: (name) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NAMESPACE, labels: { 'bench-run': 'kwok' } },
      spec: { nodeSelector: { type: 'kwok' }, terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
    }),
  });
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(2)} MiB`;

function table(results: readonly RunResult[]): string {
  const ms = (v: number | undefined): string => (v === undefined ? '–' : `${v.toFixed(1)} ms`);
  const pods = (f: (p: PodWorkload) => string) => (r: RunResult): string => (r.pods === undefined ? '–' : f(r.pods));
  const soaked = (f: (s: SoakResult) => string) => (r: RunResult): string => (r.soak === undefined ? '–' : f(r.soak));
  const rows: [string, (r: RunResult) => string][] = [
    ['nodes Ready after', (r) => `${r.registerS.toFixed(1)} s`],
    ['RSS idle (per node)', (r) => `${mib(r.rssIdleBytes)} (${mib(r.rssPerNodeBytes)})`],
    ['RSS loaded (per pod)', (r) => (r.rssLoadedBytes === undefined ? '–' : `${mib(r.rssLoadedBytes)} (${((r.rssPerPodBytes ?? 0) / 1024).toFixed(1)} KiB)`)],
    ['CPU time of the process (at idle, 5 s after Ready)', (r) => `${r.cpuSeconds.toFixed(1)} s (${r.cpuSecondsAtIdle.toFixed(1)} s)`],
    ['CPU per Running pod: whole run; after Ready', (r) => `${ms(r.cpuPerRunningPodMs)}; ${ms(r.cpuPerRunningPodAfterReadyMs)}`],
    ['pods Running / created', pods((p) => `${p.running} / ${p.created}${p.createErrors > 0 ? ` (${p.createErrors} create errors)` : ''}`)],
    ['pods created per second (all created after)', pods((p) => `${p.createdPerSecond.toFixed(1)} (${p.createdS.toFixed(1)} s)`)],
    ['pods Running per second (all Running after)', pods((p) => `${p.runningPerSecond.toFixed(2)} (${p.spanS.toFixed(1)} s)`)],
    ['start-up p50 / p99 / max', pods((p) => `${p.latencyS.p50.toFixed(2)} / ${p.latencyS.p99.toFixed(2)} / ${p.latencyS.max.toFixed(2)} s`)],
    ['p99 per thousand pods, in creation order', pods((p) => p.p99ByThousandS.map((v) => v.toFixed(1)).join(' '))],
    ['pods on a node not of the run', (r) => String(r.pods?.misplaced ?? r.soak?.misplaced)],
    ['soak: pods created / deleted (errors)', soaked((s) => `${s.created} / ${s.deleted} (${s.createErrors} / ${s.deleteErrors})`)],
    ['soak: lost: never Running / never gone / Started or Killing event missing', soaked((s) => `${s.lost.neverRunning} / ${s.lost.notGone} / ${s.lost.startedEventMissing} / ${s.lost.killingEventMissing}`)],
    ['soak: start-up p50 / p99 / max', soaked((s) => `${s.latencyS.p50.toFixed(2)} / ${s.latencyS.p99.toFixed(2)} / ${s.latencyS.max.toFixed(2)} s`)],
    ['soak: p99 per minute', soaked((s) => s.p99ByMinuteS.map((v) => v.toFixed(1)).join(' '))],
    ['soak: RSS idle → end of churn → after drain; steady slope', soaked((s) => `${mib(s.rss.idleBytes)} → ${mib(s.rss.endOfChurnBytes)} → ${mib(s.rss.afterDrainBytes)}; ${s.rss.steadySlopeMiBPer10Min.toFixed(1)} MiB/10 min`)],
    ['soak: open descriptors idle → end of churn → after drain', soaked((s) => `${s.fds.idle} → ${s.fds.endOfChurn} → ${s.fds.afterDrain}`)],
    ['soak: CPU during the soak', soaked((s) => `${s.cpuSecondsDuringSoak.toFixed(0)} s`)],
    ['lease: max gap (p99 of per-node max)', (r) => `${r.leases.maxGapS.toFixed(1)} s (${r.leases.p99NodeMaxGapS.toFixed(1)} s)`],
    ['lease: nodes lapsed (> 40 s) / never renewed', (r) => `${r.leases.lapsed} / ${r.leases.neverRenewed}`],
    ['load average start → end', (r) => `${r.loadAverage.start[0]!.toFixed(1)} → ${r.loadAverage.end[0]!.toFixed(1)}`],
  ];
  const header = `| | ${results.map((r) => `${r.simulator}, ${r.nodes} nodes`).join(' | ')} |\n|---|${results.map(() => '---').join('|')}|`;
  // Rows that say nothing of these runs (the soak's in a plain run, the pods' in a soak) are left out.
  const lines = rows.map(([label, f]) => [label, results.map(f)] as const).filter(([, cells]) => cells.some((c) => c !== '–'));
  return `${header}\n${lines.map(([label, cells]) => `| ${label} | ${cells.join(' | ')} |`).join('\n')}`;
}

/** What the issue asks of one size, from the two runs at it (kwok's absent with --skip-kwok). */
function targetsOf(ours: RunResult | undefined, kwok: RunResult | undefined, opts: RunOptions): Record<string, unknown> | undefined {
  if (ours === undefined) return undefined;
  const leasesNeverLapse = ours.leases.lapsed === 0 && ours.leases.neverRenewed === 0;
  if (ours.soak !== undefined) {
    const lost = ours.soak.lost;
    return { leasesNeverLapse, nothingLost: lost.neverRunning + lost.notGone + lost.startedEventMissing + lost.killingEventMissing === 0 };
  }
  if (ours.pods === undefined) return undefined;
  return {
    nodes: opts.nodes,
    readyS: ours.registerS,
    readyUnder60s: ours.registerS < 60,
    leasesNeverLapse,
    allPodsRunning: ours.pods.running === opts.pods,
    startupP99S: ours.pods.latencyS.p99,
    startupP99AtMost5s: ours.pods.latencyS.p99 <= 5,
    ...(kwok?.pods === undefined ? {} : {
      readyVsKwok: ours.registerS / kwok.registerS,
      allRunningTimeVsKwok: ours.pods.spanS / kwok.pods.spanS,
      allRunningWithin1_5xKwok: ours.pods.spanS <= 1.5 * kwok.pods.spanS,
      runningPerSecondVsKwok: ours.pods.runningPerSecond / kwok.pods.runningPerSecond,
      memoryPerNodeVsKwok: ours.rssPerNodeBytes / kwok.rssPerNodeBytes,
      cpuPerRunningPodVsKwok: (ours.cpuPerRunningPodMs ?? NaN) / (kwok.cpuPerRunningPodMs ?? NaN),
      cpuPerRunningPodAtMostKwoks: (ours.cpuPerRunningPodMs ?? Infinity) <= (kwok.cpuPerRunningPodMs ?? 0),
    }),
  };
}

async function main(): Promise<void> {
  const opts = options();
  const rate = Number.isFinite(opts.rate) ? `${opts.rate}/s` : `the API server's pace (${MAX_RATE_IN_FLIGHT} in flight)`;
  log(`node-scale: ${opts.sizes.join(' and ')} nodes, ${opts.pods} pods at ${rate}${opts.busyCore ? ', one core kept busy' : ''}${opts.soakMinutes === undefined ? '' : `, a soak of ${opts.soakMinutes} min`}; ${cpus().length} CPUs`);
  const work = await mkdtemp(join(tmpdir(), 'cri-winsim-node-scale-'));
  // No node tokens: both simulators use the admin's kubeconfig.
  const cp = await startControlPlane({ nodeNames: [], name: 'node-scale', apiServerArgs: ['--max-requests-inflight', '800', '--max-mutating-requests-inflight', '400'] });
  const api = await ApiClient.load({ kubeconfig: cp.adminKubeconfig });
  const results: RunResult[] = [];
  const targets: Record<string, unknown>[] = [];
  try {
    for (const nodes of opts.sizes) {
      const run: RunOptions = { ...opts, nodes };
      const ours = opts.ours ? await runOurs(cp, api, run, work) : undefined;
      const kwok = opts.kwok ? await runKwok(cp, api, run, work) : undefined;
      for (const r of [ours, kwok]) if (r !== undefined) results.push(r);
      const t = targetsOf(ours, kwok, run);
      if (t !== undefined) targets.push(t);
    }
  } finally {
    api.close();
    await cp.stop();
    await rm(work, { recursive: true, force: true });
  }
  const report = {
    when: new Date().toISOString(),
    cpus: cpus().length,
    options: { sizes: opts.sizes, pods: opts.pods, rate: Number.isFinite(opts.rate) ? opts.rate : 'max', busyCore: opts.busyCore, nodeArgs: opts.nodeArgs, ...(opts.soakMinutes === undefined ? {} : { soakMinutes: opts.soakMinutes }) },
    results,
    targets,
  };
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, `${JSON.stringify(report, null, 2)}\n`);
  for (const r of results) process.stdout.write(`\n${r.simulator} (${r.nodes} nodes): API requests during the run ${JSON.stringify(r.apiRequests)}`);
  process.stdout.write(`\n\n${table(results)}\n\n${JSON.stringify(targets, null, 2)}\nresults: ${opts.out}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`node-scale: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
