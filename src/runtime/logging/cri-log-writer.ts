import { close as closeCallback, mkdirSync, open as openCallback, openSync, write as writeCallback, writeSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { TidyUp } from '../../tidy-up.js';
import type { FileCalls } from '../../tuning/file-calls.js';
import { Rfc3339NanoFormatter, type Clock } from '../clock.js';

export type LogStream = 'stdout' | 'stderr';

/** The kubelet's limit for one log line; longer lines are split into partial (`P`) records. */
export const MAX_LOG_LINE_BYTES = 16 * 1024;

/**
 * Formats one CRI log record: `<RFC3339Nano> <stream> <P|F> <content>\n`, the format the kubelet
 * and `crictl logs` parse.
 */
export function formatLogRecord(
  nanos: bigint,
  stream: LogStream,
  partial: boolean,
  content: string,
  timestamps: Rfc3339NanoFormatter = new Rfc3339NanoFormatter(),
): string {
  return `${timestamps.format(nanos)} ${stream} ${partial ? 'P' : 'F'} ${content}\n`;
}

/** containerd creates CRI log files 0640. */
const LOG_FILE_MODE = 0o640;

/** The largest batch (UTF-16 units) written inline; larger ones go to the thread pool. */
const INLINE_WRITE_MAX = 16 * 1024;

/** How many log files stay open by default, across all containers of a runtime. */
export const DEFAULT_OPEN_LOG_FILES = 128;

const openAsync = promisify(openCallback);
const closeAsync = promisify(closeCallback);
function writeAsync(fd: number, data: string): Promise<number> {
  return new Promise((resolve, reject) => {
    writeCallback(fd, data, (err, written) => (err === null ? resolve(written) : reject(err)));
  });
}

interface OpenLogFile {
  /** The descriptor, opened for appending (a plain descriptor: the inline paths open with openSync). */
  fd: number;
  /** Writes in flight on the descriptor; only an unused one is closed to make room. */
  users: number;
  /** When it last moved to the newest end of the order (a count of such moves). */
  renewedAt: number;
}

/**
 * The open CRI log files of a runtime, at most `capacity` of them while idle (the least
 * recently used closed first, near enough: see `files`). A container's file, once opened (by its
 * start, its first write, or ReopenContainerLog), stays open until the container's writer closes
 * it (the container exited or was stopped, or its log is reopened), as containerd keeps a
 * container's log file open while the container runs; but no more than `capacity` files are
 * kept across the runtime's containers: with one descriptor per container, a node of 20,000
 * running containers ran out of descriptors (EMFILE) and then could not accept connections
 * either. A file closed to make room is opened again (by path) at its container's next write,
 * and kept again. So a chatty container costs one write per batch, not an open and a close,
 * whichever path (inline or the thread pool) the batch takes.
 *
 * Callers serialise the operations for one key (each CriLogWriter runs them on its own chain).
 * One per runtime, with the runtime's tidy-up queue (closes after a reply) and the formatter of
 * its records' timestamps.
 */
export class LogFileHandles {
  /**
   * Oldest first (a Map iterates in insertion order). A use moves a file to the newest end only
   * once it is in the older half: moving on every use costs a delete and an insert per write, and
   * the holes they leave make V8 rebuild the Map's table (in the old generation) every few writes.
   */
  private readonly files = new Map<object, OpenLogFile>();
  private renewals = 0;

  /** The timestamps of the records written to these files. */
  readonly timestamps = new Rfc3339NanoFormatter();

  constructor(
    readonly capacity: number = DEFAULT_OPEN_LOG_FILES,
    readonly tidyUp: TidyUp = new TidyUp(),
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`log file capacity must be a positive integer, not ${capacity}`);
  }

  /** Open files now (for tests and metrics). */
  get size(): number {
    return this.files.size;
  }

  /** Whether the key's file is open now (for tests). */
  isOpen(key: object): boolean {
    return this.files.has(key);
  }

  /** Runs `use` with the key's file open for appending, opening `path` if it is not open. */
  async with<T>(key: object, path: string, use: (fd: number) => Promise<T>): Promise<T> {
    let file = this.files.get(key);
    if (file === undefined) {
      const fd = await openAsync(path, 'a', LOG_FILE_MODE);
      // A lone start's descriptor may have been adopted for the key meanwhile: one stays open.
      file = this.files.get(key);
      if (file === undefined) file = this.add(key, fd);
      else this.tidyUp.closeLater(fd);
    } else {
      this.renew(key, file);
    }
    file.users++;
    try {
      return await use(file.fd);
    } finally {
      file.users--;
      this.trim();
    }
  }

  /** Appends `data` through the key's file in the thread pool, opening `path` if it is not open. */
  write(key: object, path: string, data: string): Promise<number> {
    return this.with(key, path, (fd) => writeAsync(fd, data));
  }

  /**
   * Appends data now, with the synchronous system calls, through the key's file, opening `path`
   * (and keeping it open among the others) if it is not open. For a small write of a lone call
   * (FileCalls.inline); like `with`, never for a key that has an operation in flight.
   */
  writeInline(key: object, path: string, data: string): void {
    let file = this.files.get(key);
    if (file === undefined) {
      file = this.add(key, openSync(path, 'a', LOG_FILE_MODE));
      this.trim();
    } else {
      this.renew(key, file);
    }
    writeSync(file.fd, data);
  }

  /**
   * Keeps `fd`, a descriptor open for appending to the key's file (a lone call's create), as the
   * key's open file; when the key has one open already, `fd` is closed as tidy-up.
   */
  adopt(key: object, fd: number): void {
    if (this.files.has(key)) {
      this.tidyUp.closeLater(fd);
      return;
    }
    this.add(key, fd);
    this.trim();
  }

  /**
   * Opens the file for appending with the synchronous call, creating it if it is missing (its
   * directory too, when that is missing), and returns the descriptor, which the caller closes. For
   * a call the file-call policy lets run inline (FileCalls.inline).
   */
  createInline(path: string): number {
    try {
      return openSync(path, 'a', LOG_FILE_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      mkdirSync(dirname(path), { recursive: true });
      return openSync(path, 'a', LOG_FILE_MODE);
    }
  }

  /** Opens `path` for the key again (creating the file), closing what the key had open. */
  async reopen(key: object, path: string): Promise<void> {
    await this.close(key);
    await this.with(key, path, async () => undefined);
  }

  /** Closes the key's file if it is open. */
  async close(key: object): Promise<void> {
    const file = this.files.get(key);
    if (file === undefined) return;
    this.files.delete(key);
    // close(2) releases the descriptor whatever it reports (Linux).
    await closeAsync(file.fd).catch(() => undefined);
  }

  private add(key: object, fd: number): OpenLogFile {
    const file = { fd, users: 0, renewedAt: ++this.renewals };
    this.files.set(key, file);
    return file;
  }

  private renew(key: object, file: OpenLogFile): void {
    if (this.renewals - file.renewedAt < this.capacity / 2) return;
    this.files.delete(key);
    this.files.set(key, file);
    file.renewedAt = ++this.renewals;
  }

  /** Closes the least recently used idle files beyond the capacity. */
  private trim(): void {
    let excess = this.files.size - this.capacity;
    if (excess <= 0) return;
    // Bounded: one pass over the map; files in use are skipped and trimmed on their release.
    for (const [key, file] of this.files) {
      if (excess <= 0) break;
      if (file.users > 0) continue;
      this.files.delete(key);
      // As tidy-up: an inline write that made room answers its call first.
      this.tidyUp.closeLater(file.fd);
      excess--;
    }
  }
}

/** The chain of a writer that wrote nothing yet (shared: no promise per idle container). */
const SETTLED: Promise<void> = Promise.resolve();

/**
 * Writes a container's output to its CRI log file. Output is split into lines per stream; a line
 * is written when its newline arrives (a trailing partial line at close is written as a full
 * one, as containerd's reader does at EOF). Writes are batched and asynchronous, and run one
 * after the other on one chain with `reopen` and `close`, so lines keep their order; `flush`,
 * `reopen` and `close` wait for them. The file opened at the start stays open among the
 * runtime's open log files (LogFileHandles) until `close`, or `reopen` opens the path again
 * (ReopenContainerLog), as containerd keeps it: after the kubelet renamed the file, output goes
 * to the renamed file until ReopenContainerLog. A small batch while at most one runtime call is
 * in flight is written with the synchronous calls (see FileCalls.inline); the others go through the
 * thread pool.
 *
 * One difference remains, for a container whose file the bound on open files closed meanwhile:
 * its next output opens the path again, so between a rename and ReopenContainerLog it goes to a
 * new file at the original path instead of the renamed one. Rotation (kubelet) calls
 * ReopenContainerLog right after the rename, so readers see the same result.
 */
export class CriLogWriter {
  private pending: string[] | undefined = undefined;
  private partialStdout = '';
  private partialStderr = '';
  private chain: Promise<void> = SETTLED;
  private scheduled = false;
  private closed = false;
  private written = 0;
  private failed = false;
  /** The descriptor a lone call's open created the file with, until `settleStart` (see there). */
  private startFd: number | undefined = undefined;
  /** Batches handed to the chain and not yet written. */
  private queued = 0;
  /** Attached clients (CRI Attach) see the output as it is written. */
  tap: ((stream: LogStream, text: string) => void) | undefined = undefined;

  private constructor(
    readonly path: string,
    private readonly files: LogFileHandles,
    private readonly clock: Clock,
    private readonly onError: (err: Error, path: string) => void,
    private readonly load: FileCalls | undefined,
  ) {}

  /**
   * Creates the log file (and its directory) for appending; it exists when this resolves. For a
   * lone call (`load`, see FileCalls.inline) the file is created inline and its descriptor kept until
   * `settleStart` (or `close`).
   */
  static async open(
    path: string,
    clock: Clock,
    onError: (err: Error, path: string) => void = () => undefined,
    files: LogFileHandles = new LogFileHandles(),
    load?: FileCalls,
  ): Promise<CriLogWriter> {
    const writer = new CriLogWriter(path, files, clock, onError, load);
    if (load?.inline === true) {
      writer.startFd = files.createInline(path);
      return writer;
    }
    // Kept among the open files: most containers write right after they start. The kubelet
    // creates the container's log directory before CreateContainer, so the directory is created
    // here only when the open finds it missing (crictl users, runtime-owned logs).
    try {
      await files.reopen(writer, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await mkdir(dirname(path), { recursive: true });
      await files.reopen(writer, path);
    }
    return writer;
  }

  /**
   * After a lone call's open: writes what the process printed so far through the descriptor the
   * create opened, and keeps that descriptor as the container's open log file (LogFileHandles);
   * later output takes the usual path through it. A started container's first lines (a banner) so cost one write inside StartContainer,
   * where they used to cost an open, a write and a close on the next turn of the event loop:
   * between the response and its trailers, which the client waits for. Does nothing for a writer
   * opened otherwise, or a second time.
   */
  settleStart(): void {
    const fd = this.startFd;
    if (fd === undefined) return;
    this.startFd = undefined;
    // With batches still on the chain the pending lines must follow them there (by path).
    const data = this.queued === 0 ? this.pending?.join('') : undefined;
    if (data !== undefined) this.pending = undefined;
    try {
      if (data !== undefined) {
        writeSync(fd, data);
        this.written += Buffer.byteLength(data);
      }
    } catch (err) {
      this.writeFailed(err);
    }
    // A writer already closed (a start that failed) keeps nothing open.
    if (this.closed) this.files.tidyUp.closeLater(fd);
    else this.files.adopt(this, fd);
  }

  /** Bytes written to log files by this writer (for the writable-layer figure of stats). */
  get bytesWritten(): number {
    return this.written;
  }

  /** The container's standard output (CommandIo). */
  stdout(text: string): void {
    this.write('stdout', text);
  }

  /** The container's standard error (CommandIo). */
  stderr(text: string): void {
    this.write('stderr', text);
  }

  write(stream: LogStream, text: string): void {
    if (this.closed || text === '') return;
    this.tap?.(stream, text);
    const now = this.clock.nowNanos();
    let buffer = this.partialOf(stream) + text;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      this.record(now, stream, buffer.slice(0, nl).replace(/\r$/, ''));
      buffer = buffer.slice(nl + 1);
    }
    while (Buffer.byteLength(buffer) > MAX_LOG_LINE_BYTES) {
      const chunk = buffer.slice(0, MAX_LOG_LINE_BYTES);
      this.queue(formatLogRecord(now, stream, true, chunk, this.files.timestamps));
      buffer = buffer.slice(MAX_LOG_LINE_BYTES);
    }
    this.setPartial(stream, buffer);
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
    this.drain();
    const reopened = this.chain.then(() => this.files.reopen(this, this.path));
    // Later writes wait for the reopen but must not fail because it did.
    this.chain = reopened.catch(() => undefined);
    await reopened;
  }

  /**
   * Writes any trailing partial line, flushes, and closes the file. With `waitForClose: false` it
   * resolves once everything is written (what a reader of the file needs) and the descriptor is
   * closed right after, without the caller waiting for it.
   */
  async close(options: { waitForClose?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    const now = this.clock.nowNanos();
    for (const stream of ['stdout', 'stderr'] as const) {
      const partial = this.partialOf(stream);
      if (partial !== '') this.record(now, stream, partial);
      this.setPartial(stream, '');
    }
    // Closed before the last flush: output arriving meanwhile (a dying process) is dropped
    // rather than reopening the file after it was closed.
    this.closed = true;
    await this.flush();
    this.settleStart();
    const closing = this.files.close(this);
    if (options.waitForClose !== false) await closing;
  }

  private partialOf(stream: LogStream): string {
    return stream === 'stdout' ? this.partialStdout : this.partialStderr;
  }

  private setPartial(stream: LogStream, text: string): void {
    if (stream === 'stdout') this.partialStdout = text;
    else this.partialStderr = text;
  }

  private record(now: bigint, stream: LogStream, line: string): void {
    let rest = line;
    while (Buffer.byteLength(rest) > MAX_LOG_LINE_BYTES) {
      this.queue(formatLogRecord(now, stream, true, rest.slice(0, MAX_LOG_LINE_BYTES), this.files.timestamps));
      rest = rest.slice(MAX_LOG_LINE_BYTES);
    }
    this.queue(formatLogRecord(now, stream, false, rest, this.files.timestamps));
  }

  private queue(record: string): void {
    if (this.pending === undefined) this.pending = [record];
    else this.pending.push(record);
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
    if (this.pending === undefined) return;
    const data = this.pending.join('');
    this.pending = undefined;
    this.queued++;
    this.chain = this.chain.then(async () => {
      try {
        // A small batch while at most one call is in flight is written at once (FileCalls.inline):
        // StopContainer waits for the last output to be written before the container is EXITED.
        if (this.startFd !== undefined) writeSync(this.startFd, data);
        else if (this.load?.inline === true && data.length <= INLINE_WRITE_MAX) this.files.writeInline(this, this.path, data);
        else await this.files.write(this, this.path, data);
        this.written += Buffer.byteLength(data);
      } catch (err) {
        this.writeFailed(err);
      } finally {
        this.queued--;
      }
    });
  }

  /** Keeps going: a vanished log directory must not take the container down; reported once. */
  private writeFailed(err: unknown): void {
    if (!this.failed) this.onError(err as Error, this.path);
    this.failed = true;
  }
}
