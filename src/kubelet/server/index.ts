/**
 * The kubelet's HTTPS server (pkg/kubelet/server/server.go and auth.go, v1.34): what the API
 * server, metrics-server and kubectl reach on a node's daemon endpoint. Every request is
 * authenticated and authorized (auth-filter.ts) before the route table sends it to its route
 * family (routes/):
 *
 *   /healthz                                  ok                                  routes/health.ts
 *   /pods                                     PodList of the pods bound to the node routes/pods.ts
 *   /containerLogs/{ns}/{pod}/{container}     the CRI log file                    routes/logs.ts
 *   /stats/summary                            Summary API from CRI stats          routes/stats.ts
 *   /metrics, /metrics/resource               Prometheus text                     routes/stats.ts
 *   POST /run/{ns}/{pod}[/{uid}]/{container}  ExecSync, combined output           routes/exec.ts
 *   /explain/{ns}/{pod}                       cri-winsim explain, as JSON          routes/explain.ts
 *   /exec, /attach, /portForward              CRI Exec/Attach/PortForward, the    routes/exec.ts
 *                                             upgraded connection proxied to the runtime's URL
 *
 * The server talks to the runtime through a CRI client only, and holds no module-level state:
 * one process may run many of them (one per simulated node).
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createNetServer, isIP, type AddressInfo, type Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../../cri/proto.js';
import { silentLogger, type Logger } from '../../log.js';
import { grpcErrorString } from '../cri-errors.js';
import { AuthFilter } from './auth-filter.js';
import { responseOnSocket, segments, text } from './http-replies.js';
import { runtimeNameOf, type Route, type RouteContext } from './route-context.js';
import { attachRoute, execRoute, portForwardRoute, runRoute } from './routes/exec.js';
import { healthRoute } from './routes/health.js';
import { containerLogsRoute } from './routes/logs.js';
import { podsRoute } from './routes/pods.js';
import { explainRoute } from './routes/explain.js';
import type { PodRecord } from '../pod-records.js';
import { metricsRoute, statsRoute } from './routes/stats.js';
import { RuntimePods } from './runtime-pods.js';
import { KubeletServerMetrics } from './server-metrics.js';
import { readPemFile, selfSignedServingCertificate } from './serving-certificate.js';

export type { UserInfo } from './authentication.js';

export interface KubeletServerOptions {
  /** --address; loopback only (127.0.0.0/8 or ::1). Default 127.0.0.1. */
  readonly address?: string;
  /** --port, default 10250; 0 picks a free port. */
  readonly port?: number;
  /** --tls-cert-file and --tls-private-key-file; without them a self-signed certificate is made. */
  readonly tlsCertFile?: string;
  readonly tlsPrivateKeyFile?: string;
  /** --client-ca-file: client certificates signed by it authenticate (user = CN, groups = O). */
  readonly clientCaFile?: string;
  /** --anonymous-auth (the kubelet's default is false in its config file, true as a flag). */
  readonly anonymousAuth: boolean;
  /** --authorization-mode. */
  readonly authorizationMode: 'Webhook' | 'AlwaysAllow';
  /** The node's client configuration, for TokenReview and SubjectAccessReview. */
  readonly kubeConfig?: KubeConfig;
  readonly nodeName: string;
  readonly cri: CriClient;
  /** The pods bound to the node (the kubelet's pod manager). */
  pods(): readonly V1Pod[];
  /** The kubelet's record of a pod of the node, for /explain (cri-winsim explain). */
  podRecord?(namespace: string, name: string): PodRecord | undefined;
  /** Deadline of each CRI call (default 10 s). */
  readonly callTimeoutMs?: number;
  /** When the node started, for /stats/summary (default: when the server started). */
  readonly nodeStartTime?: Date;
  /** The node's memory capacity, for the summary's availableBytes. */
  readonly memoryCapacityBytes?: number;
  /** authentication.webhook.cacheTTL (default 2 min). */
  readonly tokenReviewCacheTtlMs?: number;
  /** authorization.webhook.cacheAuthorizedTTL / cacheUnauthorizedTTL (default 5 min / 30 s). */
  readonly authorizedCacheTtlMs?: number;
  readonly unauthorizedCacheTtlMs?: number;
  /** The sync loop's health for /healthz (an error text when unhealthy). */
  readonly syncLoopHealth?: () => string | undefined;
  readonly logger?: Logger;
}

export interface KubeletServer {
  readonly address: string;
  readonly port: number;
  /** Stops listening and ends every connection, upgraded ones included. */
  close(): Promise<void>;
}

/** Whether an address is loopback (127.0.0.0/8 or ::1). */
export function isLoopbackAddress(address: string): boolean {
  if (isIP(address) === 4) return address.startsWith('127.');
  if (isIP(address) === 6) return address === '::1' || address === '0:0:0:0:0:0:0:1';
  return false;
}

const DEFAULT_PORT = 10250;

/** The route table: each route family by the first segment of the path. */
const ROUTES: ReadonlyMap<string, Route> = new Map([
  healthRoute, podsRoute, statsRoute, metricsRoute, containerLogsRoute, runRoute, execRoute, attachRoute, portForwardRoute, explainRoute,
].map((r) => [r.root, r]));

/** Checks the options, reads the certificates and starts listening; rejects with the kubelet's start-up error. */
export async function startKubeletServer(options: KubeletServerOptions): Promise<KubeletServer> {
  const address = options.address ?? '127.0.0.1';
  if (!isLoopbackAddress(address)) throw new Error(`--address: ${address} is not a loopback address (cri-winsim serves on 127.0.0.0/8 or ::1 only)`);
  const port = options.port ?? DEFAULT_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: ${port} is not a port number (0-65535)`);
  if (options.nodeName === '') throw new Error('nodeName must not be empty');
  if ((options.tlsCertFile === undefined) !== (options.tlsPrivateKeyFile === undefined)) {
    throw new Error('--tls-cert-file and --tls-private-key-file must be given together');
  }
  const log = (options.logger ?? silentLogger()).child({ component: 'kubelet-server', node: options.nodeName });
  const clientCa = options.clientCaFile === undefined ? undefined : await readPemFile('--client-ca-file', options.clientCaFile, 'certificate');
  const authOptions = { ...options, clientCertificates: clientCa !== undefined };
  AuthFilter.check(authOptions);
  // The files the user named are read now, so that a bad one stops the start; the kubelet's own
  // certificate is made with the rest of what serves, at the first connection.
  const files = options.tlsCertFile !== undefined && options.tlsPrivateKeyFile !== undefined
    ? { cert: await readPemFile('--tls-cert-file', options.tlsCertFile, 'certificate'), key: await readPemFile('--tls-private-key-file', options.tlsPrivateKeyFile, 'private key') }
    : undefined;
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  const nodeStartTime = options.nodeStartTime ?? new Date();
  // What serves a connection, made on the first one: a node of a thousand nobody connects to
  // holds its listening socket only (a certificate costs milliseconds of CPU in JavaScript's ASN.1).
  const serving = async (): Promise<Serving> => {
    const { cert, key } = files ?? (await selfSignedServingCertificate(options.nodeName, [address]));
    const ctx: RouteContext = {
      nodeName: options.nodeName,
      cri: options.cri,
      callTimeoutMs,
      runtimePods: new RuntimePods(options.cri, callTimeoutMs),
      metrics: new KubeletServerMetrics(options.nodeName, options.cri, callTimeoutMs),
      log,
      nodeStartTime,
      ...(options.memoryCapacityBytes !== undefined ? { memoryCapacityBytes: options.memoryCapacityBytes } : {}),
      pods: () => options.pods(),
      ...(options.podRecord === undefined ? {} : { podRecord: (namespace: string, name: string) => options.podRecord!(namespace, name) }),
      syncLoopHealth: () => options.syncLoopHealth?.(),
      runtimeName: runtimeNameOf(options.cri, callTimeoutMs),
    };
    const server = createServer({
      cert,
      key,
      ...(clientCa !== undefined ? { ca: clientCa, requestCert: true, rejectUnauthorized: false } : {}),
    });
    return { ctx, auth: new AuthFilter(authOptions, options.nodeName, log), server };
  };
  return new HttpsKubeletServer(log, serving).listen(address, port);
}

interface Serving {
  readonly ctx: RouteContext;
  readonly auth: AuthFilter;
  readonly server: Server;
}

/**
 * The server object: its listener, the HTTPS server its connections are handed to (made on the
 * first), the upgraded connections it must end on close, and dispatch.
 */
class HttpsKubeletServer implements KubeletServer {
  address = '';
  port = 0;
  private readonly upgraded = new Set<Duplex>();
  private readonly listener: NetServer;
  private serving: Serving | undefined;
  private making: Promise<Serving> | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly log: Logger, private readonly makeServing: () => Promise<Serving>) {
    // Connections arrive paused: one that comes while the HTTPS server is being made is handed to
    // it afterwards with nothing read from it yet.
    this.listener = createNetServer({ pauseOnConnect: true }, (socket) => {
      if (this.serving !== undefined) {
        this.serving.server.emit('connection', socket);
        return;
      }
      this.https().then(
        (server) => (this.closing === undefined ? server.emit('connection', socket) : socket.destroy()),
        (err: unknown) => {
          this.log.error({ err }, 'cannot serve: making the serving certificate failed');
          socket.destroy();
        },
      );
    });
  }

  /** The HTTPS server behind the listener, made on the first connection. */
  private https(): Promise<Server> {
    // A failure (the certificate could not be made) is tried again at the next connection.
    this.making ??= this.makeServing().then(
      (serving) => this.serve(serving),
      (err: unknown) => {
        this.making = undefined;
        throw err;
      },
    );
    return this.making.then((serving) => serving.server);
  }

  private serve(serving: Serving): Serving {
    const { server, ctx } = serving;
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      void this.handle(serving, req, res);
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      this.upgraded.add(socket);
      socket.on('close', () => this.upgraded.delete(socket));
      void this.handle(serving, req, responseOnSocket(req, socket), { socket, head });
    });
    server.on('tlsClientError', (err) => ctx.log.debug({ err }, 'TLS handshake failed'));
    // http.Server in the kubelet: 4 h read/write timeouts for long-running requests.
    server.requestTimeout = 0;
    server.headersTimeout = 60_000;
    // The HTTPS server never listens itself (the listener hands it connections): 'listening' is
    // what starts its tracking of connections, for the headers timeout and closeAllConnections.
    server.emit('listening');
    this.serving = serving;
    return serving;
  }

  async listen(address: string, port: number): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => reject(new Error(`kubelet server: cannot listen on ${address}:${port}: ${err.message}`));
      this.listener.once('error', onError);
      this.listener.listen(port, address, () => {
        this.listener.off('error', onError);
        resolve();
      });
    });
    const bound = this.listener.address() as AddressInfo;
    this.address = bound.address;
    this.port = bound.port;
    this.log.info({ address: bound.address, port: bound.port }, 'Starting to listen');
    return this;
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.listener.close(() => resolve());
      // Not listening itself: close() stops its connection tracking and idle connections.
      const stop = (server: Server): void => {
        server.close(() => undefined);
        server.closeAllConnections();
      };
      if (this.serving !== undefined) stop(this.serving.server);
      else void this.making?.then((serving) => stop(serving.server), () => undefined);
      for (const socket of this.upgraded) socket.destroy();
    });
    return this.closing;
  }

  private async handle({ ctx, auth }: Serving, req: IncomingMessage, res: ServerResponse, upgrade?: { socket: Duplex; head: Buffer }): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'https://kubelet');
    } catch {
      return text(res, 400, 'malformed request URL');
    }
    const end = ctx.metrics.begin(req.method, url.pathname);
    try {
      if (!(await auth.admit(req, res, url.pathname))) return;
      await this.route(ctx, req, res, upgrade, url);
    } catch (err) {
      ctx.log.error({ err, path: url.pathname }, 'request failed');
      text(res, 500, grpcErrorString(err));
    } finally {
      end();
    }
  }

  private async route(ctx: RouteContext, req: IncomingMessage, res: ServerResponse, upgrade: { socket: Duplex; head: Buffer } | undefined, url: URL): Promise<void> {
    const parts = segments(url.pathname);
    if (parts === undefined) return text(res, 400, 'malformed path');
    const [root = '', ...rest] = parts;
    const route = ROUTES.get(root);
    if (route === undefined || !route.matches(rest)) return text(res, 404, '404 page not found\n');
    const method = req.method ?? 'GET';
    if (route.methods !== undefined && !route.methods.includes(method)) return text(res, 405, '405: Method Not Allowed');
    await route.handle(ctx, { req, res, method, rest, query: url.searchParams, upgrade });
  }
}
