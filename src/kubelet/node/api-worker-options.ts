/**
 * What the pod worker needs of the API server for a pod of node mode, read through the API as the
 * node (under the Node authorizer): the ConfigMaps its environment names, the credential spec of
 * the GMSA KEP's ConfigMap design (the kubelet's share: the ConfigMap its annotation names), and
 * the RuntimeClasses and pull secrets (pod-objects.ts).
 */
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import { gmsaConfigMapAnnotations, gmsaConfigMapKey } from '../../apiserver/admission.js';
import { apiPodObjects } from '../pod-objects.js';
import type { ImagePulls, PodWorkerOptions } from '../pod-worker-options.js';
import { ApiError, isNotFound, type ApiRequester } from './api-client.js';

export interface NodeWorkerOptions {
  readonly podLogsRoot: string;
  readonly nodeName: string;
  readonly nodeCpuCount: number;
  readonly callTimeoutMs: number;
  readonly imagePulls?: ImagePulls;
}

/**
 * The worker's options for `pod`. A string is the error that keeps its containers from being
 * configured (CreateContainerConfigError). The GMSA ConfigMap's credential spec is written into
 * the pod's security context.
 */
export async function apiWorkerOptions(api: ApiRequester, pod: V1Pod, options: NodeWorkerOptions): Promise<PodWorkerOptions | string> {
  const namespace = pod.metadata?.namespace ?? 'default';
  const names = new Set<string>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const from of c.envFrom ?? []) if (from.configMapRef?.name) names.add(from.configMapRef.name);
    for (const env of c.env ?? []) if (env.valueFrom?.configMapKeyRef?.name) names.add(env.valueFrom.configMapKeyRef.name);
  }
  const configMaps: V1ConfigMap[] = [];
  for (const name of names) {
    try {
      configMaps.push(await api.get<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps/${name}`));
    } catch (err) {
      if (!isNotFound(err)) throw err; // a missing one is the worker's "configmap not found"
    }
  }
  const annotation = gmsaConfigMapAnnotations.map((a) => pod.metadata?.annotations?.[a]).find((v) => v !== undefined && v !== '');
  if (annotation !== undefined && pod.spec?.securityContext?.windowsOptions?.gmsaCredentialSpec === undefined) {
    try {
      const configMap = await api.get<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps/${annotation}`);
      const spec = configMap.data?.[gmsaConfigMapKey];
      if (spec === undefined || spec === '') return `GMSA ConfigMap ${JSON.stringify(annotation)} in namespace ${JSON.stringify(namespace)} does not have a ${gmsaConfigMapKey} key`;
      pod.spec!.securityContext = { ...pod.spec!.securityContext, windowsOptions: { ...pod.spec!.securityContext?.windowsOptions, gmsaCredentialSpec: spec } };
    } catch (err) {
      if (err instanceof ApiError) return `cannot read GMSA ConfigMap ${namespace}/${annotation}: ${err.statusMessage}`;
      throw err;
    }
  }
  return {
    podLogsRoot: options.podLogsRoot,
    nodeName: options.nodeName,
    nodeCpuCount: options.nodeCpuCount,
    configMaps,
    // RuntimeClasses and pull secrets through the API as the node (the Node authorizer lets a
    // node read the secrets its pods name).
    ...apiPodObjects((path) => api.get(path), isNotFound),
    callTimeoutMs: options.callTimeoutMs,
    ...(options.imagePulls === undefined ? {} : { imagePulls: options.imagePulls }),
  };
}
