/**
 * The fake kubelet's pipeline for `kubelet run`: pod files → decode and API validation →
 * admission (namespace, service account, GMSA in all its designs) → one SyncPod pass over CRI.
 * A pod stopped at any stage is never started; the others go on. The cluster is read once, and a
 * broken cluster manifest stops everything before any pod is touched.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/proto.js';
import { admitPod, describeRejection, type AdmissionContext, type AdmissionError } from './admission.js';
import type { ClusterSource } from './cluster.js';
import { loadPodFiles, type ManifestSource, type PodManifestOptions } from './manifests.js';
import { listNodePods } from './node-pods.js';
import { recordFirstSync, type PodRecordStore } from './pod-records.js';
import { runPodOnce, type PodOutcome, type PodWorkerOptions } from './pod-worker.js';
import type { UserInfo } from './rbac.js';

export type PodRunResult =
  | { readonly stage: 'manifest'; readonly error: Error }
  | { readonly stage: 'admission'; readonly pod: V1Pod; readonly source: ManifestSource; readonly error: AdmissionError }
  /** The node runs a pod of that namespace and name already: a second create is refused (409). */
  | { readonly stage: 'exists'; readonly pod: V1Pod; readonly source: ManifestSource }
  | { readonly stage: 'runtime'; readonly pod: V1Pod; readonly source: ManifestSource; readonly outcome: PodOutcome };

export interface RunPodsOptions extends Omit<PodWorkerOptions, 'configMaps'> {
  readonly cluster: ClusterSource;
  readonly user: UserInfo;
  readonly designs?: AdmissionContext['designs'];
  readonly manifests?: PodManifestOptions;
  /** Where each started pod's record is written (`kubelet get`/`describe` read them back). */
  readonly records?: PodRecordStore;
}

export async function runPods(cri: CriClient, files: readonly string[], options: RunPodsOptions): Promise<PodRunResult[]> {
  const cluster = await options.cluster.load();
  const { pods, errors } = await loadPodFiles(files, options.manifests);
  const results: PodRunResult[] = errors.map((error) => ({ stage: 'manifest', error }));
  // Pods the node has (in the runtime, or recorded after a failed sandbox) keep their names; read
  // once, when the first pod passed admission (storage refuses a duplicate after admission).
  let existing: Set<string> | undefined;
  const nodeHas = async (pod: V1Pod): Promise<boolean> => {
    if (existing === undefined) {
      existing = new Set((await listNodePods(cri, options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs })).map((p) => `${p.namespace}/${p.name}`));
      for (const r of (await options.records?.list()) ?? []) if (!r.sandboxCreated) existing.add(`${r.pod.metadata?.namespace}/${r.pod.metadata?.name}`);
    }
    return existing.has(`${pod.metadata?.namespace}/${pod.metadata?.name}`);
  };
  for (const { pod, source } of pods) {
    const admission = admitPod(pod, { cluster, user: options.user, ...(options.designs === undefined ? {} : { designs: options.designs }) });
    if (!admission.allowed) {
      results.push({ stage: 'admission', pod, source, error: admission.error });
      continue;
    }
    if (await nodeHas(pod)) {
      results.push({ stage: 'exists', pod, source });
      continue;
    }
    const outcome = await runPodOnce(cri, admission.pod, { ...options, configMaps: cluster.configMaps });
    await options.records?.save(recordFirstSync(admission.pod, source, outcome));
    results.push({ stage: 'runtime', pod: admission.pod, source, outcome });
  }
  return results;
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
