import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server as NetServer } from 'node:net';
import { dirname } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { silentLogger, type Logger } from '../log.js';
import { activeDirectoryServiceDefinition } from './ad-proto.js';
import type { CriBackend } from './backend.js';
import type { CallContext, CallObserver } from './call.js';
import { unixEndpoint, unixSocketPath } from './endpoint.js';
import { ContainerEventStreams } from './events.js';
import { withCachedListEncoding } from './list-encoding.js';
import { CRI_MAX_MESSAGE_BYTES, imageServiceDefinition, runtimeServiceDefinition } from './proto.js';
import { withUtf8CheckedRequests } from './request-decoding.js';
import { serviceHandlers } from './service-handlers.js';
import { identityServiceDefinition, type IdentityBackend } from './identity-service.js';

/** Socket mode: owner and group may connect, like containerd's socket. */
export const SOCKET_MODE = 0o660;
/**
 * Listen backlog of the socket: connections the kernel queues before the server accepts them.
 * Node's default (511) makes a burst of a thousand clients fail with EAGAIN (unix sockets do not
 * retry as TCP does); Go listeners, containerd's among them, use net.core.somaxconn (4096 on
 * current kernels, which also caps this value).
 */
export const SOCKET_BACKLOG = 4096;
/** Mode of the socket's directory when the server creates it. */
const SOCKET_DIR_MODE = 0o750;
const DEFAULT_SHUTDOWN_TIMEOUT_MS = 5000;
/** How long to wait for an answer when probing an existing socket file. */
const PROBE_TIMEOUT_MS = 1000;

export interface CriServerOptions {
  /** With `explainContainer`, the server serves cri-winsim's Identity service too (identity-service.ts). */
  runtime: CriBackend & Partial<IdentityBackend>;
  logger?: Logger;
  /** Called around every handler (method, duration in seconds, status name). */
  observer?: CallObserver;
  /** How long close() waits for in-flight calls before cutting connections (default 5 s). */
  shutdownTimeoutMs?: number;
}

type Probe = 'live' | 'stale' | 'gone';

/** Whether something answers on a unix socket: 'live', 'stale' (refused) or 'gone' (no file). */
function probeSocket(path: string): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ path });
    const timer = setTimeout(() => {
      socket.destroy();
      // Connecting to a unix socket does not hang unless a live server's backlog is full.
      resolve('live');
    }, PROBE_TIMEOUT_MS);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve('live');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      if (err.code === 'ECONNREFUSED') resolve('stale');
      else if (err.code === 'ENOENT') resolve('gone');
      else reject(new Error(`cannot probe existing socket ${path}: ${err.message}`));
    });
  });
}

/**
 * Refuses a socket path taken by a live server or by a file that is not a socket; otherwise says
 * whether a stale socket (left by a crashed runtime: nobody answers) is in the way.
 */
async function checkSocketPath(path: string): Promise<Probe> {
  let stats;
  try {
    stats = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
  if (!stats.isSocket()) throw new Error(`${path} exists and is not a socket; refusing to replace it`);
  const probe = await probeSocket(path);
  if (probe === 'live') throw new Error(`another server is already listening on ${unixEndpoint(path)}`);
  return probe;
}

/** Makes the socket path free: a stale socket file is removed, anything else is refused. */
async function claimSocketPath(path: string, logger: Logger): Promise<void> {
  if ((await checkSocketPath(path)) !== 'stale') return;
  logger.info({ socket: path }, 'removing stale CRI socket');
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/**
 * Refuses early, before anything else is opened, when a live server already answers on the
 * endpoint or the path is taken by something that is not a socket. A stale socket passes (listen
 * replaces it).
 */
export async function assertEndpointFree(endpoint: string): Promise<void> {
  await checkSocketPath(unixSocketPath(endpoint));
}

async function removeSocketFile(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * The CRI v1 gRPC server (RuntimeService and ImageService) in front of a runtime, on a unix
 * socket, with cri-winsim's ActiveDirectory service (proto/criwinsim/ad/v1) on the same socket.
 *
 * The socket listens from listen() on; the gRPC server behind it (its services, handlers and
 * HTTP/2 server) is made when the first connection arrives, so a runtime nobody connects to
 * (a node whose kubelet calls it in process) holds only the listening socket.
 */
export class CriServer {
  private readonly ctx: CallContext;
  private readonly events: ContainerEventStreams;
  private readonly runtime: CriServerOptions['runtime'];
  private readonly shutdownTimeoutMs: number;
  /** Made on the first connection; undefined until then and after close. */
  private server: grpc.Server | undefined;
  private injector: grpc.ConnectionInjector | undefined;
  private listener: NetServer | undefined;
  private socketPath: string | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: CriServerOptions) {
    this.ctx = { logger: options.logger ?? silentLogger(), observer: options.observer };
    this.shutdownTimeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    this.runtime = options.runtime;
    this.events = new ContainerEventStreams(this.runtime, this.ctx);
  }

  /** The endpoint the server listens on, once listen() resolved. */
  get endpoint(): string | undefined {
    return this.socketPath === undefined ? undefined : unixEndpoint(this.socketPath);
  }

  /** Number of open GetContainerEvents streams. */
  get openEventStreams(): number {
    return this.events.size;
  }

  /** Whether the gRPC server behind the socket has been made (a client connected). */
  get serving(): boolean {
    return this.server !== undefined;
  }

  /**
   * Listens on `unix:///absolute/path.sock`: creates the parent directory, replaces a stale
   * socket file, refuses a live one, and leaves the socket with mode 0660. Resolves to the endpoint.
   */
  async listen(endpoint: string): Promise<string> {
    if (this.listener !== undefined) throw new Error(`CRI server is already listening on ${this.endpoint}`);
    const path = unixSocketPath(endpoint);
    await mkdir(dirname(path), { recursive: true, mode: SOCKET_DIR_MODE });
    await claimSocketPath(path, this.ctx.logger);
    // The server's own listener (grpc-js's bindAsync has no backlog option) hands each accepted
    // connection to grpc-js, which serves it as it would its own.
    const listener = createServer((socket) => this.connectionInjector().injectConnection(socket));
    try {
      await new Promise<void>((resolve, reject) => {
        listener.once('error', (err) => reject(new Error(`cannot listen on ${unixEndpoint(path)}: ${err.message}`)));
        listener.listen({ path, backlog: SOCKET_BACKLOG }, () => resolve());
      });
      await chmod(path, SOCKET_MODE);
    } catch (err) {
      listener.close();
      await removeSocketFile(path).catch(() => undefined);
      throw err;
    }
    this.listener = listener;
    this.socketPath = path;
    this.closing = undefined;
    this.ctx.logger.debug({ endpoint: unixEndpoint(path) }, 'CRI server bound');
    return unixEndpoint(path);
  }

  /**
   * Makes the gRPC server now instead of at the first connection: for a runtime whose clients
   * come over the socket, so its first calls do not wait for it.
   */
  prepare(): void {
    if (this.listener !== undefined) this.connectionInjector();
  }

  /** The gRPC server's injector, made with the server on the first connection. */
  private connectionInjector(): grpc.ConnectionInjector {
    if (this.injector !== undefined) return this.injector;
    const runtime = this.runtime;
    const server = new grpc.Server({
      'grpc.max_receive_message_length': CRI_MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': CRI_MAX_MESSAGE_BYTES,
    });
    server.addService(
      withUtf8CheckedRequests(withCachedListEncoding(runtimeServiceDefinition(), CRI_MAX_MESSAGE_BYTES)),
      serviceHandlers(runtimeServiceDefinition(), runtime, this.ctx, this.events.handlers()),
    );
    server.addService(withUtf8CheckedRequests(imageServiceDefinition()), serviceHandlers(imageServiceDefinition(), runtime, this.ctx));
    // The domain's service shares the socket: who may use the CRI may steer the domain. Its calls
    // are not CRI operations, so the CRI call observer (kubelet-style metrics) does not see them.
    server.addService(activeDirectoryServiceDefinition(), serviceHandlers(activeDirectoryServiceDefinition(), runtime.activeDirectory ?? {}, { logger: this.ctx.logger, observer: undefined }));
    if (typeof runtime.explainContainer === 'function') server.addService(identityServiceDefinition(), serviceHandlers(identityServiceDefinition(), runtime, this.ctx));
    this.server = server;
    this.injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    return this.injector;
  }

  /**
   * Graceful shutdown: ends event streams, lets in-flight calls finish for up to the shutdown
   * timeout, then cuts the remaining connections; removes the socket file. Safe to call twice.
   */
  close(): Promise<void> {
    if (this.closing === undefined) this.closing = this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const path = this.socketPath;
    if (path === undefined) return;
    // No new connections; the ones accepted are grpc-js's to drain.
    this.listener?.close();
    this.listener = undefined;
    this.events.endAll();
    const server = this.server;
    if (server !== undefined) {
      const graceful = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), this.shutdownTimeoutMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      if (!graceful) {
        this.ctx.logger.warn({ timeoutMs: this.shutdownTimeoutMs }, 'CRI calls still running at shutdown; closing connections');
        server.forceShutdown();
      }
    }
    await removeSocketFile(path);
    this.server = undefined;
    this.injector = undefined;
    this.socketPath = undefined;
    this.ctx.logger.debug({ endpoint: unixEndpoint(path) }, 'CRI server closed');
  }
}
