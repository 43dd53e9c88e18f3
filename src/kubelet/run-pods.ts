/**
 * The fake kubelet's pipeline for `kubelet run`: pod files → decode → the API server's create
 * (mutating admission: namespace, service account, GMSA in all its designs; field validation of
 * the mutated pod; validating admission) → one SyncPod pass over CRI.
 * A pod stopped at any stage is never started; the others go on. The cluster is read once, and a
 * broken cluster manifest stops everything before any pod is touched. Like the kubelet's pod
 * workers (one per pod), pods go through their pass side by side, a bounded number at a time;
 * results come back in the order of the files.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/proto.js';
import { admitPod, defaultGmsaDesign, describeRejection, gmsaWebhookName, readAlphaCredentialSpecs, type AdmissionError, type GmsaDesign } from '../apiserver/admission.js';
import { recordGmsaAdmission } from '../apiserver/gmsa-admission-record.js';
import { AdmissionRefusalStore } from './explain/admission-refusals.js';
import type { ClusterSource } from '../apiserver/cluster.js';
import { loadPodFiles, type LoadedPod, type ManifestSource, type PodManifestOptions } from '../apiserver/manifests.js';
import { admitPodOnNode, standaloneNode, type AdmissionNode } from './kubelet-admission.js';
import { listNodePods } from './node-pods.js';
import { snapshotPodObjects } from './pod-objects.js';
import { mergeEvents, recordFirstSync, type PodRecord, type PodRecordStore } from './pod-records.js';
import { appliedPod, fileChanged, updatePod } from '../apiserver/pod-update.js';
import { ImagePulls, TurnSequence, type ContainerOutcome, type PodOutcome, type PodWorkerOptions, type Turn } from './pod-worker-options.js';
import type { NodeContainer, NodePod } from './node-pods.js';
import { latestAttempts } from './sync/pod-actions.js';
import { PodSyncEngine, recordOfSync } from './sync/pod-sync.js';
import { defaultPodWorkers, maxPodWorkers } from './pod-workers.js';
import type { UserInfo } from '../apiserver/rbac.js';

/** `durationMs`: how long the pod's pass took, admission to the end of SyncPod (reports). */
export type PodRunResult =
  | { readonly stage: 'manifest'; readonly error: Error }
  /** `operation` update: the pod existed and its file changed, so the request was an UPDATE. */
  | { readonly stage: 'admission'; readonly pod: V1Pod; readonly source: ManifestSource; readonly error: AdmissionError; readonly durationMs?: number; readonly operation?: 'create' | 'update' }
  /** The node runs a pod of that namespace and name already: a second create is refused (409). */
  | { readonly stage: 'exists'; readonly pod: V1Pod; readonly source: ManifestSource; readonly durationMs?: number }
  /** The API server stored the pod; the kubelet's own admission refused it (PodOSNotSupported, …): phase Failed. */
  | { readonly stage: 'rejected'; readonly pod: V1Pod; readonly source: ManifestSource; readonly reason: string; readonly message: string; readonly durationMs?: number }
  | { readonly stage: 'runtime'; readonly pod: V1Pod; readonly source: ManifestSource; readonly outcome: PodOutcome; readonly durationMs?: number };

// Apart from this module, so that `kubelet run --help` names them without loading it.
export { defaultPodWorkers, maxPodWorkers } from './pod-workers.js';

export interface RunPodsOptions extends Omit<PodWorkerOptions, 'configMaps' | 'runtimeClasses' | 'pullSecrets' | 'imagePulls' | 'sandboxTurn'> {
  readonly cluster: ClusterSource;
  readonly user: UserInfo;
  /** The cluster's GMSA design (`--gmsa-design`); the shipped webhook by default. */
  readonly design?: GmsaDesign;
  /** The windows-gmsa webhook's RANDOM_HOSTNAME (`--random-hostname`); off by default, as in its chart. */
  readonly randomHostname?: boolean;
  /** Where random hostnames come from; replaceable in tests. */
  readonly uuid?: () => string;
  readonly manifests?: PodManifestOptions;
  /** Where each started pod's record is written (`kubelet get`/`describe` read them back). */
  readonly records?: PodRecordStore;
  /** Pods in their pass at the same time, 1 to maxPodWorkers (default defaultPodWorkers). */
  readonly podWorkers?: number;
  /** The Node the kubelet's admission reads; default: this node's name with node mode's default capacity. */
  readonly node?: AdmissionNode;
}

export async function runPods(cri: CriClient, files: readonly string[], options: RunPodsOptions): Promise<PodRunResult[]> {
  const workers = options.podWorkers ?? defaultPodWorkers;
  if (!Number.isInteger(workers) || workers < 1 || workers > maxPodWorkers) {
    throw new RangeError(`pod workers must be an integer from 1 to ${maxPodWorkers}, got ${workers}`);
  }
  const cluster = await options.cluster.load();
  const callOptions = options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs };
  // What the runtime holds of the node's pods before this run, listed once for both uses below.
  let before: Promise<NodePod[]> | undefined;
  const nodePodsBefore = (): Promise<NodePod[]> => (before ??= listNodePods(cri, callOptions));
  // Pods the node has (in the runtime, or recorded after a failed sandbox) keep their names; read
  // once, when the first pod passed admission (storage refuses a duplicate after admission).
  let existing: Promise<Set<string>> | undefined;
  const readExisting = async (): Promise<Set<string>> => {
    const names = new Set((await nodePodsBefore()).map((p) => `${p.namespace}/${p.name}`));
    for (const r of (await options.records?.list()) ?? []) if (!r.sandboxCreated) names.add(`${r.pod.metadata?.namespace}/${r.pod.metadata?.name}`);
    return names;
  };
  const nodeHas = async (pod: V1Pod): Promise<boolean> => (await (existing ??= readExisting())).has(`${pod.metadata?.namespace}/${pod.metadata?.name}`);
  // The records of the pods the node has, by namespace/name, read once when first needed.
  let recorded: Promise<Map<string, PodRecord>> | undefined;
  const recordOf = async (pod: V1Pod): Promise<PodRecord | undefined> => {
    recorded ??= (async () => new Map(((await options.records?.list()) ?? []).map((r) => [`${r.pod.metadata?.namespace}/${r.pod.metadata?.name}`, r])))();
    return (await recorded).get(`${pod.metadata?.namespace}/${pod.metadata?.name}`);
  };
  const admissionContext = {
    cluster,
    user: options.user,
    ...(options.design === undefined ? {} : { design: options.design }),
    ...(options.randomHostname === undefined ? {} : { randomHostname: options.randomHostname }),
    ...(options.uuid === undefined ? {} : { uuid: options.uuid }),
    ...(options.manifests?.validation === undefined ? {} : { validation: options.manifests.validation }),
  };
  const workerOptions: PodWorkerOptions = { ...options, ...snapshotPodObjects(cluster), imagePulls: new ImagePulls() };
  // One pass over each pod: nothing waits for a back-off, so the engine's back-off is zero.
  const engine = new PodSyncEngine(cri, { callTimeoutMs: options.callTimeoutMs, backoffInitialMs: 0 });
  const node = options.node ?? standaloneNode(options.nodeName ?? 'winnode1');
  // The pods that hold the node's resources for the kubelet's admission: those it runs already
  // (recorded and still in the runtime), read once, and those admitted in this run, in the order
  // they were admitted (the kubelet admits one pod after another).
  let running: Promise<V1Pod[]> | undefined;
  const readRunning = async (): Promise<V1Pod[]> => {
    const uids = new Set((await nodePodsBefore()).map((p) => p.uid));
    return ((await options.records?.list()) ?? []).filter((r) => uids.has(r.pod.metadata?.uid ?? '')).map((r) => r.pod);
  };
  const admittedInRun: V1Pod[] = [];

  /** The UPDATE through the API server's steps; when accepted, the kubelet syncs the change. */
  const runUpdate = async (file: V1Pod, source: ManifestSource, record: PodRecord): Promise<Exclude<PodRunResult, { stage: 'manifest' }>> => {
    const live = record.pod;
    const update = updatePod(appliedPod(live, record.applied!, file), live, admissionContext);
    if (!update.allowed) return { stage: 'admission', pod: live, source, error: update.error, operation: 'update' };
    const nodePod = (await listNodePods(cri, callOptions)).find((p) => p.uid === live.metadata?.uid);
    if (nodePod === undefined) return { stage: 'exists', pod: live, source };
    // The kubelet's answer to the accepted update: containers whose definition changed are
    // killed and started again with the new spec; the others keep running (computePodActions).
    const sync = await engine.sync(update.pod, nodePod, workerOptions, { restartExited: false });
    const latest = latestAttempts(nodePod);
    const containers = (update.pod.spec?.containers ?? []).map((c) => sync.started.find((s) => s.outcome.name === c.name)?.outcome ?? currentOutcome(c.name, latest.get(c.name)));
    const outcome: PodOutcome = { sandboxId: nodePod.sandboxId, containers, events: sync.events };
    await options.records?.save({ ...recordOfSync(record, sync), pod: update.pod, applied: file, events: mergeEvents(record.events, sync.events, new Date()) });
    return { stage: 'runtime', pod: update.pod, source, outcome };
  };

  // Pods send RunPodSandbox in file order, so the runtime numbers them (pod IPs) as one after
  // another would; a pod that never gets that far gives up its turn.
  const sandboxTurns = new TurnSequence();
  const runOne = async ({ pod, source }: LoadedPod, sandboxTurn: Turn): Promise<PodRunResult> => {
    const began = performance.now();
    const durationMs = (): number => performance.now() - began;
    try {
      // A pod the node has, whose file changed since it was run: an UPDATE (as kubectl apply).
      // The records are read first: a pod the kubelet never ran is a create, and a create that
      // admission refuses never reaches the runtime.
      const record = await recordOf(pod);
      if (record?.applied !== undefined && record.sandboxCreated && fileChanged(record.applied, pod) && (await nodeHas(pod))) {
        return { ...(await runUpdate(pod, source, record)), durationMs: durationMs() };
      }
      // Otherwise a CREATE; for a pod the node has, storage refuses it after admission (409).
      const admission = admitPod(pod, admissionContext);
      // The refusal is kept for `cri-winsim explain` (the pod never exists); an admitted pod drops it.
      const refusals = options.records === undefined ? undefined : new AdmissionRefusalStore(options.records.rootDir);
      if (!admission.allowed) {
        await refusals?.save({ pod, refusal: { code: admission.error.code, by: refusedBy(admission.error), message: describeRejection(admission.error) }, time: new Date().toISOString() });
        return { stage: 'admission', pod, source, error: admission.error, durationMs: durationMs() };
      }
      await refusals?.remove(pod.metadata?.namespace || 'default', pod.metadata?.name ?? '');
      if (await nodeHas(pod)) return { stage: 'exists', pod, source, durationMs: durationMs() };
      // The kubelet's admit handlers (lifecycle/predicate.go): a pod the node cannot take is never run.
      const others = await (running ??= readRunning());
      const rejection = admitPodOnNode({ pod: admission.pod, otherPods: [...others, ...admittedInRun] }, node);
      if (rejection !== undefined) return { stage: 'rejected', pod: admission.pod, source, ...rejection, durationMs: durationMs() };
      admittedInRun.push(admission.pod);
      // The 1.14 kubelet read the alpha webhook's annotations itself.
      const runnable = options.design === 'alpha-1.14' ? readAlphaCredentialSpecs(admission.pod) : admission.pod;
      // The pass's own answers make the pod's row; reading the pod back would double its CRI calls.
      const outcome = (await engine.sync(runnable, undefined, { ...workerOptions, sandboxTurn }, { restartExited: false, readBack: false })).created!;
      const gmsaAdmission = recordGmsaAdmission(options.design ?? defaultGmsaDesign, pod, admission.pod);
      await options.records?.save(recordFirstSync(admission.pod, source, outcome, new Date(), pod, gmsaAdmission));
      return { stage: 'runtime', pod: admission.pod, source, outcome, durationMs: durationMs() };
    } finally {
      sandboxTurn.release();
    }
  };

  // The files are read in order while the workers start on the pods read so far; each worker takes
  // the next pod in file order. After a failure (a broken connection, an unwritable record) no
  // further pod is begun; those under way finish, then the first error is thrown.
  const queue: LoadedPod[] = [];
  const podResults: PodRunResult[] = [];
  let loading = true;
  let next = 0;
  let failure: { error: unknown } | undefined;
  let wake = (): void => {};
  let arrival = new Promise<void>((resolve) => (wake = resolve));
  const signal = (): void => {
    const woken = wake;
    arrival = new Promise<void>((resolve) => (wake = resolve));
    woken();
  };
  const worker = async (): Promise<void> => {
    // Each turn either takes a pod or waits for the loader, which ends after the last file.
    while (failure === undefined) {
      if (next < queue.length) {
        const index = next++;
        try {
          podResults[index] = await runOne(queue[index]!, sandboxTurns.turn(index));
        } catch (error) {
          failure ??= { error };
        }
      } else if (loading) await arrival;
      else return;
    }
  };
  // Field validation runs inside admission, on the mutated pod, as the API server orders it.
  const loader = loadPodFiles(files, { ...options.manifests, validate: false }, (loaded) => {
    queue.push(loaded);
    signal();
  }).finally(() => {
    loading = false;
    signal();
  });
  const working = Promise.all(Array.from({ length: workers }, worker));
  const loaded = await loader.catch((error: unknown) => {
    failure ??= { error };
    return undefined;
  });
  await working;
  if (failure !== undefined || loaded === undefined) throw failure!.error;
  return [...loaded.errors.map((error): PodRunResult => ({ stage: 'manifest', error })), ...podResults];
}

export interface PodSummary {
  readonly namespace: string;
  readonly name: string;
  /** Started regular containers / all regular containers, like kubectl's READY column. */
  readonly ready: string;
  /** kubectl's STATUS column, or the admission refusal's HTTP reason. */
  readonly status: string;
  readonly detail: string;
}

const httpReasons: Record<number, string> = { 400: 'BadRequest', 403: 'Forbidden', 404: 'NotFound', 417: 'ExpectationFailed', 422: 'Invalid', 500: 'InternalError' };

/** One table row per result, with the STATUS kubectl would print (printPod's precedence). */
export function summarizePodRun(result: PodRunResult): PodSummary {
  if (result.stage === 'manifest') return { namespace: '', name: '', ready: '', status: 'Invalid', detail: result.error.message };
  const namespace = result.pod.metadata?.namespace ?? '';
  const name = result.pod.metadata?.name ?? '';
  const total = result.pod.spec?.containers.length ?? 0;
  if (result.stage === 'exists') return { namespace, name, ready: `0/${total}`, status: 'AlreadyExists', detail: `pods ${JSON.stringify(name)} already exists` };
  // printPod shows a failed pod's status.reason.
  if (result.stage === 'rejected') return { namespace, name, ready: `0/${total}`, status: result.reason, detail: result.message };
  if (result.stage === 'admission') {
    return { namespace, name, ready: `0/${total}`, status: httpReasons[result.error.code] ?? String(result.error.code), detail: describeRejection(result.error) };
  }
  const { outcome } = result;
  const regular = outcome.containers.filter((c) => c.kind === 'regular');
  const ready = `${regular.filter((c) => c.state === 'started').length}/${total}`;
  if (outcome.sandboxError !== undefined) return { namespace, name, ready, status: 'ContainerCreating', detail: outcome.sandboxError.message };

  const init = outcome.containers.filter((c) => c.kind === 'init');
  const initTotal = result.pod.spec?.initContainers?.length ?? 0;
  const failedInit = init.find((c) => (c.state === 'exited' && c.exitCode !== 0) || (c.state !== 'exited' && c.reason !== undefined && c.reason !== 'PodInitializing'));
  if (failedInit !== undefined) {
    return { namespace, name, ready, status: `Init:${failedInit.reason ?? 'Error'}`, detail: failedInit.message ?? `init container ${failedInit.name} exited with ${failedInit.exitCode}` };
  }
  const completedInit = init.filter((c) => c.state === 'exited' && c.exitCode === 0).length;
  if (completedInit < initTotal) return { namespace, name, ready, status: `Init:${completedInit}/${initTotal}`, detail: '' };

  // printPod walks the containers from the last to the first, so the first one with a reason wins.
  const first = regular.find((c) => c.state === 'waiting' && c.reason !== undefined);
  if (first !== undefined) return { namespace, name, ready, status: first.reason!, detail: `${first.name}: ${first.message ?? first.reason}` };
  return { namespace, name, ready, status: 'Running', detail: '' };
}

/** Who refused, as a user would name it: the webhook's name, or the API server's plugin or step. */
function refusedBy(error: AdmissionError): string {
  if (error.by === 'gmsa-webhook') return gmsaWebhookName;
  return error.by === 'validation' ? 'the API server (field validation)' : `the API server (${error.by} admission)`;
}

/** A container the update left alone, as the outcome of the pass reports it. */
function currentOutcome(name: string, current: NodeContainer | undefined): ContainerOutcome {
  const state = current?.state === 'Running' ? 'started' : current?.state === 'Exited' ? 'exited' : 'waiting';
  return { name, kind: 'regular', state, ...(current === undefined ? {} : { containerId: current.id }), ...(current?.exitCode === undefined ? {} : { exitCode: current.exitCode }) };
}
