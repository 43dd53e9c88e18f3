/**
 * The node-mode soak of `node dist/bench/node-scale.js --soak-minutes M` (issue 33: "a 30-minute
 * node-mode soak at 1,000 nodes"): with the nodes Ready, pods are created at R pods/s until P
 * live pods (`--pods`), then every new pod comes with the graceful deletion (grace 1 s) of the
 * oldest live one, so the nodes start and finish pods all along for M minutes; then every pod left
 * is deleted the same way and the process is watched until they are gone.
 *
 * What it reports (bench/results/, with the run's other figures):
 * - lost objects: pods created that were never seen Running, pods deleted that never went away
 *   (the kubelet finishes a graceful deletion: it stops the containers, reports the final status
 *   and deletes the pod), and kubelet events missing (each pod's Started, and Killing for each pod
 *   deleted while Running, seen through a watch of the namespace's events from source kubelet);
 * - the node process every `sampleEveryS` seconds: RSS, CPU seconds, open file descriptors, live
 *   pods; the RSS slope over the steady part (from the moment the population is reached) in MiB per
 *   10 minutes; RSS and descriptors once every pod is gone against the idle figures before the
 *   first pod (what stayed behind: a leak, or what a process keeps once it has run pods);
 * - start-up latency per minute of the soak (p99), so a slow drift shows.
 * Lease gaps are the caller's LeaseWatch, over the whole run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from '../src/kubelet/node/api-client.js';
import { cpuSecondsOf, fdCountOf, log, percentile, rssOf } from './node-figures.js';

export interface SoakOptions {
  readonly minutes: number;
  /** Live pods kept once reached (`--pods`). */
  readonly population: number;
  /** Pods created per second (`--rate`); as many deleted once the population is reached. */
  readonly rate: number;
  readonly namespace: string;
  /** The `bench-run` label of the pods. */
  readonly run: string;
  readonly template: (name: string) => object;
  /** The run's node names (a pod elsewhere is counted as misplaced). */
  readonly nodes: ReadonlySet<string>;
  /** The node process. */
  readonly pid: number;
  readonly sampleEveryS: number;
  /** How long, after the churn and after the final deletions, pods may take to be Running or gone. */
  readonly boundS: number;
}

export interface SoakSample {
  readonly atS: number;
  readonly rssBytes: number;
  readonly cpuSeconds: number;
  readonly fds: number;
  readonly livePods: number;
  readonly running: number;
}

export interface SoakResult {
  readonly minutes: number;
  readonly created: number;
  readonly createErrors: number;
  readonly deleted: number;
  readonly deleteErrors: number;
  readonly misplaced: number;
  readonly lost: {
    /** Created, never seen Running. */
    readonly neverRunning: number;
    /** Deleted, still in the API at the end. */
    readonly notGone: number;
    /** Running, no Started event from the kubelet. */
    readonly startedEventMissing: number;
    /** Deleted while Running, no Killing event from the kubelet. */
    readonly killingEventMissing: number;
    /** Up to ten names of each kind, to look at. */
    readonly examples: Record<string, string[]>;
  };
  /** Watches that had to list again (a 410 Gone): their events in between were not seen one by one. */
  readonly relists: number;
  readonly latencyS: { p50: number; p99: number; max: number };
  readonly p99ByMinuteS: number[];
  readonly rss: { idleBytes: number; endOfChurnBytes: number; afterDrainBytes: number; steadySlopeMiBPer10Min: number };
  readonly fds: { idle: number; endOfChurn: number; afterDrain: number };
  readonly cpuSecondsDuringSoak: number;
  readonly samples: SoakSample[];
}

type Obj = { metadata?: { name?: string; resourceVersion?: string }; spec?: { nodeName?: string }; status?: { phase?: string }; involvedObject?: { name?: string }; reason?: string; code?: number };

/**
 * A list then a watch from its resource version, again from the last one seen when a stream ends,
 * and a new list after a 410 Gone (counted). Runs until the signal aborts.
 */
async function follow(api: ApiClient, path: string, selector: string, onObject: (type: string, o: Obj) => void, onRelist: () => void, signal: AbortSignal): Promise<void> {
  let rv = '';
  while (!signal.aborted) {
    try {
      if (rv === '') {
        const list = await api.get<{ metadata: { resourceVersion: string }; items: Obj[] }>(`${path}?${selector}`);
        for (const o of list.items) onObject('ADDED', o);
        rv = list.metadata.resourceVersion;
      }
      let gone = false;
      await api.watch<Obj>(
        `${path}?watch=1&${selector}&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=600`,
        (event) => {
          if (event.type === 'ERROR') {
            gone = event.object.code === 410;
            return;
          }
          rv = event.object.metadata?.resourceVersion ?? rv;
          if (event.type !== 'BOOKMARK') onObject(event.type, event.object);
        },
        signal,
      );
      if (gone) {
        rv = '';
        onRelist();
      }
    } catch (err) {
      if (signal.aborted) return;
      log(`soak watch ${path}: ${(err as Error).message}; again`);
      if ((err as { status?: number }).status === 410) {
        rv = '';
        onRelist();
      }
      await sleep(500);
    }
  }
}

/** Least-squares slope of y over x. */
function slope(points: readonly [number, number][]): number {
  if (points.length < 2) return NaN;
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

export async function soak(api: ApiClient, o: SoakOptions): Promise<SoakResult> {
  const abort = new AbortController();
  const sentAt = new Map<string, number>();
  const runningAt = new Map<string, number>();
  const deleteSent = new Set<string>();
  /** Deleted while Running: the kubelet stops a running container (event Killing). */
  const killExpected = new Set<string>();
  const goneAt = new Map<string, number>();
  const reasons = new Map<string, Set<string>>();
  let misplaced = 0;
  let relists = 0;
  const selector = `labelSelector=${encodeURIComponent(`bench-run=${o.run}`)}`;
  const pods = follow(
    api,
    `/api/v1/namespaces/${o.namespace}/pods`,
    selector,
    (type, pod) => {
      const name = pod.metadata?.name ?? '';
      if (type === 'DELETED') {
        goneAt.set(name, Date.now());
        return;
      }
      if (pod.status?.phase !== 'Running' || runningAt.has(name)) return;
      runningAt.set(name, Date.now());
      if (!o.nodes.has(pod.spec?.nodeName ?? '')) misplaced++;
    },
    () => relists++,
    abort.signal,
  );
  const events = follow(
    api,
    `/api/v1/namespaces/${o.namespace}/events`,
    `fieldSelector=${encodeURIComponent('source=kubelet,involvedObject.kind=Pod')}`,
    (_type, event) => {
      const name = event.involvedObject?.name ?? '';
      if (!sentAt.has(name)) return;
      let seen = reasons.get(name);
      if (seen === undefined) reasons.set(name, (seen = new Set()));
      seen.add(event.reason ?? '');
    },
    () => relists++,
    abort.signal,
  );

  const samples: SoakSample[] = [];
  const start = Date.now();
  const sample = (): SoakSample => {
    const s = { atS: (Date.now() - start) / 1000, rssBytes: rssOf(o.pid), cpuSeconds: cpuSecondsOf(o.pid), fds: fdCountOf(o.pid), livePods: sentAt.size - goneAt.size, running: runningAt.size };
    samples.push(s);
    return s;
  };
  const idle = sample();
  const sampler = setInterval(() => {
    const s = sample();
    log(`soak ${(s.atS / 60).toFixed(1)} min: RSS ${(s.rssBytes / 2 ** 20).toFixed(0)} MiB, ${s.fds} fds, ${s.livePods} live pods, ${s.running} Running of ${sentAt.size} created`);
  }, o.sampleEveryS * 1000);

  let createErrors = 0;
  let deleteErrors = 0;
  const live: string[] = [];
  let populationReachedS: number | undefined;
  const inFlight = new Set<Promise<void>>();
  const track = (p: Promise<void>): void => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  const remove = (name: string): void => {
    if (!sentAt.has(name)) return; // its create failed: nothing to delete
    deleteSent.add(name);
    if (runningAt.has(name)) killExpected.add(name);
    track(
      api.request('DELETE', `/api/v1/namespaces/${o.namespace}/pods/${name}`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 1 }).then(
        () => undefined,
        (err: unknown) => {
          if ((err as { status?: number }).status === 404) return;
          deleteErrors++;
          if (deleteErrors <= 5) log(`delete ${name}: ${(err as Error).message}`);
        },
      ),
    );
  };
  const end = start + o.minutes * 60_000;
  for (let i = 0; Date.now() < end; i++) {
    const wait = start + (i * 1000) / o.rate - Date.now();
    if (wait > 0) await sleep(wait);
    if (Date.now() >= end) break;
    const name = `${o.run}-${i}`;
    sentAt.set(name, Date.now());
    live.push(name);
    track(
      api.request('POST', `/api/v1/namespaces/${o.namespace}/pods`, o.template(name)).then(
        () => undefined,
        (err: unknown) => {
          createErrors++;
          sentAt.delete(name);
          if (createErrors <= 5) log(`create ${name}: ${(err as Error).message}`);
        },
      ),
    );
    if (live.length > o.population) {
      populationReachedS ??= (Date.now() - start) / 1000;
      remove(live.shift()!);
    }
  }
  await Promise.all(inFlight);
  const endOfChurn = sample();
  log(`soak: churn over (${sentAt.size} created, ${deleteSent.size} deleted); waiting up to ${o.boundS} s for the live ones to be Running`);
  const waitUntil = async (done: () => boolean): Promise<void> => {
    const until = Date.now() + o.boundS * 1000;
    while (!done() && Date.now() < until) await sleep(500);
  };
  await waitUntil(() => live.every((name) => runningAt.has(name) || !sentAt.has(name)));
  for (const name of live) remove(name);
  await Promise.all(inFlight);
  log(`soak: deleting the ${live.length} pods left; waiting up to ${o.boundS} s for them to be gone`);
  await waitUntil(() => [...deleteSent].every((name) => goneAt.has(name)));
  // The events of the last deletions, then the process at rest.
  await sleep(5_000);
  clearInterval(sampler);
  const afterDrain = sample();
  abort.abort();
  await Promise.all([pods, events]);

  const examples: Record<string, string[]> = {};
  const count = (kind: string, names: Iterable<string>, lost: (name: string) => boolean): number => {
    let n = 0;
    for (const name of names) {
      if (!lost(name)) continue;
      n++;
      if ((examples[kind] ??= []).length < 10) examples[kind]!.push(name);
    }
    return n;
  };
  const latencies = [...runningAt].filter(([name]) => sentAt.has(name)).map(([name, at]) => (at - sentAt.get(name)!) / 1000).sort((a, b) => a - b);
  const byMinute: number[][] = [];
  for (const [name, at] of runningAt) {
    const sent = sentAt.get(name);
    if (sent === undefined) continue;
    (byMinute[Math.floor((sent - start) / 60_000)] ??= []).push((at - sent) / 1000);
  }
  const steadyFrom = populationReachedS ?? (o.minutes * 60) / 2;
  const steady = samples.filter((s) => s.atS >= steadyFrom && s.atS <= endOfChurn.atS).map((s): [number, number] => [s.atS, s.rssBytes / 2 ** 20]);
  return {
    minutes: o.minutes,
    created: sentAt.size,
    createErrors,
    deleted: deleteSent.size,
    deleteErrors,
    misplaced,
    lost: {
      neverRunning: count('neverRunning', sentAt.keys(), (name) => !runningAt.has(name)),
      notGone: count('notGone', deleteSent, (name) => !goneAt.has(name)),
      startedEventMissing: count('startedEventMissing', runningAt.keys(), (name) => sentAt.has(name) && !(reasons.get(name)?.has('Started') ?? false)),
      killingEventMissing: count('killingEventMissing', killExpected, (name) => !(reasons.get(name)?.has('Killing') ?? false)),
      examples,
    },
    relists,
    latencyS: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies[latencies.length - 1] ?? NaN },
    p99ByMinuteS: Array.from(byMinute, (l) => percentile((l ?? []).sort((a, b) => a - b), 99)),
    rss: { idleBytes: idle.rssBytes, endOfChurnBytes: endOfChurn.rssBytes, afterDrainBytes: afterDrain.rssBytes, steadySlopeMiBPer10Min: slope(steady) * 600 },
    fds: { idle: idle.fds, endOfChurn: endOfChurn.fds, afterDrain: afterDrain.fds },
    cpuSecondsDuringSoak: afterDrain.cpuSeconds - idle.cpuSeconds,
    samples,
  };
}
