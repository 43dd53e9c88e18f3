import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { formatRfc3339Nano, type Clock } from '../clock.js';

export type LogStream = 'stdout' | 'stderr';

/** The kubelet's limit for one log line; longer lines are split into partial (`P`) records. */
export const MAX_LOG_LINE_BYTES = 16 * 1024;

/**
 * Formats one CRI log record: `<RFC3339Nano> <stream> <P|F> <content>\n`, the format the kubelet
 * and `crictl logs` parse.
 */
export function formatLogRecord(nanos: bigint, stream: LogStream, partial: boolean, content: string): string {
  return `${formatRfc3339Nano(nanos)} ${stream} ${partial ? 'P' : 'F'} ${content}\n`;
}

/**
 * Writes a container's output to its CRI log file. Output is split into lines per stream; a line
 * is written when its newline arrives (a trailing partial line at close is written as a full
 * one, as containerd's reader does at EOF). Writes are batched and asynchronous; `flush`,
 * `reopen` and `close` wait for them.
 */
export class CriLogWriter {
  private pending: string[] = [];
  private partial: Record<LogStream, string> = { stdout: '', stderr: '' };
  private chain: Promise<void> = Promise.resolve();
  private scheduled = false;
  private closed = false;
  private written = 0;
  private lastError: Error | undefined;

  private constructor(
    readonly path: string,
    private handle: FileHandle,
    private readonly clock: Clock,
    private readonly onError: (err: Error) => void,
  ) {}

  /** Opens (creating it and its directory) the log file for appending. */
  static async open(path: string, clock: Clock, onError: (err: Error) => void = () => undefined): Promise<CriLogWriter> {
    await mkdir(dirname(path), { recursive: true });
    const handle = await open(path, 'a', 0o640);
    return new CriLogWriter(path, handle, clock, onError);
  }

  /** Bytes written to log files by this writer (for the writable-layer figure of stats). */
  get bytesWritten(): number {
    return this.written;
  }

  write(stream: LogStream, text: string): void {
    if (this.closed || text === '') return;
    const now = this.clock.nowNanos();
    let buffer = this.partial[stream] + text;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      this.record(now, stream, buffer.slice(0, nl).replace(/\r$/, ''));
      buffer = buffer.slice(nl + 1);
    }
    while (Buffer.byteLength(buffer) > MAX_LOG_LINE_BYTES) {
      const chunk = buffer.slice(0, MAX_LOG_LINE_BYTES);
      this.pending.push(formatLogRecord(now, stream, true, chunk));
      buffer = buffer.slice(MAX_LOG_LINE_BYTES);
    }
    this.partial[stream] = buffer;
    this.schedule();
  }

  /** Waits until everything written so far is on disk. */
  async flush(): Promise<void> {
    this.drain();
    await this.chain;
  }

  /**
   * Closes the current file and opens the path again (ReopenContainerLog: after log rotation
   * renamed the file, new output goes to a new file at the original path). The file exists again
   * when this resolves.
   */
  async reopen(): Promise<void> {
    if (this.closed) throw new Error(`log writer for ${this.path} is closed`);
    await this.flush();
    const next = await open(this.path, 'a', 0o640);
    const previous = this.handle;
    this.handle = next;
    await previous.close().catch(() => undefined);
  }

  /** Writes any trailing partial line, flushes, and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    const now = this.clock.nowNanos();
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream] !== '') this.record(now, stream, this.partial[stream]);
      this.partial[stream] = '';
    }
    await this.flush();
    this.closed = true;
    await this.handle.close().catch(() => undefined);
  }

  private record(now: bigint, stream: LogStream, line: string): void {
    let rest = line;
    while (Buffer.byteLength(rest) > MAX_LOG_LINE_BYTES) {
      this.pending.push(formatLogRecord(now, stream, true, rest.slice(0, MAX_LOG_LINE_BYTES)));
      rest = rest.slice(MAX_LOG_LINE_BYTES);
    }
    this.pending.push(formatLogRecord(now, stream, false, rest));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.drain();
    });
  }

  private drain(): void {
    if (this.pending.length === 0) return;
    const data = this.pending.join('');
    this.pending = [];
    this.chain = this.chain.then(async () => {
      try {
        await this.handle.write(data);
        this.written += Buffer.byteLength(data);
      } catch (err) {
        // Keep going: a vanished log directory must not take the container down.
        if (this.lastError === undefined) this.onError(err as Error);
        this.lastError = err as Error;
      }
    });
  }
}
