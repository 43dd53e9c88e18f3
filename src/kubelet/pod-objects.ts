/**
 * The cluster objects the pod worker reads for a pod besides the pod itself — ConfigMaps for its
 * environment, its RuntimeClass, its imagePullSecrets — from either source the kubelet has: a
 * cluster snapshot (`kubelet run`, static pods) or the API server as the node (node mode). One
 * place, so every pod path reads them alike.
 */
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { findRuntimeClass, findSecret, type ClusterSnapshot } from '../apiserver/cluster.js';
import type { PodWorkerOptions, PullSecrets } from './pod-worker-options.js';
import type { RuntimeClass } from '../apiserver/runtime-class.js';

/** getPullSecretsForPod: each named Secret read in turn; those not found (or unreadable) are named. */
export async function readPullSecrets(pod: V1Pod, find: (namespace: string, name: string) => Promise<V1Secret | undefined> | V1Secret | undefined): Promise<PullSecrets> {
  const namespace = pod.metadata?.namespace ?? 'default';
  const secrets: V1Secret[] = [];
  const missing: string[] = [];
  for (const ref of pod.spec?.imagePullSecrets ?? []) {
    const name = ref.name ?? '';
    if (name === '') continue;
    const secret = await find(namespace, name);
    if (secret === undefined) missing.push(name);
    else secrets.push(secret);
  }
  return { secrets, missing };
}

/** The worker's object readers over one cluster snapshot. */
export function snapshotPodObjects(cluster: ClusterSnapshot): Pick<PodWorkerOptions, 'configMaps' | 'runtimeClasses' | 'pullSecrets'> {
  return {
    configMaps: cluster.configMaps,
    runtimeClasses: (name: string): RuntimeClass | undefined => findRuntimeClass(cluster, name),
    pullSecrets: (pod: V1Pod) => readPullSecrets(pod, (namespace, name) => findSecret(cluster, namespace, name)),
  };
}

/**
 * The worker's RuntimeClass and pull-secret readers over the API server. A missing RuntimeClass is
 * the worker's NotFound text; a pull secret that cannot be read, for whatever reason, is named in
 * FailedToRetrieveImagePullSecret (getPullSecretsForPod logs the error and goes on).
 */
export function apiPodObjects(get: (path: string) => Promise<unknown>, isNotFound: (err: unknown) => boolean): Pick<PodWorkerOptions, 'runtimeClasses' | 'pullSecrets'> {
  return {
    runtimeClasses: async (name: string): Promise<RuntimeClass | undefined> => {
      try {
        return (await get(`/apis/node.k8s.io/v1/runtimeclasses/${encodeURIComponent(name)}`)) as RuntimeClass;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    pullSecrets: (pod: V1Pod) =>
      readPullSecrets(pod, (namespace, name) =>
        (get(`/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`) as Promise<V1Secret>).catch(() => undefined),
      ),
  };
}
