/**
 * How the API client's requests travel: over one HTTP/2 connection when the server speaks it (an
 * https server that picks `h2` by ALPN, as kube-apiserver does), as client-go's transport does by
 * default, every request and watch of the process a stream on it; otherwise over HTTP/1.1 with a
 * keep-alive agent (plain http, or an https server without HTTP/2). One connection carries the
 * requests of every simulated node of a process, as kwok's one client carries its nodes': a request
 * is a stream, not a write on a socket of its own, and the frames of requests made together go out
 * in one write.
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import { isIP } from 'node:net';
import * as tls from 'node:tls';

/** An answer's status and body, whichever protocol carried it. */
export interface TransportResponse {
  readonly status: number;
  readonly body: AsyncIterable<Buffer>;
}

export interface TransportRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string | number>>;
  readonly payload: Buffer | undefined;
  readonly signal: AbortSignal | undefined;
  /** Idle time after which the request fails (no bytes either way). */
  readonly idleTimeoutMs: number;
}

/** The TLS material of the kubeconfig (what its https.Agent would be given). */
export type TlsOptions = Pick<tls.ConnectionOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'>;

/** Fails with the connection's error; AbortError for a signal's abort. */
export class TransportError extends Error {}

/**
 * Flow control: the client's receive windows (a list of ten thousand pods is tens of MiB; the
 * protocol's 64 KiB default would make it a round trip every 64 KiB), and the memory nghttp2 may
 * hold for the session before refusing streams (Node's default is 10 MB).
 */
const streamWindow = 4 * 2 ** 20;
const connectionWindow = 32 * 2 ** 20;
const maxSessionMemoryMb = 128;

export class ApiTransport {
  private readonly agent: http.Agent;
  /** Undecided until the first https connection says (ALPN); http: is HTTP/1.1 from the start. */
  private protocol: 'h2' | 'http/1.1' | undefined;
  private session: http2.ClientHttp2Session | undefined;
  private connecting: Promise<http2.ClientHttp2Session | undefined> | undefined;
  /** Streams open on the session: while there are any it keeps the process alive, as a busy socket does. */
  private active = 0;
  private closed = false;

  constructor(
    private readonly server: URL,
    private readonly tlsOptions: TlsOptions,
  ) {
    this.agent = server.protocol === 'https:' ? new https.Agent({ keepAlive: true, maxSockets: 64, ...tlsOptions }) : new http.Agent({ keepAlive: true, maxSockets: 64 });
    if (server.protocol !== 'https:') this.protocol = 'http/1.1';
  }

  close(): void {
    this.closed = true;
    this.agent.destroy();
    this.session?.destroy();
    this.session = undefined;
  }

  async send(request: TransportRequest): Promise<TransportResponse> {
    const session = this.protocol === 'http/1.1' ? undefined : await this.h2Session();
    return session === undefined ? this.sendHttp1(request) : this.sendHttp2(session, request);
  }

  /** The open session, connecting (and learning the protocol) when there is none. */
  private async h2Session(): Promise<http2.ClientHttp2Session | undefined> {
    if (this.session !== undefined && !this.session.closed && !this.session.destroyed) return this.session;
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private connect(): Promise<http2.ClientHttp2Session | undefined> {
    if (this.closed) return Promise.reject(new TransportError('the API client is closed'));
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        host: this.server.hostname,
        port: Number(this.server.port || 443),
        // SNI names a host, never an address (as the https agent does).
        ...(isIP(this.server.hostname) === 0 ? { servername: this.server.hostname } : {}),
        ...this.tlsOptions,
        ALPNProtocols: ['h2', 'http/1.1'],
      });
      const failed = (err: Error): void => reject(new TransportError(err.message));
      socket.once('error', failed);
      socket.once('secureConnect', () => {
        socket.off('error', failed);
        if (socket.alpnProtocol !== 'h2') {
          // The server speaks HTTP/1.1 only: every request goes through the agent from now on.
          this.protocol = 'http/1.1';
          socket.destroy();
          resolve(undefined);
          return;
        }
        this.protocol = 'h2';
        const session = http2.connect(this.server.origin, {
          createConnection: () => socket,
          settings: { initialWindowSize: streamWindow },
          maxSessionMemory: maxSessionMemoryMb,
        });
        session.setLocalWindowSize(connectionWindow);
        const forget = (): void => {
          if (this.session === session) this.session = undefined;
        };
        // A GOAWAY (the server shutting down) or a broken connection: the streams open finish or
        // fail on their own; the next request opens a new connection.
        session.on('goaway', forget);
        session.on('close', forget);
        session.on('error', forget);
        session.unref();
        this.session = session;
        resolve(session);
      });
    });
  }

  private sendHttp2(session: http2.ClientHttp2Session, request: TransportRequest): Promise<TransportResponse> {
    const headers: http2.OutgoingHttpHeaders = { ':method': request.method, ':path': `${request.url.pathname}${request.url.search}` };
    for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
    return new Promise((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = session.request(headers, { endStream: request.payload === undefined, ...(request.signal === undefined ? {} : { signal: request.signal }) });
      } catch (err) {
        reject(new TransportError((err as Error).message));
        return;
      }
      if (this.active++ === 0) session.ref();
      stream.once('close', () => {
        if (--this.active === 0 && !session.destroyed) session.unref();
      });
      let answered = false;
      stream.once('response', (responseHeaders) => {
        answered = true;
        resolve({ status: Number(responseHeaders[':status'] ?? 0), body: stream });
      });
      stream.on('error', (err: Error) => {
        if (answered) return; // the body's reader sees it
        reject(err.name === 'AbortError' ? err : new TransportError(err.message));
      });
      stream.setTimeout(request.idleTimeoutMs, () => stream.destroy(new Error(`no answer within ${request.idleTimeoutMs / 1000} s`)));
      if (request.payload !== undefined) stream.end(request.payload);
    });
  }

  private sendHttp1(request: TransportRequest): Promise<TransportResponse> {
    const module = request.url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = module.request(
        request.url,
        { method: request.method, headers: request.headers, agent: this.agent, ...(request.signal === undefined ? {} : { signal: request.signal }) },
        (res) => resolve({ status: res.statusCode ?? 0, body: res }),
      );
      req.on('error', (err: Error) => reject(err.name === 'AbortError' ? err : new TransportError(err.message)));
      req.setTimeout(request.idleTimeoutMs, () => req.destroy(new Error(`no answer within ${request.idleTimeoutMs / 1000} s`)));
      req.end(request.payload);
    });
  }
}
