/**
 * Hands an upgraded connection (SPDY/3.1 or WebSocket) to the runtime's streaming server, as the
 * kubelet's proxyStream does (apimachinery pkg/util/proxy UpgradeAwareHandler with
 * upgradeRequired, v0.34): the client's request is sent to the URL the runtime returned (its path
 * and query, the client's headers), the streaming server's answer goes back to the client as it
 * is, and after a 101 the two connections are joined byte for byte. A request that is not an
 * upgrade is refused with "Upgrade request required". One difference, our own: the client's
 * Authorization header is not passed on (the streaming URL carries a single-use token).
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';

/** Headers a hop-by-hop proxy must not pass on, except the upgrade pair it keeps on purpose. */
const DROPPED: ReadonlySet<string> = new Set(['authorization', 'host', 'content-length', 'transfer-encoding', 'proxy-connection', 'keep-alive']);

export function isUpgradeRequest(req: IncomingMessage): boolean {
  const connection = String(req.headers.connection ?? '').toLowerCase().split(',').map((s) => s.trim());
  return connection.includes('upgrade') && typeof req.headers.upgrade === 'string' && req.headers.upgrade !== '';
}

function rawHead(statusCode: number, statusMessage: string, rawHeaders: readonly string[]): string {
  let head = `HTTP/1.1 ${statusCode} ${statusMessage}\r\n`;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) head += `${rawHeaders[i]}: ${rawHeaders[i + 1]}\r\n`;
  return `${head}\r\n`;
}

function withoutHeaders(rawHeaders: readonly string[], names: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (!names.includes(rawHeaders[i]!.toLowerCase())) kept.push(rawHeaders[i]!, rawHeaders[i + 1]!);
  }
  return kept;
}

function plainError(socket: Duplex, status: number, text: string): void {
  const body = Buffer.from(`${text}\n`);
  socket.end(`HTTP/1.1 ${status} ${status === 500 ? 'Internal Server Error' : 'Bad Gateway'}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.toString()}`);
}

/**
 * Proxies the upgrade request `req` (whose connection is `socket`, with `head` already read
 * from it) to `target`. Resolves when the exchange is over (either side closed).
 */
export function proxyUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: URL): Promise<void> {
  return new Promise((resolve) => {
    const headers: OutgoingHttpHeaders = {};
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!;
      if (DROPPED.has(name.toLowerCase())) continue;
      const existing = headers[name];
      headers[name] = existing === undefined ? req.rawHeaders[i + 1]! : ([] as string[]).concat(existing as string | string[], req.rawHeaders[i + 1]!);
    }
    headers['Host'] = target.host;
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    let settled = false;
    const done = (): void => {
      if (settled) return;
      settled = true;
      resolve();
    };
    const upstream = send(target, { method: req.method, headers, ...(target.protocol === 'https:' ? { rejectUnauthorized: false } : {}) });
    socket.on('error', () => upstream.destroy());
    socket.on('close', () => { upstream.destroy(); done(); });
    upstream.on('upgrade', (res, upstreamSocket, upstreamHead) => {
      socket.write(rawHead(res.statusCode ?? 101, res.statusMessage ?? 'Switching Protocols', res.rawHeaders));
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstreamSocket.write(head);
      upstreamSocket.pipe(socket);
      socket.pipe(upstreamSocket);
      upstreamSocket.on('error', () => socket.destroy());
      upstreamSocket.on('close', () => { socket.destroy(); done(); });
      socket.on('close', () => upstreamSocket.destroy());
    });
    upstream.on('response', (res) => {
      // The streaming server refused (unknown token, no common protocol, …): its answer as it is.
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const kept = withoutHeaders(res.rawHeaders, ['connection', 'keep-alive', 'transfer-encoding', 'content-length']);
        socket.write(rawHead(res.statusCode ?? 502, res.statusMessage ?? '', [...kept, 'Content-Length', String(body.length), 'Connection', 'close']));
        socket.end(body);
        done();
      });
      res.on('error', () => { socket.destroy(); done(); });
    });
    upstream.on('error', (err) => {
      // responder.Error of the kubelet server: 500 with the error text.
      if (!socket.destroyed) plainError(socket, 500, `error dialing backend: ${err.message}`);
      done();
    });
    upstream.end();
  });
}
