// The API client's transport (src/kubelet/node/api-transport.ts): one HTTP/2 connection for every
// request and watch when the server picks h2 by ALPN (as client-go's transport does against
// kube-apiserver), HTTP/1.1 with a keep-alive pool when it does not; a watch's lines decoded
// whole when a character's bytes are split between two chunks. Stand-in servers on 127.0.0.1
// with a self-signed certificate; the node-mode suites run the same client against the real API
// server.
import { expect } from 'chai';
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
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

describe('API client transport', function () {
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

  it('sends every request over one HTTP/2 connection when the server picks h2, with the bearer token', async () => {
    const sessions: http2.ServerHttp2Session[] = [];
    const seen: { version: string; auth: string | undefined; method: string; body: string }[] = [];
    const server = http2.createSecureServer({ cert: tls.cert, key: tls.key, allowHTTP1: true }, (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ version: req.httpVersion, auth: req.headers.authorization, method: req.method, body });
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ kind: 'Status', path: req.url }));
      });
    });
    server.on('session', (s) => sessions.push(s));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const api = await ApiClient.load({ kubeconfig: await kubeconfig(dir, `https://127.0.0.1:${(server.address() as AddressInfo).port}`, tls.certFile) });
    try {
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => api.request<{ path: string }>('PUT', `/api/v1/namespaces/default/things/t${i}`, { n: i })));
      expect(answers.map((a) => a.path)).to.deep.equal(Array.from({ length: 50 }, (_, i) => `/api/v1/namespaces/default/things/t${i}`));
      expect(seen).to.have.length(50);
      for (const s of seen) {
        expect(s.version).to.equal('2.0');
        expect(s.auth).to.equal('Bearer the-token');
        expect(s.method).to.equal('PUT');
      }
      expect(seen.map((s) => JSON.parse(s.body) as { n: number }).map((b) => b.n).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 50 }, (_, i) => i));
      expect(sessions).to.have.length(1);
    } finally {
      api.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('falls back to HTTP/1.1 for a server without h2, and decodes a watch line whose character is split between chunks', async () => {
    const versions: string[] = [];
    // "é" is two bytes in UTF-8: the first chunk ends between them.
    const line = Buffer.from(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'café' } } })}\n`, 'utf8');
    const split = line.indexOf(Buffer.from('é', 'utf8')) + 1;
    const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      versions.push(req.httpVersion);
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
      expect(versions).to.deep.equal(['1.1', '1.1']);
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
