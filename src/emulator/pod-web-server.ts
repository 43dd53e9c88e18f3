import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { CommandContext } from './command-registry.js';

export type PageHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** A server listening on the pod IP for a simulated program; close() drops its connections too. */
export interface PodListener {
  readonly address: string;
  readonly port: number;
  close(): void;
}

/**
 * Binds podIP:port for real (loopback: every pod IP is a 127.0.0.0/8 address) and serves `page`
 * there until close(). Resolves with an Error (`code` EADDRINUSE, EADDRNOTAVAIL …) when the address
 * cannot be bound, for the caller to word as its program would.
 */
export async function listenInPod(ctx: CommandContext, port: number, page: PageHandler): Promise<PodListener | NodeJS.ErrnoException> {
  const ip = String(ctx.target.platform['podIp'] ?? '');
  if (ip === '') return Object.assign(new Error('the pod has no IP'), { code: 'EADDRNOTAVAIL' });
  const server = createServer(page);
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const bound = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    server.once('error', resolve);
    server.listen({ host: ip, port, exclusive: true }, () => {
      server.off('error', resolve);
      resolve(undefined);
    });
  });
  if (bound !== undefined) return bound;
  return {
    address: ip,
    port,
    close: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

/**
 * Listens for real on podIP:port for a simulated server (nginx, httpd, IIS) while its process
 * runs: the process's handler awaits this, and any signal that ends the process (SIGKILL
 * included) closes the listener and its connections. Resolves with the signal, or with an
 * Error when the address could not be bound (the caller words it as its program would).
 */
export async function serveInPod(ctx: CommandContext, port: number, page: PageHandler, onListening?: () => void): Promise<string | NodeJS.ErrnoException> {
  const listener = await listenInPod(ctx, port, page);
  if (listener instanceof Error) return listener;
  onListening?.();
  try {
    return await untilSignalled(ctx);
  } finally {
    listener.close();
  }
}

/** Resolves with the name of the signal that ends the process (at once if one has arrived). */
export function untilSignalled(ctx: CommandContext): Promise<string> {
  return new Promise<string>((resolve) => {
    if (ctx.signal.aborted) resolve(String(ctx.signal.reason));
    else ctx.signal.addEventListener('abort', () => resolve(String(ctx.signal.reason)), { once: true });
  });
}

/** The page a server sends: 200 with a body for GET/HEAD of `/` (and `index.html`), 404 otherwise. */
export function staticPage(server: string, contentType: string, pages: Record<string, () => string>): PageHandler {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const render = pages[path];
    if (render === undefined) {
      res.writeHead(404, { Server: server, 'Content-Type': 'text/html' }).end('<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n');
      return;
    }
    const body = render();
    res.writeHead(200, { Server: server, 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
