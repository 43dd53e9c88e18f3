import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../../log.js';
import { RuntimeError } from '../errors.js';
import {
  SPDY_REMOTE_COMMAND_PROTOCOLS,
  SpdyRemoteCommandSession,
  WEBSOCKET_REMOTE_COMMAND_PROTOCOLS,
  WebSocketRemoteCommandSession,
  type RemoteCommandOptions,
  type RemoteCommandSession,
} from './remote-command.js';
import { RequestCache, type StreamingKind } from './request-cache.js';
import { SpdyConnection } from './spdy-connection.js';
import type { SpdyStream } from './spdy-stream.js';
import { serveWebSocketPortForward, WEBSOCKET_PORT_FORWARD_PROTOCOLS, type PortStream } from './websocket-port-forward.js';

/** Port-forward's protocol, over SPDY and tunnelled through WebSocket by kubectl and crictl. */
export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';
const SPDY_TUNNEL_PROTOCOL = `SPDY/3.1+${PORT_FORWARD_PROTOCOL}`;
const TUNNEL_ALIAS = 'cri-winsim.spdy-tunnel';
/** How long a client may take to open the streams it announced (kubelet's StreamCreationTimeout). */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;
/** Sessions served at once; more get 429 (our bound; the kubelet bounds tokens only). */
export const MAX_ACTIVE_SESSIONS = 512;
/** Port-forward streams per connection; more are refused (our bound). */
export const MAX_FORWARDS_PER_CONNECTION = 128;

/** A request waiting for its client, created by Exec, Attach or PortForward. */
export type PendingStream =
  | { kind: 'exec' | 'attach'; options: RemoteCommandOptions; start(session: RemoteCommandSession): void }
  | { kind: 'portforward'; ports: readonly number[]; forward(port: number, data: PortStream, error: PortStream): void };

/**
 * The runtime's streaming server (the role of the kubelet's pkg/cri/streaming that containerd
 * embeds): Exec, Attach and PortForward hand out `/exec|attach|portforward/{token}` URLs; the
 * client upgrades to SPDY/3.1 or WebSocket and the session runs here.
 */
export class StreamingServer {
  private readonly cache = new RequestCache<PendingStream>();
  private readonly server: Server;
  private readonly ws = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  private readonly sockets = new Set<Socket | Duplex>();
  private readonly sessions = new Set<{ abort(): void; buffered(): number }>();
  private base = '';

  private constructor(private readonly logger: Logger) {
    this.ws.on('headers', (headers: string[]) => {
      const at = headers.indexOf(`Sec-WebSocket-Protocol: ${TUNNEL_ALIAS}`);
      if (at >= 0) headers[at] = `Sec-WebSocket-Protocol: ${SPDY_TUNNEL_PROTOCOL}`;
    });
    this.server = createServer((req, res) => this.onRequest(req, res));
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket, head));
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server.on('clientError', (_err, socket: Duplex) => {
      // Go's net/http answer to a request it cannot parse (Go's net/http/server.go).
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request');
      else socket.destroy();
    });
  }

  /** Listens on `host:port` (loopback only; port 0 picks a free one). */
  static async listen(address: string, logger: Logger): Promise<StreamingServer> {
    const { host, port } = parseStreamingAddress(address);
    const server = new StreamingServer(logger);
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.server.listen(port, host, () => {
        server.server.off('error', reject);
        resolve();
      });
    });
    const bound = server.server.address() as AddressInfo;
    server.base = `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
    logger.info({ url: server.base }, 'streaming server listening');
    return server;
  }

  get url(): string {
    return this.base;
  }

  get activeSessions(): number {
    return this.sessions.size;
  }

  /** Bytes written to sessions that their clients have not taken yet, over all sessions. */
  get bufferedBytes(): number {
    let n = 0;
    for (const session of this.sessions) n += session.buffered();
    return n;
  }

  /** Registers a request and returns the URL its client must open (single use, one minute). */
  register(pending: PendingStream): string {
    const token = this.cache.insert(pending.kind, pending);
    return `${this.base}/${pending.kind}/${token}`;
  }

  async close(): Promise<void> {
    this.cache.clear();
    for (const session of [...this.sessions]) session.abort();
    for (const socket of this.sockets) socket.destroy();
    for (const client of this.ws.clients) client.terminate();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.ws.close();
  }

  private route(url: string | undefined): { kind: StreamingKind; token: string } | undefined {
    const m = /^\/(exec|attach|portforward)\/([A-Za-z0-9_-]+)\/?(?:\?.*)?$/.exec(url ?? '');
    if (m === null) return undefined;
    return { kind: m[1] as StreamingKind, token: m[2] as string };
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.dispatch(req, {
      send: (status, body, headers = {}) => {
        res.writeHead(status, { ...(body === '' ? {} : GO_ERROR_HEADERS), 'Content-Length': Buffer.byteLength(body), ...headers }).end(body);
      },
    });
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    this.dispatch(req, { send: (status, body, headers) => rawResponse(socket, status, body, headers), socket, head });
  }

  /**
   * One request for a streaming URL, upgrade or not, answered in the order of the kubelet's
   * server (pkg/cri/streaming/server.go, v0.34): the token, then WebSocket (wsstream's
   * IsWebSocketRequest) or else SPDY, whose protocol handshake comes before the upgrade headers
   * are looked at (remotecommand/httpstream.go, portforward/httpstream.go).
   */
  private dispatch(req: IncomingMessage, reply: Reply): void {
    const route = this.route(req.url);
    const pending = route === undefined ? undefined : this.cache.consume(route.kind, route.token);
    if (pending === undefined) {
      reply.send(404, '404 page not found\n', { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
      return;
    }
    if (this.sessions.size >= MAX_ACTIVE_SESSIONS) {
      reply.send(429, 'too many streaming sessions\n', { 'Retry-After': '60' });
      return;
    }
    const connection = String(req.headers.connection ?? '').toLowerCase();
    const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
    const isUpgrade = connection.includes('upgrade');
    if (isUpgrade && upgrade === 'websocket' && reply.socket !== undefined) {
      this.upgradeWebSocket(req, reply.socket, reply.head ?? Buffer.alloc(0), pending);
      return;
    }
    // httpstream.Handshake (k8s.io/apimachinery pkg/util/httpstream/httpstream.go, v0.34).
    const serverProtocols: readonly string[] = pending.kind === 'portforward' ? [PORT_FORWARD_PROTOCOL] : SPDY_REMOTE_COMMAND_PROTOCOLS;
    const clientProtocols = headerList(req.headers['x-stream-protocol-version']);
    if (clientProtocols.length === 0) {
      const text = 'unable to upgrade: X-Stream-Protocol-Version is required';
      if (pending.kind === 'portforward') {
        // portforward/httpstream.go returns Handshake's error unwritten and ServePortForward only
        // logs it: the client gets an empty 200.
        this.logger.debug({ err: text }, 'port-forward handshake failed');
        reply.send(200, '');
      } else {
        reply.send(400, `${text}\n`);
      }
      return;
    }
    const protocol = clientProtocols.find((p) => serverProtocols.includes(p));
    if (protocol === undefined) {
      const text = `unable to upgrade: unable to negotiate protocol: client supports [${clientProtocols.join(' ')}], server accepts [${serverProtocols.join(' ')}]\n`;
      // Handshake writes the 403; remotecommand's createHTTPStreamStreams then calls http.Error
      // again, whose status is dropped (the header is out) and whose text is appended: the
      // body of an exec or attach has the line twice.
      reply.send(403, pending.kind === 'portforward' ? text : text + text, { 'X-Accepted-Stream-Protocol-Versions': [...serverProtocols] });
      return;
    }
    // spdy.responseUpgrader.UpgradeResponse (apimachinery pkg/util/httpstream/spdy/upgrade.go).
    if (!isUpgrade || !upgrade.includes('spdy/3.1') || reply.socket === undefined) {
      reply.send(400, `unable to upgrade: missing upgrade headers in request: ${goHeaderRepr(req.rawHeaders)}\n`, { 'X-Stream-Protocol-Version': protocol });
      return;
    }
    reply.socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
        `X-Stream-Protocol-Version: ${protocol}\r\n\r\n`,
    );
    this.serveSpdy(new SpdyConnection(reply.socket, reply.head), protocol, pending);
  }

  private serveSpdy(connection: SpdyConnection, protocol: string, pending: PendingStream): void {
    const session = { abort: () => connection.destroy(), buffered: () => connection.pendingBytes };
    this.sessions.add(session);
    connection.on('close', (err?: Error) => {
      this.sessions.delete(session);
      if (err !== undefined) this.logger.debug({ err: err.message }, 'streaming connection ended');
    });
    if (pending.kind === 'portforward') {
      servePortForward(connection, pending, this.logger);
      return;
    }
    const { options } = pending;
    // Streams the client opens: error, then stdin/stdout/stderr as asked, resize with a tty (v3+).
    const expected = new Set(['error']);
    if (options.stdin) expected.add('stdin');
    if (options.stdout) expected.add('stdout');
    if (options.stderr && !options.tty) expected.add('stderr');
    if (options.tty && protocol !== 'v2.channel.k8s.io' && protocol !== 'channel.k8s.io') expected.add('resize');
    const streams = new Map<string, SpdyStream>();
    const timer = setTimeout(() => {
      this.logger.warn({ received: [...streams.keys()] }, 'timed out waiting for client to create streams');
      connection.destroy();
    }, STREAM_CREATION_TIMEOUT_MS);
    connection.on('close', () => clearTimeout(timer));
    const onStream = (stream: SpdyStream): void => {
      const type = stream.header('streamType');
      if (!expected.has(type) || streams.has(type)) {
        this.logger.debug({ streamType: type }, 'unexpected stream type');
        stream.reset();
        return;
      }
      streams.set(type, stream);
      if (streams.size < expected.size) return;
      clearTimeout(timer);
      connection.off('stream', onStream);
      const remote = new SpdyRemoteCommandSession({ ...options, stderr: options.stderr && !options.tty }, connection, protocol, streams);
      pending.start(remote);
    };
    connection.on('stream', onStream);
  }

  private upgradeWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer, pending: PendingStream): void {
    const offered = headerList(req.headers['sec-websocket-protocol']);
    const serverProtocols: readonly string[] = pending.kind === 'portforward' ? [SPDY_TUNNEL_PROTOCOL, ...WEBSOCKET_PORT_FORWARD_PROTOCOLS] : WEBSOCKET_REMOTE_COMMAND_PROTOCOLS;
    // wsstream's handshake (apimachinery pkg/util/httpstream/wsstream/conn.go, v0.34): no
    // protocol is the kubelet's "" entry, served as channel.k8s.io.
    const protocol = offered.length === 0 ? 'channel.k8s.io' : offered.find((p) => serverProtocols.includes(p));
    if (protocol === undefined) {
      // golang.org/x/net/websocket answers a failed handshake with a bare 403; wsstream's text
      // (conn.go) is ours to send along, which upstream computes and drops.
      rawResponse(socket, 403, `requested protocol(s) are not supported: [${offered.join(' ')}]; supports [${serverProtocols.join(' ')}]\n`);
      return;
    }
    // `SPDY/3.1+portforward.k8s.io` is not an RFC 7230 token (the `/`), which ws refuses: it goes
    // through ws under a token alias and the response names it again as the client offered it.
    let expected = offered.length === 0 ? '' : protocol;
    if (protocol === SPDY_TUNNEL_PROTOCOL) {
      expected = TUNNEL_ALIAS;
      req.headers['sec-websocket-protocol'] = TUNNEL_ALIAS;
    }
    this.ws.handleUpgrade(req, socket, head, (client: WebSocket) => {
      if (client.protocol !== expected) {
        client.terminate();
        return;
      }
      if (pending.kind === 'portforward' && protocol !== SPDY_TUNNEL_PROTOCOL) {
        // The request's ports, else the URL's ?port= (the kubelet's V4 options).
        const query = new URL(req.url ?? '/', 'http://x').searchParams.getAll('port').flatMap((p) => p.split(','));
        const ports = pending.ports.length > 0 ? [...pending.ports] : query.map(Number);
        if (ports.length === 0 || ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) {
          client.close(1008, 'invalid or missing port');
          return;
        }
        const session = { abort: () => client.terminate(), buffered: () => client.bufferedAmount };
        this.sessions.add(session);
        client.on('close', () => this.sessions.delete(session));
        serveWebSocketPortForward(client, ports, (port, data, error) => pending.forward(port, data, error));
        return;
      }
      if (pending.kind === 'portforward') {
        // kubectl and crictl tunnel SPDY through binary WebSocket messages (client-go tunneling_connection.go).
        const duplex = createWebSocketStream(client);
        duplex.on('error', () => duplex.destroy());
        this.serveSpdy(new SpdyConnection(duplex), PORT_FORWARD_PROTOCOL, pending);
        return;
      }
      const session = { abort: () => client.terminate(), buffered: () => client.bufferedAmount };
      this.sessions.add(session);
      client.on('close', () => this.sessions.delete(session));
      const options = { ...pending.options, stderr: pending.options.stderr && !pending.options.tty };
      pending.start(new WebSocketRemoteCommandSession(options, client, protocol));
    });
  }
}

/** Where an answer to a streaming request goes: the HTTP response, or the upgrade's raw socket. */
interface Reply {
  send(status: number, body: string, headers?: Record<string, string | string[]>): void;
  socket?: Duplex;
  head?: Buffer;
}

/** The headers Go's http.Error sets. */
const GO_ERROR_HEADERS = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' };

/** textproto.CanonicalMIMEHeaderKey: `x-stream-protocol-version` → `X-Stream-Protocol-Version`. */
function canonicalHeaderKey(name: string): string {
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) return name;
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

/**
 * A request's headers as Go prints an http.Header with %#v (the upgrade error's text):
 * `http.Header{"Connection":[]string{"Upgrade"}, "Upgrade":[]string{"h2c"}}`, keys canonical and
 * sorted, values in their order, Host left out (Go moves it to Request.Host).
 */
export function goHeaderRepr(rawHeaders: readonly string[]): string {
  const headers = new Map<string, string[]>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const key = canonicalHeaderKey(rawHeaders[i] as string);
    if (key === 'Host') continue;
    const values = headers.get(key) ?? [];
    values.push(rawHeaders[i + 1] as string);
    headers.set(key, values);
  }
  const entries = [...headers.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `http.Header{${entries.map(([k, v]) => `${JSON.stringify(k)}:[]string{${v.map((x) => JSON.stringify(x)).join(', ')}}`).join(', ')}}`;
}

/** Serves port-forward streams: an error and a data stream per request id (kubelet portforward/httpstream.go). */
function servePortForward(connection: SpdyConnection, pending: Extract<PendingStream, { kind: 'portforward' }>, logger: Logger): void {
  const pairs = new Map<string, { data?: SpdyStream; error?: SpdyStream }>();
  let forwards = 0;
  connection.on('stream', (stream: SpdyStream) => {
    const type = stream.header('streamType');
    const portText = stream.header('port');
    // Before request ids (v1 clients) the data stream follows its error stream.
    const requestId = stream.header('requestID') || String(type === 'error' ? stream.id : stream.id - 2);
    if (type !== 'data' && type !== 'error') {
      stream.reset();
      return;
    }
    const pair = pairs.get(requestId) ?? {};
    pairs.set(requestId, pair);
    pair[type] = stream;
    if (pair.data === undefined || pair.error === undefined) return;
    pairs.delete(requestId);
    const { data, error } = pair;
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) {
      error.end(`invalid port: ${JSON.stringify(portText)}`);
      data.end();
      return;
    }
    if (forwards >= MAX_FORWARDS_PER_CONNECTION) {
      error.end(`too many port-forward streams on one connection (at most ${MAX_FORWARDS_PER_CONNECTION})`);
      data.end();
      return;
    }
    forwards++;
    data.once('close', () => forwards--);
    try {
      pending.forward(port, data, error);
    } catch (err) {
      logger.warn({ err }, 'port-forward failed');
      error.end(err instanceof Error ? err.message : String(err));
      data.end();
    }
  });
}

function headerList(value: string | string[] | undefined): string[] {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
}

const STATUS_TEXT: Record<number, string> = { 200: 'OK', 400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found', 429: 'Too Many Requests' };

function rawResponse(socket: Duplex, status: number, body: string, headers: Record<string, string | string[]> = {}): void {
  const lines = [`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ''}`];
  const all: Record<string, string | string[]> = { ...(body === '' ? {} : GO_ERROR_HEADERS), 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close', ...headers };
  for (const [name, value] of Object.entries(all)) for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${v}`);
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/** `host:port` on a loopback address (our rule: every address the simulator serves on is loopback). */
export function parseStreamingAddress(address: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(address);
  const host = m?.[1]?.replace(/^\[|\]$/g, '');
  const port = Number(m?.[2]);
  if (m === null || host === undefined || port > 65535) {
    throw new RuntimeError('InvalidArgument', `streaming address "${address}" is not host:port`);
  }
  if (!(host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host))) {
    throw new RuntimeError('InvalidArgument', `streaming address "${address}" is not a loopback address (127.0.0.0/8, ::1 or localhost)`);
  }
  return { host, port };
}
