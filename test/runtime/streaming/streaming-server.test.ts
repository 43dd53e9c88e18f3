// The streaming server with raw clients: tokens, upgrade negotiation and its upstream texts,
// malformed and hostile input, and load (100 sessions at once), with nothing left afterwards.
import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { WebSocket } from 'ws';
import { RequestCache, TOKEN_TTL_MS } from '../../../src/runtime/streaming/request-cache.js';
import { v4Status } from '../../../src/runtime/streaming/remote-command.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox, type RuntimeFixture } from '../helpers.js';
import { waitUntil } from '../../support/wait.js';

/** Sends a raw HTTP request and returns everything the server wrote until it closed (or 5 s). */
function rawRequest(url: string, request: (path: string) => string, after?: (socket: Socket) => void): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: u.hostname, port: Number(u.port) });
    let data = '';
    const timer = setTimeout(() => { socket.destroy(); resolve(data); }, 5000);
    socket.on('connect', () => {
      socket.write(request(u.pathname));
      after?.(socket);
    });
    socket.on('data', (c: Buffer) => { data += c.toString('latin1'); });
    socket.on('error', reject);
    socket.on('close', () => { clearTimeout(timer); resolve(data); });
  });
}

const spdyUpgrade = (protocols: string[]) => (path: string): string =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n${protocols.map((p) => `X-Stream-Protocol-Version: ${p}\r\n`).join('')}\r\n`;

/** Runs an exec over WebSocket v5 and collects stdout and the status. */
function wsExec(url: string, input?: string): Promise<{ stdout: string; status: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v5.channel.k8s.io']);
    let stdout = '';
    let status = '';
    ws.on('open', () => {
      if (input !== undefined) {
        ws.send(Buffer.concat([Buffer.of(0), Buffer.from(input)]));
        ws.send(Buffer.of(255, 0));
      }
    });
    ws.on('message', (raw: Buffer) => {
      if (raw[0] === 1) stdout += raw.subarray(1).toString();
      if (raw[0] === 3) status += raw.subarray(1).toString();
    });
    ws.on('error', reject);
    ws.on('close', () => resolve({ stdout, status }));
  });
}

describe('runtime: streaming server', function () {
  this.timeout(30_000);
  let fx: RuntimeFixture;
  let container = '';
  beforeEach(async () => {
    fx = await openRuntime();
    await pull(fx.runtime, BUSYBOX);
    const sb = await runSandbox(fx.runtime);
    container = await createContainer(fx.runtime, sb, { command: ['sleep', '3600'] });
    await fx.runtime.startContainer({ container_id: container });
  });
  afterEach(async () => fx.close());

  const execUrl = async (cmd: string[], flags: Partial<{ stdin: boolean; tty: boolean; stderr: boolean }> = {}): Promise<string> =>
    (await fx.runtime.exec({ container_id: container, cmd, stdin: flags.stdin ?? false, stdout: true, stderr: flags.stderr ?? false, tty: flags.tty ?? false })).url ?? '';

  it('hands out /exec/{8 base64url characters} on the loopback streaming server', async () => {
    const url = await execUrl(['echo', 'hi']);
    expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/exec\/[A-Za-z0-9_-]{8}$/);
    expect(url.startsWith(fx.runtime.streamingUrl)).to.equal(true);
  });

  it('with streamingOnFirstUse listens at the first Exec, and its URL serves the session', async () => {
    const lazy = await openRuntime({ streamingOnFirstUse: true });
    try {
      await pull(lazy.runtime, BUSYBOX);
      const sb = await runSandbox(lazy.runtime);
      const id = await createContainer(lazy.runtime, sb, { command: ['sleep', '3600'] });
      await lazy.runtime.startContainer({ container_id: id });
      expect(lazy.runtime.streamingUrl).to.equal('');
      const { url } = await lazy.runtime.exec({ container_id: id, cmd: ['echo', 'hi'], stdin: false, stdout: true, stderr: false, tty: false });
      expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/exec\/[A-Za-z0-9_-]{8}$/);
      expect(url!.startsWith(lazy.runtime.streamingUrl)).to.equal(true);
      expect(await wsExec(url!)).to.deep.equal({ stdout: 'hi\n', status: '{"metadata":{},"status":"Success"}' });
      // The second call uses the same server.
      const second = await lazy.runtime.exec({ container_id: id, cmd: ['true'], stdin: false, stdout: true, stderr: false, tty: false });
      expect(second.url!.startsWith(lazy.runtime.streamingUrl)).to.equal(true);
    } finally {
      await lazy.close();
    }
  });

  it('checks requests with the kubelet streaming server\'s texts (server.go, v0.34)', async () => {
    const call = (over: object) => fx.runtime.exec({ container_id: container, cmd: ['true'], stdin: false, stdout: true, stderr: false, tty: false, ...over });
    expect((await rejection(call({ container_id: '' }))).message).to.equal('missing required container_id');
    expect((await rejection(call({ tty: true, stderr: true }))).message).to.equal('tty and stderr cannot both be true');
    expect((await rejection(call({ stdout: false }))).message).to.equal('one of stdin, stdout, or stderr must be set');
    expect((await rejection(fx.runtime.portForward({ pod_sandbox_id: '', port: [] }))).message).to.equal('missing required pod_sandbox_id');
  });

  it('runs exec over WebSocket v5 with stdin and the v4/v5 exit status', async () => {
    const ok = await wsExec(await execUrl(['cat'], { stdin: true }), 'piped\n');
    expect(ok).to.deep.equal({ stdout: 'piped\n', status: '{"metadata":{},"status":"Success"}' });
    const failed = await wsExec(await execUrl(['sh', '-c', 'exit 7']));
    expect(JSON.parse(failed.status)).to.deep.equal({
      metadata: {},
      status: 'Failure',
      message: 'command terminated with non-zero exit code: error executing command [sh -c exit 7], exit code 7',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '7' }] },
    });
  });

  it('answers 404 to an unknown token and to a token used once already', async () => {
    const url = await execUrl(['echo', 'once']);
    expect((await wsExec(url)).stdout).to.equal('once\n');
    const reused = await rawRequest(url, spdyUpgrade(['v4.channel.k8s.io']));
    expect(reused).to.match(/^HTTP\/1\.1 404 /);
    const unknown = await rawRequest(`${fx.runtime.streamingUrl}/exec/AAAAAAAA`, (p) => `GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(unknown).to.match(/^HTTP\/1\.1 404 /);
    expect(unknown).to.contain('404 page not found');
  });

  it('tokens expire after a minute (request_cache.go TTL) and at most 1000 wait at once', () => {
    let now = 0;
    const cache = new RequestCache<string>(() => now);
    const token = cache.insert('exec', 'a');
    expect(token).to.match(/^[A-Za-z0-9_-]{8}$/);
    now = TOKEN_TTL_MS + 1;
    expect(cache.consume('exec', token)).to.equal(undefined);
    now = 0;
    for (let i = 0; i < 1000; i++) cache.insert('exec', String(i));
    expect(() => cache.insert('exec', 'x')).to.throw('maximum number of in-flight requests exceeded');
  });

  it('refuses an upgrade without a protocol (400) and one it cannot negotiate (403, with the accepted list)', async () => {
    const none = await rawRequest(await execUrl(['true']), spdyUpgrade([]));
    expect(none).to.match(/^HTTP\/1\.1 400 /);
    expect(none).to.contain('unable to upgrade: X-Stream-Protocol-Version is required');
    const unknown = await rawRequest(await execUrl(['true']), spdyUpgrade(['v9.channel.k8s.io']));
    expect(unknown).to.match(/^HTTP\/1\.1 403 /);
    expect(unknown).to.contain('X-Accepted-Stream-Protocol-Versions: v4.channel.k8s.io');
    // httpstream.Handshake's text (k8s.io/apimachinery pkg/util/httpstream/httpstream.go, v0.34).
    expect(unknown).to.contain('unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], server accepts [v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]');
    const ws = await rawRequest(await execUrl(['true']), (p) =>
      `GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: base64.channel.k8s.io\r\n\r\n`);
    expect(ws).to.match(/^HTTP\/1\.1 403 /);
    expect(ws).to.contain('requested protocol(s) are not supported: [base64.channel.k8s.io]; supports [v5.channel.k8s.io v4.channel.k8s.io channel.k8s.io]');
    const garbage = await rawRequest(fx.runtime.streamingUrl, () => 'NOT HTTP AT ALL\r\n\r\n');
    expect(garbage).to.match(/^HTTP\/1\.1 400 /);
    // The server still serves.
    expect((await wsExec(await execUrl(['echo', 'alive']))).stdout).to.equal('alive\n');
  });

  it('ends a SPDY connection that sends an oversized frame (GOAWAY), and keeps serving', async () => {
    const reply = await rawRequest(await execUrl(['sleep', '60']), spdyUpgrade(['v4.channel.k8s.io']), (socket) => {
      // A data frame announcing 16 MiB - 1 on stream 1.
      socket.write(Buffer.from([0, 0, 0, 1, 0, 0xff, 0xff, 0xff]));
    });
    expect(reply).to.match(/^HTTP\/1\.1 101 Switching Protocols/);
    // GOAWAY (control, version 3, type 7) with status PROTOCOL_ERROR (1).
    const goaway = Buffer.from(reply.slice(reply.indexOf('\r\n\r\n') + 4), 'latin1');
    expect([...goaway.subarray(0, 4)]).to.deep.equal([0x80, 3, 0, 7]);
    expect(goaway.readUInt32BE(12)).to.equal(1);
    expect((await wsExec(await execUrl(['echo', 'alive']))).stdout).to.equal('alive\n');
  });

  it('ends the session of a client that never reads, and kills its command', async () => {
    const line = 'x'.repeat(64 * 1024);
    const url = await execUrl(['sh', '-c', `while true; do echo ${line}; done`]);
    const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v5.channel.k8s.io']);
    await new Promise((r) => ws.once('open', r));
    // Stop reading: the runtime's socket buffer fills, then its backlog passes the limit.
    (ws as unknown as { _socket: Socket })._socket.pause();
    const deadline = Date.now() + 20_000;
    const execs = () => fx.runtime.context.containers.get(container)?.live.execs?.size ?? 0;
    while (execs() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(execs()).to.equal(0);
    ws.terminate();
    expect((await wsExec(await execUrl(['echo', 'alive']))).stdout).to.equal('alive\n');
  });

  it('serves 100 exec sessions at once and leaves no process or session behind', async () => {
    const urls = await Promise.all(Array.from({ length: 100 }, (_, i) => execUrl(['sh', '-c', `sleep 0.2; echo session ${i}`])));
    const results = await Promise.all(urls.map((u) => wsExec(u)));
    expect(results.map((r) => r.stdout)).to.deep.equal(urls.map((_, i) => `session ${i}\n`));
    expect(fx.runtime.context.containers.get(container)?.live.execs?.size ?? 0).to.equal(0);
    // A session ends when the server has seen its socket close, a moment after the client has.
    await waitUntil('the sessions to end', () => fx.runtime.context.streaming.activeSessions === 0).catch(() => undefined);
    expect(fx.runtime.context.streaming.activeSessions).to.equal(0);
  });

  it('formats an error that kept the command from running as an internal error (v4)', () => {
    expect(JSON.parse(v4Status({ error: 'boom' }))).to.deep.equal({
      metadata: {},
      status: 'Failure',
      message: 'Internal error occurred: error executing command in container: boom',
      reason: 'InternalError',
      details: { causes: [{ message: 'error executing command in container: boom' }] },
      code: 500,
    });
  });
});
