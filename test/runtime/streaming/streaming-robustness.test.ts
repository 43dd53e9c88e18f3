// The streaming server under bad input and load: malformed and unnegotiable upgrades answered
// with the upstream texts, oversized SPDY frames and WebSocket messages, clients that never read
// (what the server holds stays bounded and the pod's sender is held back), and 100 exec
// sessions and 100 port-forward streams at once, with nothing left once the pod is removed.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { WebSocket } from 'ws';
import { BUSYBOX, createContainer, openRuntime, pull, runSandbox, type RuntimeFixture } from '../helpers.js';
import { SpdyTestClient, textOf, type ClientStream } from './spdy-client.js';

const NGINX = 'registry.k8s.io/e2e-test-images/nginx:1.14-2';
/** What the runtime may queue per connection before it stops reading the pod, and its largest read. */
const HIGH_WATER = 256 * 1024;
const MAX_READ = 256 * 1024;

/** Sends raw bytes and returns everything the server wrote until it closed (or 5 s). */
function raw(url: string, request: (path: string, host: string) => string | Buffer): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: u.hostname, port: Number(u.port) });
    let data = '';
    const timer = setTimeout(() => { socket.destroy(); resolve(data); }, 5000);
    socket.on('connect', () => socket.write(request(u.pathname, u.host)));
    socket.on('data', (c: Buffer) => { data += c.toString('latin1'); });
    socket.on('error', reject);
    socket.on('close', () => { clearTimeout(timer); resolve(data); });
  });
}

const body = (response: string): string => response.slice(response.indexOf('\r\n\r\n') + 4);
const statusLine = (response: string): string => response.slice(0, response.indexOf('\r\n'));
const headerValues = (response: string, name: string): string[] =>
  response.slice(0, response.indexOf('\r\n\r\n')).split('\r\n').filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}: `)).map((l) => l.slice(name.length + 2));

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await sleep(50);
}

/** Opens a WebSocket and resolves once open (or rejects with the handshake's failure). */
function openWs(url: string, protocols: string[]): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), protocols);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** The most a TCP connection over loopback can hold in the kernel (send plus receive buffer). */
function kernelBufferLimit(): number {
  const max = (file: string): number => Number(readFileSync(file, 'utf8').trim().split(/\s+/)[2]);
  return max('/proc/sys/net/ipv4/tcp_wmem') + max('/proc/sys/net/ipv4/tcp_rmem');
}

/** Active libuv handles of this process (sockets, servers, timers, child processes). */
const activeHandles = (): number => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length;

describe('runtime: streaming server under bad input and load', function () {
  this.timeout(60_000);
  let fx: RuntimeFixture;
  let sandbox: Awaited<ReturnType<typeof runSandbox>>;
  let container = '';
  let podIp = '';
  const servers: Server[] = [];
  const clients: { destroy(): void }[] = [];

  beforeEach(async () => {
    fx = await openRuntime();
    await pull(fx.runtime, BUSYBOX);
    sandbox = await runSandbox(fx.runtime);
    container = await createContainer(fx.runtime, sandbox, { command: ['sleep', '3600'] });
    await fx.runtime.startContainer({ container_id: container });
    podIp = (await fx.runtime.podSandboxStatus({ pod_sandbox_id: sandbox.id, verbose: false })).status?.network?.ip ?? '';
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
    await fx.close();
  });

  const execUrl = async (cmd: string[], stdin = false): Promise<string> =>
    (await fx.runtime.exec({ container_id: container, cmd, stdin, stdout: true, stderr: false, tty: false })).url ?? '';
  const portForwardUrl = async (ports: number[] = []): Promise<string> =>
    (await fx.runtime.portForward({ pod_sandbox_id: sandbox.id, port: ports })).url ?? '';
  const spdyRequest = (headers: string[], method = 'POST') => (path: string, host: string): string =>
    `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;

  /** A server "in the pod" (on its IP): `onConnection` gets each accepted socket. */
  async function podServer(port: number, onConnection: (socket: Socket) => void): Promise<Server> {
    const server = createServer((socket) => {
      socket.on('error', () => socket.destroy());
      onConnection(socket);
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(port, podIp, r));
    return server;
  }

  describe('malformed and unnegotiable upgrades get the upstream answers', () => {
    // Each case: the request, then the status line and body the kubelet's streaming server
    // (k8s.io/kubelet pkg/cri/streaming, v0.34) sends for it.
    const cases: { name: string; kind: 'exec' | 'portforward'; request: (path: string, host: string) => string; status: string; body: string; source: string }[] = [
      {
        name: 'SPDY exec without X-Stream-Protocol-Version',
        kind: 'exec',
        request: spdyRequest(['Connection: Upgrade', 'Upgrade: SPDY/3.1']),
        status: 'HTTP/1.1 400 Bad Request',
        body: 'unable to upgrade: X-Stream-Protocol-Version is required\n',
        source: 'apimachinery v0.34 pkg/util/httpstream/httpstream.go (Handshake), remotecommand/httpstream.go (400)',
      },
      {
        name: 'SPDY exec with a protocol but Upgrade: h2c',
        kind: 'exec',
        request: spdyRequest(['Connection: Upgrade', 'Upgrade: h2c', 'X-Stream-Protocol-Version: v4.channel.k8s.io']),
        status: 'HTTP/1.1 400 Bad Request',
        body: 'unable to upgrade: missing upgrade headers in request: http.Header{"Connection":[]string{"Upgrade"}, "Upgrade":[]string{"h2c"}, "X-Stream-Protocol-Version":[]string{"v4.channel.k8s.io"}}\n',
        source: 'apimachinery v0.34 pkg/util/httpstream/spdy/upgrade.go (UpgradeResponse, %#v of the headers)',
      },
      {
        name: 'a plain POST (no Connection: Upgrade) with a protocol',
        kind: 'exec',
        request: spdyRequest(['X-Stream-Protocol-Version: v4.channel.k8s.io', 'Content-Length: 0', 'Connection: close']),
        status: 'HTTP/1.1 400 Bad Request',
        body: 'unable to upgrade: missing upgrade headers in request: http.Header{"Connection":[]string{"close"}, "Content-Length":[]string{"0"}, "X-Stream-Protocol-Version":[]string{"v4.channel.k8s.io"}}\n',
        source: 'apimachinery v0.34 pkg/util/httpstream/spdy/upgrade.go',
      },
      {
        name: 'SPDY exec offering only unknown protocols (the text twice: Handshake and then createHTTPStreamStreams write it)',
        kind: 'exec',
        request: spdyRequest(['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v9.channel.k8s.io, v8.channel.k8s.io']),
        status: 'HTTP/1.1 403 Forbidden',
        body: 'unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io v8.channel.k8s.io], server accepts [v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]\n'.repeat(2),
        source: 'apimachinery v0.34 pkg/util/httpstream/httpstream.go; kubelet v0.34 pkg/cri/streaming/remotecommand/httpstream.go',
      },
      {
        name: 'SPDY port-forward offering an unknown protocol',
        kind: 'portforward',
        request: spdyRequest(['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: portforward.k8s.io.v2']),
        status: 'HTTP/1.1 403 Forbidden',
        body: 'unable to upgrade: unable to negotiate protocol: client supports [portforward.k8s.io.v2], server accepts [portforward.k8s.io]\n',
        source: 'apimachinery v0.34 pkg/util/httpstream/httpstream.go; kubelet v0.34 pkg/cri/streaming/portforward/httpstream.go',
      },
      {
        name: 'SPDY port-forward without a protocol (the error is only logged: an empty 200)',
        kind: 'portforward',
        request: spdyRequest(['Connection: Upgrade', 'Upgrade: SPDY/3.1']),
        status: 'HTTP/1.1 200 OK',
        body: '',
        source: 'kubelet v0.34 pkg/cri/streaming/portforward/portforward.go (ServePortForward logs handleHTTPStreams\'s error)',
      },
      {
        name: 'WebSocket port-forward offering an unknown protocol',
        kind: 'portforward',
        request: spdyRequest(['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: base64.channel.k8s.io'], 'GET'),
        status: 'HTTP/1.1 403 Forbidden',
        // golang.org/x/net/websocket sends the 403 alone; the text is wsstream's (conn.go), ours to add.
        body: 'requested protocol(s) are not supported: [base64.channel.k8s.io]; supports [SPDY/3.1+portforward.k8s.io v4.channel.k8s.io channel.k8s.io]\n',
        source: 'apimachinery v0.34 pkg/util/httpstream/wsstream/conn.go (handshake)',
      },
    ];
    for (const c of cases) {
      it(`${c.name}: ${c.status.slice(9)}`, async () => {
        const url = c.kind === 'exec' ? await execUrl(['true']) : await portForwardUrl([80]);
        const response = await raw(url, c.request);
        expect(statusLine(response), c.source).to.equal(c.status);
        expect(body(response), c.source).to.equal(c.body);
        if (c.status.includes('403') && !c.request('/', 'x').includes('websocket')) {
          expect(headerValues(response, 'X-Accepted-Stream-Protocol-Versions')).to.deep.equal(
            c.kind === 'exec' ? ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] : ['portforward.k8s.io']);
        }
        // The token was used up by the failed attempt (request_cache.go Consume).
        expect(statusLine(await raw(url, c.request))).to.equal('HTTP/1.1 404 Not Found');
      });
    }

    it('answers bytes that are not HTTP as Go\'s net/http does, and keeps serving', async () => {
      const response = await raw(fx.runtime.streamingUrl, () => Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a]));
      expect(response).to.equal('HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request');
      const ws = new WebSocket((await execUrl(['echo', 'alive'])).replace(/^http/, 'ws'));
      let out = '';
      ws.on('message', (m: Buffer) => { if (m[0] === 1) out += m.subarray(1).toString(); });
      await new Promise((r) => ws.once('close', r));
      // No Sec-WebSocket-Protocol is the kubelet's "" entry: channel.k8s.io.
      expect(out).to.equal('alive\n');
    });

    it('ends a SPDY connection whose bytes after the upgrade are not SPDY/3 frames (GOAWAY PROTOCOL_ERROR)', async () => {
      const client = await SpdyTestClient.open(await execUrl(['sleep', '60']), ['v4.channel.k8s.io']);
      clients.push(client.socket);
      const goaway = new Promise<number>((r) => client.once('goaway', r));
      // A control frame of SPDY version 2.
      client.socket.write(Buffer.from([0x80, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x0a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
      expect(await goaway).to.equal(1);
      await new Promise((r) => (client.closed ? r(undefined) : client.once('close', r)));
      await until(() => fx.runtime.context.streaming.activeSessions === 0, 5000);
      expect(fx.runtime.context.streaming.activeSessions).to.equal(0);
    });
  });

  describe('oversized frames and messages', () => {
    it('ends a port-forward SPDY connection that announces a DATA frame over 1 MiB', async () => {
      const client = await SpdyTestClient.open(await portForwardUrl(), ['portforward.k8s.io']);
      clients.push(client.socket);
      const goaway = new Promise<number>((r) => client.once('goaway', r));
      const head = Buffer.alloc(8);
      head.writeUInt32BE(1, 0);
      head.writeUInt32BE((1 << 20) + 1, 4);
      client.socket.write(head);
      expect(await goaway).to.equal(1);
      await until(() => fx.runtime.context.streaming.activeSessions === 0, 5000);
      expect(fx.runtime.context.streaming.activeSessions).to.equal(0);
    });

    it('closes a WebSocket that sends a message over 1 MiB (1009) and kills the exec it carried', async () => {
      const ws = await openWs(await execUrl(['cat'], true), ['v5.channel.k8s.io']);
      clients.push({ destroy: () => ws.terminate() });
      const closed = new Promise<number>((r) => ws.once('close', (code: number) => r(code)));
      ws.send(Buffer.concat([Buffer.of(0), Buffer.alloc((1 << 20) + 1, 97)]));
      expect(await closed).to.equal(1009);
      const execs = (): number => fx.runtime.context.containers.get(container)?.live.execs?.size ?? 0;
      await until(() => execs() === 0 && fx.runtime.context.streaming.activeSessions === 0, 5000);
      expect(execs()).to.equal(0);
      expect(fx.runtime.context.streaming.activeSessions).to.equal(0);
    });
  });

  describe('a client that never reads', () => {
    /** A pod server that writes as fast as it may; `sent()` is what its sockets accepted. */
    async function floodServer(port: number): Promise<{ sent: () => number }> {
      let sent = 0;
      const chunk = Buffer.alloc(64 * 1024, 120);
      await podServer(port, (socket) => {
        const pump = (): void => {
          while (!socket.destroyed) {
            sent += chunk.length;
            if (!socket.write(chunk)) {
              socket.once('drain', pump);
              return;
            }
          }
        };
        pump();
      });
      return { sent: () => sent };
    }

    /** Waits until `sent` stops growing (the forward holds the sender back) and returns it. */
    async function stalled(sent: () => number): Promise<number> {
      let last = -1;
      let still = 0;
      const deadline = Date.now() + 20_000;
      while (still < 4 && Date.now() < deadline) {
        await sleep(250);
        const now = sent();
        still = now === last ? still + 1 : 0;
        last = now;
      }
      expect(still, `the pod's sender never stopped (${sent()} bytes accepted)`).to.equal(4);
      return last;
    }

    // Two loopback connections (pod to runtime, runtime to client) can hold this much in the
    // kernel; what the runtime itself holds is its high-water mark and one read.
    const bound = (): number => 2 * kernelBufferLimit() + 1024 * 1024;

    it('over SPDY: the pod\'s sender is held back and the server holds at most its high-water mark', async () => {
      const flood = await floodServer(9100);
      const client = await SpdyTestClient.open(await portForwardUrl(), ['portforward.k8s.io']);
      clients.push(client.socket);
      await client.openStream({ streamType: 'error', port: '9100', requestID: '0' });
      const data = await client.openStream({ streamType: 'data', port: '9100', requestID: '0' });
      await until(() => data.chunks.length > 0, 5000);
      client.socket.pause();
      const sent = await stalled(flood.sent);
      expect(sent).to.be.below(bound());
      expect(fx.runtime.context.streaming.bufferedBytes).to.be.at.most(HIGH_WATER + MAX_READ + 64 * 1024);
      client.close();
      await until(() => fx.runtime.context.network.forwards.count() === 0 && fx.runtime.context.streaming.activeSessions === 0, 5000);
      expect(fx.runtime.context.network.forwards.count()).to.equal(0);
      expect(fx.runtime.context.streaming.activeSessions).to.equal(0);
    });

    it('over WebSocket channels: the same bound', async () => {
      const flood = await floodServer(9101);
      const ws = await openWs(await portForwardUrl([9101]), ['v4.channel.k8s.io']);
      clients.push({ destroy: () => ws.terminate() });
      let messages = 0;
      ws.on('message', () => messages++);
      await until(() => messages > 2, 5000);
      (ws as unknown as { _socket: Socket })._socket.pause();
      const sent = await stalled(flood.sent);
      expect(sent).to.be.below(bound());
      expect(fx.runtime.context.streaming.bufferedBytes).to.be.at.most(HIGH_WATER + MAX_READ + 64 * 1024);
      ws.terminate();
      await until(() => fx.runtime.context.network.forwards.count() === 0 && fx.runtime.context.streaming.activeSessions === 0, 5000);
      expect(fx.runtime.context.network.forwards.count()).to.equal(0);
      expect(fx.runtime.context.streaming.activeSessions).to.equal(0);
    });
  });

  describe('load', () => {
    it('serves 100 SPDY exec sessions at once, each with its own output, and leaves none behind', async () => {
      const urls = await Promise.all(Array.from({ length: 100 }, (_, i) => execUrl(['sh', '-c', `sleep 0.1; echo spdy session ${i}`])));
      const outputs = await Promise.all(urls.map(async (url) => {
        const client = await SpdyTestClient.open(url, ['v4.channel.k8s.io']);
        clients.push(client.socket);
        const error = await client.openStream({ streamType: 'error' });
        const stdout = await client.openStream({ streamType: 'stdout' });
        await client.ended(error);
        await client.ended(stdout);
        client.close();
        return { stdout: textOf(stdout), status: textOf(error) };
      }));
      expect(outputs.map((o) => o.stdout)).to.deep.equal(urls.map((_, i) => `spdy session ${i}\n`));
      expect(outputs.every((o) => JSON.parse(o.status).status === 'Success')).to.equal(true);
      await until(() => fx.runtime.context.streaming.activeSessions === 0, 5000);
      expect(fx.runtime.context.streaming.activeSessions).to.equal(0);
      expect(fx.runtime.context.containers.get(container)?.live.execs?.size ?? 0).to.equal(0);
    });

    it('carries 100 port-forward streams at once (SPDY and WebSocket) to nginx, and leaves nothing once the pod is removed', async () => {
      // nginx in a pod of its own: its listener is the pod's, closed when the pod stops.
      await pull(fx.runtime, NGINX);
      const web = await runSandbox(fx.runtime);
      const nginx = await createContainer(fx.runtime, web, {}, NGINX);
      await fx.runtime.startContainer({ container_id: nginx });
      const webIp = (await fx.runtime.podSandboxStatus({ pod_sandbox_id: web.id, verbose: false })).status?.network?.ip ?? '';
      await until(() => false, 100);
      const handlesBefore = activeHandles();
      const get = 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

      // 50 stream pairs on one SPDY connection.
      const client = await SpdyTestClient.open((await fx.runtime.portForward({ pod_sandbox_id: web.id, port: [] })).url ?? '', ['portforward.k8s.io']);
      clients.push(client.socket);
      const spdy = Array.from({ length: 50 }, async (_, i): Promise<string> => {
        await client.openStream({ streamType: 'error', port: '80', requestID: String(i) });
        const data: ClientStream = await client.openStream({ streamType: 'data', port: '80', requestID: String(i) });
        client.write(data.id, get, true);
        await client.ended(data);
        return textOf(data);
      });
      // 50 WebSocket connections (the kubelet's channels, one port each).
      const websocket = Array.from({ length: 50 }, async (): Promise<string> => {
        const url = (await fx.runtime.portForward({ pod_sandbox_id: web.id, port: [80] })).url ?? '';
        // Listeners first: the port messages may come with the handshake's answer.
        const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v4.channel.k8s.io']);
        clients.push({ destroy: () => ws.terminate() });
        let text = '';
        let port = -1;
        ws.on('message', (m: Buffer) => {
          if (m[0] !== 0) return;
          // The data channel's first message is its port (uint16 little-endian).
          if (port < 0) port = m.readUInt16LE(1);
          else text += m.subarray(1).toString();
        });
        await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
        ws.send(Buffer.concat([Buffer.of(0), Buffer.from(get)]));
        await new Promise((r) => ws.once('close', r));
        expect(port).to.equal(80);
        return text;
      });
      const answers = await Promise.all([...spdy, ...websocket]);
      expect(answers.filter((a) => a.startsWith('HTTP/1.1 200 OK') && a.includes('Welcome to nginx!'))).to.have.length(100);
      client.close();

      await fx.runtime.stopPodSandbox({ pod_sandbox_id: web.id });
      await fx.runtime.removePodSandbox({ pod_sandbox_id: web.id });
      await until(() => fx.runtime.context.streaming.activeSessions === 0 && activeHandles() <= handlesBefore, 5000);
      expect(fx.runtime.context.streaming.activeSessions).to.equal(0);
      expect(fx.runtime.context.network.forwards.count()).to.equal(0);
      expect(activeHandles(), 'libuv handles (sockets, listeners) of this process').to.be.at.most(handlesBefore);
      // Nothing listens on the pod's address any more.
      const refused = await new Promise<string>((resolve) => {
        const s = connect({ host: webIp, port: 80 });
        s.on('connect', () => { s.destroy(); resolve('connected'); });
        s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      });
      expect(refused).to.equal('ECONNREFUSED');
    });
  });
});
