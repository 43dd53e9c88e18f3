// The node-mode API client (src/kubelet/node/api-client.ts) against a stand-in HTTPS server on
// 127.0.0.1 with a self-signed certificate: a watch's lines decoded whole when a character's bytes
// are split between two chunks, and the unreachable server named. The node-mode suites run the
// same client against the real API server.
import { expect } from 'chai';
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient, ApiUnreachableError, type WatchEvent } from '../../src/kubelet/node/api-client.js';
import { selfSignedServingCertificate } from '../support/control-plane.js';

async function kubeconfig(dir: string, server: string, caFile: string): Promise<string> {
  const ca = (await readFile(caFile)).toString('base64');
  const file = join(dir, 'kubeconfig');
  await writeFile(
    file,
    `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: { server: "${server}", certificate-authority-data: ${ca} }
users:
- name: u
  user: { token: the-token }
contexts:
- name: x
  context: { cluster: c, user: u }
current-context: x
`,
  );
  return file;
}

describe('node-mode API client', function () {
  let dir: string;
  let tls: { cert: Buffer; key: Buffer; certFile: string };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'api-transport-'));
    const files = await selfSignedServingCertificate(dir, 'stand-in');
    tls = { cert: await readFile(files.cert), key: await readFile(files.key), certFile: files.cert };
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('decodes a watch line whose character is split between two chunks, with the bearer token', async () => {
    const auth: (string | undefined)[] = [];
    // "é" is two bytes in UTF-8: the first chunk ends between them.
    const line = Buffer.from(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'café' } } })}\n`, 'utf8');
    const split = line.indexOf(Buffer.from('é', 'utf8')) + 1;
    const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      auth.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url?.includes('watch=1')) {
        res.write(line.subarray(0, split));
        setTimeout(() => res.end(line.subarray(split)), 50);
      } else {
        res.end('{"kind":"Status"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const api = await ApiClient.load({ kubeconfig: await kubeconfig(dir, `https://127.0.0.1:${(server.address() as AddressInfo).port}`, tls.certFile) });
    try {
      expect(await api.get('/api/v1/namespaces')).to.deep.equal({ kind: 'Status' });
      const events: WatchEvent<{ metadata: { name: string } }>[] = [];
      await api.watch<{ metadata: { name: string } }>('/api/v1/pods?watch=1', (e) => events.push(e), new AbortController().signal);
      expect(events.map((e) => e.object.metadata.name)).to.deep.equal(['café']);
      expect(auth).to.deep.equal(['Bearer the-token', 'Bearer the-token']);
    } finally {
      api.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('names the server it cannot reach', async () => {
    const api = await ApiClient.load({ kubeconfig: await kubeconfig(dir, 'https://127.0.0.1:1', tls.certFile) });
    try {
      const err = await api.get('/api').then(() => undefined, (e: unknown) => e);
      expect(err).to.be.instanceOf(ApiUnreachableError);
      expect((err as Error).message).to.equal(`cannot reach the API server of kubeconfig ${join(dir, 'kubeconfig')} (server https://127.0.0.1:1): connect ECONNREFUSED 127.0.0.1:1`);
    } finally {
      api.close();
    }
  });
});
