/**
 * CPU of this process per API request, HTTP/1.1 against HTTP/2, on the test harness's real
 * kube-apiserver: what a lease renewal (a PUT of a Lease) costs over node mode's client
 * (src/kubelet/node/api-client.ts: node:https, one keep-alive agent of up to 64 sockets) and over
 * one node:http2 session, the alternative measured in bench/README.md ("Node mode's CPU per pod,
 * the next costs") and not adopted. Two patterns, alternating rounds: `paced`, one request at a
 * time with a pause between (as lease renewals spread over 10 s arrive), and `burst`, 200 at once
 * (a start-up, a relist).
 *
 *   node dist/bench/api-transport-cost.js [--requests 1000] [--rounds 2]
 */
import * as http2 from 'node:http2';
import type * as https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ApiClient } from '../src/kubelet/node/api-client.js';
import { startControlPlane } from '../test/support/control-plane.js';

type Lease = { metadata: { resourceVersion: string } };

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { requests: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '2' } } });
  const requests = Number(values.requests);
  const leases = 200;
  const cp = await startControlPlane({ nodeNames: [], name: 'api-transport-cost', scheduler: false });
  const api = await ApiClient.load({ kubeconfig: cp.adminKubeconfig });
  const options: https.RequestOptions = {};
  await api.kubeConfig.applyToHTTPSOptions(options);
  const session = http2.connect(api.server.origin, { ca: options.ca, cert: options.cert, key: options.key });
  session.on('error', () => undefined);
  try {
    const base = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
    const lease = (i: number, resourceVersion?: string): object => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: `cost-${i}`, namespace: 'kube-node-lease', ...(resourceVersion === undefined ? {} : { resourceVersion }) },
      spec: { holderIdentity: `cost-${i}`, leaseDurationSeconds: 40, renewTime: new Date().toISOString().replace('Z', '000Z') },
    });
    const latest: Lease[] = [];
    for (let i = 0; i < leases; i++) latest.push(await api.request<Lease>('POST', base, lease(i)));
    const http1 = (i: number): Promise<Lease> => api.request<Lease>('PUT', `${base}/cost-${i}`, lease(i, latest[i]!.metadata.resourceVersion));
    const http2Put = (i: number): Promise<Lease> =>
      new Promise((resolve, reject) => {
        const payload = Buffer.from(JSON.stringify(lease(i, latest[i]!.metadata.resourceVersion)));
        const headers: Record<string, string | number> = { ':method': 'PUT', ':path': `${base}/cost-${i}`, accept: 'application/json', 'content-type': 'application/json', 'content-length': payload.length };
        for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value as string;
        const stream = session.request(headers);
        const chunks: Buffer[] = [];
        let status = 0;
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => (status === 200 ? resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Lease) : reject(new Error(`${status}`))));
        stream.on('error', reject);
        stream.end(payload);
      });
    const run = async (put: (i: number) => Promise<Lease>, paced: boolean): Promise<number> => {
      const before = process.cpuUsage();
      const batch: Promise<void>[] = [];
      for (let k = 0; k < requests; k++) {
        const i = k % leases;
        if (paced) {
          latest[i] = await put(i);
          await sleep(5);
        } else {
          batch.push(put(i).then((l) => void (latest[i] = l)));
          if (batch.length === leases) await Promise.all(batch.splice(0));
        }
      }
      await Promise.all(batch);
      const used = process.cpuUsage(before);
      return (used.user + used.system) / requests;
    };
    const rows: string[] = [];
    for (let round = 1; round <= Number(values.rounds); round++) {
      for (const paced of [true, false]) {
        const h1 = await run(http1, paced);
        const h2 = await run(http2Put, paced);
        rows.push(`| ${round} | ${paced ? 'paced' : 'burst'} | ${h1.toFixed(0)} µs | ${h2.toFixed(0)} µs |`);
      }
    }
    process.stdout.write(`| round | pattern | node mode's client (HTTP/1.1 pool) | one HTTP/2 session |\n|---|---|---|---|\n${rows.join('\n')}\n`);
  } finally {
    session.destroy();
    api.close();
    await cp.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`api-transport-cost: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
