import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import type { SpdyConnection } from './spdy-connection.js';
import type { SpdyStream } from './spdy-stream.js';

/** What an exec or attach request asked for (CRI ExecRequest/AttachRequest flags). */
export interface RemoteCommandOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

export interface TerminalSize {
  width: number;
  height: number;
}

/** How the command ended: its exit code, or an error that kept it from running. */
export type RemoteCommandOutcome = { exitCode: number; command: readonly string[] } | { error: string };

/** Remotecommand protocols over SPDY, the server's preference order (kubelet's default list). */
export const SPDY_REMOTE_COMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] as const;
/** Remotecommand protocols over WebSocket: client-go's v5 and the kubelet's v4 and v1 binary ones. */
export const WEBSOCKET_REMOTE_COMMAND_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'channel.k8s.io'] as const;

/** The v4 error-stream status (k8s.io/kubelet pkg/cri/streaming/remotecommand/exec.go, v0.34). */
export function v4Status(outcome: RemoteCommandOutcome): string {
  if ('error' in outcome) {
    const message = `error executing command in container: ${outcome.error}`;
    return JSON.stringify({
      metadata: {},
      status: 'Failure',
      message: `Internal error occurred: ${message}`,
      reason: 'InternalError',
      details: { causes: [{ message }] },
      code: 500,
    });
  }
  if (outcome.exitCode === 0) return JSON.stringify({ metadata: {}, status: 'Success' });
  return JSON.stringify({
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: ${exitErrorText(outcome)}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(outcome.exitCode) }] },
  });
}

/** The exit error's text as containerd words it (internal/cri/server/container_exec.go). */
function exitErrorText(outcome: { exitCode: number; command: readonly string[] }): string {
  return `error executing command [${outcome.command.join(' ')}], exit code ${outcome.exitCode}`;
}

/** Before v4 the error stream carries only the text of a failure (v1WriteStatusFunc). */
function v1Status(outcome: RemoteCommandOutcome): string {
  if ('error' in outcome) return `Internal error occurred: error executing command in container: ${outcome.error}`;
  if (outcome.exitCode === 0) return '';
  return `command terminated with non-zero exit code: ${exitErrorText(outcome)}`;
}

/**
 * One exec or attach session, whatever carries it. Emits 'stdin' (Buffer), 'stdin-end',
 * 'resize' (TerminalSize) and 'close' (the client went away or the session finished).
 */
export abstract class RemoteCommandSession extends EventEmitter {
  closed = false;

  constructor(readonly options: RemoteCommandOptions) {
    super();
  }

  abstract writeStdout(data: Buffer | string): void;
  abstract writeStderr(data: Buffer | string): void;
  /** Bytes written and not yet taken by the client. */
  abstract get backlog(): number;
  /** Reports the outcome on the error stream and ends the connection. */
  abstract finish(outcome: RemoteCommandOutcome): void;
  /** Ends the connection without a status (the runtime is closing). */
  abstract abort(): void;

  protected markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }

  /** Parses the resize stream: JSON objects one after another (Go's json.Encoder). */
  protected resizeParser(): (chunk: Buffer) => void {
    let pending = '';
    return (chunk) => {
      pending += chunk.toString('utf8');
      if (pending.length > 64 * 1024) pending = '';
      for (;;) {
        const end = pending.indexOf('}');
        if (end < 0) return;
        const text = pending.slice(0, end + 1);
        pending = pending.slice(end + 1);
        try {
          const size = JSON.parse(text.slice(text.indexOf('{'))) as { Width?: unknown; Height?: unknown };
          if (typeof size.Width === 'number' && typeof size.Height === 'number') this.emit('resize', { width: size.Width, height: size.Height });
        } catch {
          // A malformed size is skipped, as the kubelet's decoder loop ends on one; the session goes on.
        }
      }
    };
  }
}

/** Remotecommand over SPDY: one stream per channel, opened by the client. */
export class SpdyRemoteCommandSession extends RemoteCommandSession {
  constructor(
    options: RemoteCommandOptions,
    private readonly connection: SpdyConnection,
    private readonly protocol: string,
    private readonly streams: Map<string, SpdyStream>,
  ) {
    super(options);
    const stdin = streams.get('stdin');
    if (stdin !== undefined) {
      stdin.on('data', (data: Buffer) => this.emit('stdin', data));
      // The client closing stdin, not the connection going away (that is 'close').
      stdin.on('end', () => {
        if (!connection.closed) this.emit('stdin-end');
      });
    }
    const resize = streams.get('resize');
    if (resize !== undefined) resize.on('data', this.resizeParser());
    connection.on('close', () => this.markClosed());
  }

  get backlog(): number {
    return this.connection.pendingBytes;
  }

  writeStdout(data: Buffer | string): void {
    this.streams.get('stdout')?.write(data);
  }

  writeStderr(data: Buffer | string): void {
    this.streams.get('stderr')?.write(data);
  }

  finish(outcome: RemoteCommandOutcome): void {
    if (this.closed) return;
    this.streams.get('stdout')?.end();
    this.streams.get('stderr')?.end();
    const error = this.streams.get('error');
    const status = this.protocol === 'v4.channel.k8s.io' ? v4Status(outcome) : v1Status(outcome);
    if (status !== '') error?.write(status);
    error?.end();
    this.connection.close();
  }

  abort(): void {
    this.connection.destroy();
  }
}

const WS_STDIN = 0;
const WS_STDOUT = 1;
const WS_STDERR = 2;
const WS_ERROR = 3;
const WS_RESIZE = 4;
/** v5: `[255, channel]` says the client closed that channel (client-go remotecommand, v5). */
const WS_CLOSE = 255;

/** Remotecommand over WebSocket: binary messages whose first byte names the channel. */
export class WebSocketRemoteCommandSession extends RemoteCommandSession {
  constructor(
    options: RemoteCommandOptions,
    private readonly socket: WebSocket,
    private readonly protocol: string,
  ) {
    super(options);
    const onResize = this.resizeParser();
    socket.on('message', (raw: Buffer, isBinary: boolean) => {
      const data = isBinary ? raw : Buffer.from(raw);
      if (data.length === 0) return;
      const channel = data[0];
      const payload = data.subarray(1);
      if (channel === WS_STDIN && options.stdin) {
        if (payload.length > 0) this.emit('stdin', Buffer.from(payload));
      } else if (channel === WS_RESIZE) {
        onResize(payload);
      } else if (channel === WS_CLOSE && protocol === 'v5.channel.k8s.io' && payload[0] === WS_STDIN) {
        this.emit('stdin-end');
      }
    });
    socket.on('close', () => this.markClosed());
    socket.on('error', () => socket.terminate());
    // The kubelet's first write: an empty message on the first output channel.
    this.send(options.stdout ? WS_STDOUT : options.stderr ? WS_STDERR : WS_ERROR, Buffer.alloc(0));
  }

  get backlog(): number {
    return this.socket.bufferedAmount;
  }

  private send(channel: number, data: Buffer | string): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    this.socket.send(Buffer.concat([Buffer.of(channel), bytes]), { binary: true });
  }

  writeStdout(data: Buffer | string): void {
    if (this.options.stdout) this.send(WS_STDOUT, data);
  }

  writeStderr(data: Buffer | string): void {
    if (this.options.stderr) this.send(WS_STDERR, data);
  }

  finish(outcome: RemoteCommandOutcome): void {
    if (this.closed) return;
    const status = this.protocol === 'channel.k8s.io' ? v1Status(outcome) : v4Status(outcome);
    if (status !== '') this.send(WS_ERROR, status);
    this.socket.close(1000);
    this.markClosed();
  }

  abort(): void {
    this.socket.terminate();
  }
}
