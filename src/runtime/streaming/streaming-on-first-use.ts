import type { Logger } from '../../log.js';
import { RuntimeError } from '../errors.js';
import { StreamingServer, type PendingStream } from './streaming-server.js';

/** What a runtime's handlers and its owner use of its streaming server. */
export interface RuntimeStreaming {
  /** Registers a request and returns the URL its client must open (single use, one minute). */
  register(pending: PendingStream): string | Promise<string>;
  /** The server's base URL; '' while no server listens. */
  readonly url: string;
  readonly activeSessions: number;
  readonly bufferedBytes: number;
  close(): Promise<void>;
}

/**
 * A streaming server that listens when the first Exec, Attach or PortForward asks for a URL
 * (node mode: most simulated nodes are never exec'd into, and each listening server is a socket,
 * a connection-tracking timer and its objects). The address was checked at open; a listen that
 * fails fails that call and the next one tries again.
 */
export class StreamingOnFirstUse implements RuntimeStreaming {
  private server: Promise<StreamingServer> | undefined;
  private listening: StreamingServer | undefined;
  private closed = false;

  constructor(
    private readonly address: string,
    private readonly logger: Logger,
  ) {}

  async register(pending: PendingStream): Promise<string> {
    if (this.closed) throw new RuntimeError('Unavailable', 'the streaming server is closed');
    this.server ??= StreamingServer.listen(this.address, this.logger).then(
      (server) => (this.listening = server),
      (err: unknown) => {
        this.server = undefined;
        throw new RuntimeError('Unavailable', `streaming address ${this.address}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      },
    );
    const server = await this.server;
    if (this.closed) throw new RuntimeError('Unavailable', 'the streaming server is closed');
    return server.register(pending);
  }

  get url(): string {
    return this.listening?.url ?? '';
  }

  get activeSessions(): number {
    return this.listening?.activeSessions ?? 0;
  }

  get bufferedBytes(): number {
    return this.listening?.bufferedBytes ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    const server = await this.server?.catch(() => undefined);
    await server?.close();
  }
}
