/**
 * `cri-winsim explain --kubeconfig`: the pod is read from the API server, and the kubelet server
 * of its node answers `/explain/NS/POD` (kubelet server routes/explain.ts). First through the API
 * server's node proxy, as `kubectl get --raw /api/v1/nodes/NODE/proxy/explain/NS/POD` would; an API
 * server refuses to proxy to a node's loopback address, which is where cri-winsim's nodes listen,
 * so then directly at the address and port the Node reports, with the kubeconfig's credentials
 * (the kubelet server authenticates them as it does the API server's). Its serving certificate is
 * self-signed unless the node was given one, so it is not verified — and only ever for a loopback
 * address.
 */
import * as https from 'node:https';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { IdentityExplanation } from '../kubelet/explain/identity-explanation.js';
import { ApiClient, isNotFound } from '../kubelet/node/api-client.js';
import { isLoopbackAddress } from '../kubelet/server/index.js';

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
    const nodeName = pod.spec?.nodeName ?? '';
    if (nodeName === '') throw new Error(`pod ${namespace}/${name} is not bound to a node yet`);
    const path = `/explain/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
    try {
      return await api.get<IdentityExplanation>(`/api/v1/nodes/${encodeURIComponent(nodeName)}/proxy${path}`);
    } catch (proxyError) {
      const node = await api.get<V1Node>(`/api/v1/nodes/${encodeURIComponent(nodeName)}`);
      const address = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '';
      const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
      if (!isLoopbackAddress(address) || port === undefined) throw proxyError;
      return await directRequest(api, address, port, path);
    }
  } finally {
    api.close();
  }
}

/** GET of the kubelet server at a loopback address, with the kubeconfig's credentials. */
async function directRequest(api: ApiClient, address: string, port: number, path: string): Promise<IdentityExplanation> {
  const options: https.RequestOptions = {};
  await api.kubeConfig.applyToHTTPSOptions(options);
  const { cert, key, headers } = options;
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: address, port, path, method: 'GET', headers: { ...(headers ?? {}), Accept: 'application/json' }, ...(cert === undefined ? {} : { cert, key }), rejectUnauthorized: false, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) reject(new Error(`Error from the kubelet at ${address}:${port}: ${res.statusCode} ${body.trim()}`));
          else {
            try {
              resolve(JSON.parse(body) as IdentityExplanation);
            } catch (err) {
              reject(new Error(`the kubelet at ${address}:${port} answered no JSON: ${(err as Error).message}`));
            }
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`the kubelet at ${address}:${port} did not answer within 30 s`)));
    req.on('error', reject);
    req.end();
  });
}
