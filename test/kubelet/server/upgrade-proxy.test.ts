// The kubelet server's proxy of upgraded connections (apimachinery UpgradeAwareHandler semantics):
// a loopback server that accepts an upgrade and echoes bytes stands for the runtime's streaming
// server, and a client talks to it only through proxyUpgrade.
import { expect } from 'chai';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isUpgradeRequest, proxyUpgrade } from '../../../src/kubelet/server/upgrade-proxy.js';

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

describe('upgrade proxy to the streaming server', () => {
  let backend: Server;
  let front: Server;
  let backendPort: number;
  let frontPort: number;
  const seen: { url?: string; headers?: IncomingMessage['headers'] } = {};
  const sockets = new Set<Duplex>();

  before(async () => {
    backend = createServer((_req, res) => {
      res.writeHead(400);
      res.end();
    });
    backend.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
      seen.url = req.url;
      seen.headers = req.headers;
      sockets.add(socket);
      if (req.url === '/exec/unknown-token') {
        // pkg/cri/streaming: an unknown token is a 404.
        socket.end('HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 15\r\n\r\ntoken not found');
        return;
      }
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
      socket.on('error', () => {});
    });
    backendPort = await listen(backend);
    front = createServer();
    front.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      sockets.add(socket);
      const path = req.url === '/exec/missing' ? '/exec/unknown-token' : '/exec/Ab3dEf7h';
      void proxyUpgrade(req, socket, head, new URL(`http://127.0.0.1:${backendPort}${path}`));
    });
    frontPort = await listen(front);
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await Promise.all([new Promise((r) => backend.close(r)), new Promise((r) => front.close(r))]);
  });

  const upgrade = (path: string, headers: Record<string, string>): Promise<{ status: number; socket?: Socket; body?: string; headers: IncomingMessage['headers'] }> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: frontPort, path, method: 'POST', headers, agent: false });
      req.on('upgrade', (res, socket) => { sockets.add(socket); resolve({ status: res.statusCode ?? 0, socket, headers: res.headers }); });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => { body += c.toString(); });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      });
      req.on('error', reject);
      req.end();
    });

  it('joins the client to the streaming URL after its 101, passing the protocol headers but not the credentials', async () => {
    const res = await upgrade('/exec/default/web/app?command=whoami&output=1', {
      Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io', Authorization: 'Bearer secret',
    });
    expect(res.status).to.equal(101);
    expect(res.headers['x-stream-protocol-version']).to.equal('v4.channel.k8s.io');
    expect(seen.url).to.equal('/exec/Ab3dEf7h');
    expect(seen.headers?.['x-stream-protocol-version']).to.equal('v4.channel.k8s.io');
    expect(seen.headers?.authorization).to.equal(undefined);
    const reply = await new Promise<string>((resolve) => {
      res.socket!.once('data', (d: Buffer) => resolve(d.toString()));
      res.socket!.write('ping');
    });
    expect(reply).to.equal('echo:ping');
  });

  it('passes the streaming server\'s refusal back as it is', async () => {
    const res = await upgrade('/exec/missing', { Connection: 'Upgrade', Upgrade: 'SPDY/3.1' });
    expect([res.status, res.body]).to.deep.equal([404, 'token not found']);
  });

  it('answers 500 with the dial error when the streaming server is gone', async () => {
    const closed = createServer();
    const port = await listen(closed);
    await new Promise((r) => closed.close(r));
    const lone = createServer();
    lone.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      sockets.add(socket);
      void proxyUpgrade(req, socket, head, new URL(`http://127.0.0.1:${port}/exec/x`));
    });
    const lonePort = await listen(lone);
    try {
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: lonePort, path: '/exec/a/b/c', method: 'POST', headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1' }, agent: false });
        req.on('response', (r) => {
          let body = '';
          r.on('data', (c: Buffer) => { body += c.toString(); });
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(res.status).to.equal(500);
      expect(res.body).to.match(/^error dialing backend: connect ECONNREFUSED 127\.0\.0\.1:\d+\n$/);
    } finally {
      await new Promise((r) => lone.close(r));
    }
  });

  it('recognises an upgrade request by Connection: Upgrade and an Upgrade protocol', () => {
    const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
    expect(isUpgradeRequest(req({ connection: 'keep-alive, Upgrade', upgrade: 'websocket' }))).to.equal(true);
    expect(isUpgradeRequest(req({ connection: 'keep-alive' }))).to.equal(false);
    expect(isUpgradeRequest(req({ connection: 'Upgrade' }))).to.equal(false);
  });
});
