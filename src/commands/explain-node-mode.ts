/**
 * `cri-winsim explain --kubeconfig`: the pod is read from the API server, and its node's kubelet
 * server answers `/explain/NS/POD` through the API server's node proxy (kubelet server
 * routes/explain.ts), as `kubectl get --raw /api/v1/nodes/NODE/proxy/explain/NS/POD` would.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { IdentityExplanation } from '../kubelet/explain/identity-explanation.js';
import { ApiClient, isNotFound } from '../kubelet/node/api-client.js';

export async function explainThroughApiServer(kubeconfig: string, context: string | undefined, namespace: string, name: string): Promise<IdentityExplanation | undefined> {
  const api = await ApiClient.load({ kubeconfig, ...(context === undefined ? {} : { context }) });
  try {
    let pod: V1Pod;
    try {
      pod = await api.get<V1Pod>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    const node = pod.spec?.nodeName ?? '';
    if (node === '') throw new Error(`pod ${namespace}/${name} is not bound to a node yet`);
    return await api.get<IdentityExplanation>(`/api/v1/nodes/${encodeURIComponent(node)}/proxy/explain/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
  } finally {
    api.close();
  }
}
