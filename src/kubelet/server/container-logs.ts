/**
 * Container logs as the kubelet serves them: the query of /containerLogs decoded into
 * PodLogOptions and validated (pkg/kubelet/server/server.go getContainerLogs and
 * pkg/apis/core/v1/validation ValidatePodLogOptions, v1.34), and the CRI log file read the way
 * k8s.io/cri-client/pkg/logs ReadLogs (v0.34) reads it: `<RFC3339Nano> stdout|stderr P|F text`
 * records, tail by file lines, since, byte limit, timestamps, and follow until the container is
 * no longer running.
 */
import { watch, type FSWatcher } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

export interface PodLogOptions {
  readonly follow: boolean;
  readonly previous: boolean;
  readonly timestamps: boolean;
  readonly tailLines?: number;
  readonly limitBytes?: number;
  readonly sinceSeconds?: number;
  /** Nanoseconds since the epoch. */
  readonly sinceTimeNanos?: bigint;
}

export type LogOptionsResult =
  | { readonly ok: true; readonly options: PodLogOptions }
  | { readonly ok: false; readonly status: number; readonly message: string };

/** strconv.ParseBool, which the query parameter codec uses for booleans. */
function parseBool(value: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

/** strconv.ParseInt(v, 10, 64), within the safe integer range. */
function parseInt64(value: string): number | undefined {
  if (!/^[+-]?\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

// Upstream texts (pkg/kubelet/server/server.go v1.34); the JSON-looking bodies are plain text there.
export const UNABLE_TO_DECODE_QUERY = '{"message": "Unable to decode query."}';
export const INVALID_REQUEST = '{"message": "Invalid request."}';

/** The query of a /containerLogs request as v1.PodLogOptions, or the kubelet's answer to a bad one. */
export function parseLogOptions(query: URLSearchParams): LogOptionsResult {
  const values = new Map<string, string>();
  for (const [k, v] of query) if (!values.has(k)) values.set(k, v);
  // backwards compatibility for the "tail" query parameter; "all" is the same as omitting it
  const tail = values.get('tail');
  if (tail !== undefined && tail !== '') {
    if (tail === 'all') values.delete('tailLines');
    else values.set('tailLines', tail);
  }
  const bad: LogOptionsResult = { ok: false, status: 400, message: UNABLE_TO_DECODE_QUERY };
  const bool = (name: string): boolean | undefined | null => {
    const v = values.get(name);
    if (v === undefined || v === '') return undefined;
    const parsed = parseBool(v);
    return parsed === undefined ? null : parsed;
  };
  const int = (name: string): number | undefined | null => {
    const v = values.get(name);
    if (v === undefined || v === '') return undefined;
    const parsed = parseInt64(v);
    return parsed === undefined ? null : parsed;
  };
  const follow = bool('follow');
  const previous = bool('previous');
  const timestamps = bool('timestamps');
  const tailLines = int('tailLines');
  const limitBytes = int('limitBytes');
  const sinceSeconds = int('sinceSeconds');
  if ([follow, previous, timestamps, tailLines, limitBytes, sinceSeconds].includes(null)) return bad;
  let sinceTimeNanos: bigint | undefined;
  const sinceTime = values.get('sinceTime');
  if (sinceTime !== undefined && sinceTime !== '') {
    const parsed = parseTimestamp(sinceTime);
    if (parsed === undefined) return bad;
    // metav1.Time is decoded at second precision (RFC3339).
    sinceTimeNanos = (parsed.nanos / 1_000_000_000n) * 1_000_000_000n;
  }
  const stream = values.get('stream');
  const invalid: LogOptionsResult = { ok: false, status: 422, message: INVALID_REQUEST };
  if (typeof tailLines === 'number' && tailLines < 0) return invalid;
  if (typeof limitBytes === 'number' && limitBytes < 1) return invalid;
  if (typeof sinceSeconds === 'number' && sinceTimeNanos !== undefined) return invalid;
  if (typeof sinceSeconds === 'number' && sinceSeconds < 1) return invalid;
  if (stream !== undefined && stream !== '') {
    if (!['All', 'Stdout', 'Stderr'].includes(stream)) return invalid;
    if (stream !== 'All' && typeof tailLines === 'number') return invalid;
    if (stream !== 'All') {
      // PodLogsQuerySplitStreams is alpha (off) in v1.34.
      return { ok: false, status: 400, message: `unable to return the given log stream: "${stream}". Please enable PodLogsQuerySplitStreams feature gate in kubelet` };
    }
  }
  return {
    ok: true,
    options: {
      follow: follow ?? false,
      previous: previous ?? false,
      timestamps: timestamps ?? false,
      ...(typeof tailLines === 'number' ? { tailLines } : {}),
      ...(typeof limitBytes === 'number' ? { limitBytes } : {}),
      ...(typeof sinceSeconds === 'number' ? { sinceSeconds } : {}),
      ...(sinceTimeNanos !== undefined ? { sinceTimeNanos } : {}),
    },
  };
}

export interface ParsedTimestamp {
  readonly nanos: bigint;
  /** The same instant in RFC3339NanoFixed (nine fractional digits), as the kubelet writes it. */
  readonly fixed: string;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** time.Parse(RFC3339NanoLenient). */
export function parseTimestamp(text: string): ParsedTimestamp | undefined {
  const m = TIMESTAMP.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, frac = '', zone] = m as unknown as [string, string, string, string, string, string, string, string | undefined, string];
  const wallMs = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (Number.isNaN(wallMs)) return undefined;
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    offsetMinutes = sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  }
  const fraction = frac.padEnd(9, '0');
  const nanos = BigInt(wallMs - offsetMinutes * 60_000) * 1_000_000n + BigInt(fraction);
  const fixedZone = offsetMinutes === 0 ? 'Z' : zone;
  return { nanos, fixed: `${y}-${mo}-${d}T${h}:${mi}:${s}.${fraction}${fixedZone}` };
}

export interface LogMessage {
  readonly timestamp: ParsedTimestamp;
  readonly stream: 'stdout' | 'stderr';
  /** The content; a full (F) record keeps its newline, a partial (P) one has none. */
  readonly log: Buffer;
}

/** parseCRILog; undefined for a line that is not a CRI log record. */
export function parseCriLogLine(line: Buffer): LogMessage | undefined {
  const first = line.indexOf(0x20);
  if (first < 0) return undefined;
  const timestamp = parseTimestamp(line.subarray(0, first).toString('latin1'));
  if (timestamp === undefined) return undefined;
  const second = line.indexOf(0x20, first + 1);
  if (second < 0) return undefined;
  const stream = line.subarray(first + 1, second).toString('latin1');
  if (stream !== 'stdout' && stream !== 'stderr') return undefined;
  const third = line.indexOf(0x20, second + 1);
  if (third < 0) return undefined;
  const tags = line.subarray(second + 1, third).toString('latin1').split(':');
  let rest = line;
  if (tags[0] === 'P' && rest.length > 0 && rest[rest.length - 1] === 0x0a) rest = rest.subarray(0, rest.length - 1);
  return { timestamp, stream, log: rest.subarray(third + 1) };
}

const TAIL_BLOCK = 1024;

/** findTailLineStartIndex: the offset where the last `n` lines of the file begin. */
export async function tailStart(file: FileHandle, n: number | undefined): Promise<number> {
  if (n === undefined) return 0;
  const size = (await file.stat()).size;
  let left = 0;
  let count = 0;
  let buf = Buffer.alloc(0);
  for (let right = size; right > 0 && count <= n; right -= TAIL_BLOCK) {
    left = Math.max(0, right - TAIL_BLOCK);
    buf = Buffer.alloc(right - left);
    await file.read(buf, 0, buf.length, left);
    for (const byte of buf) if (byte === 0x0a) count++;
  }
  for (; count > n; count--) {
    const idx = buf.indexOf(0x0a) + 1;
    buf = buf.subarray(idx);
    left += idx;
  }
  return left;
}

export interface LogSink {
  /** Writes to the response; resolves when it may take more. */
  write(stream: 'stdout' | 'stderr', data: Buffer): Promise<void>;
  /** True once the client went away. */
  readonly closed: boolean;
  /** Calls `listener` when the client goes away (a follow stops waiting at once). */
  onClose?(listener: () => void): void;
}

export interface ReadLogsOptions {
  readonly options: PodLogOptions;
  /** "now" for sinceSeconds, in nanoseconds. */
  readonly nowNanos: bigint;
  /** Whether the container is still running (ContainerStatus); follow stops when it is not. */
  readonly isRunning: () => Promise<boolean>;
  /** How long follow waits for a change before it looks again (logForceCheckPeriod, 1 s). */
  readonly forceCheckMs?: number;
}

const READ_CHUNK = 64 * 1024;

/** ReadLogs: copies the log file at `path` to the sink. Rejects with the kubelet's texts. */
export async function readLogs(path: string, sink: LogSink, { options, nowNanos, isRunning, forceCheckMs = 1000 }: ReadLogsOptions): Promise<void> {
  let resolved: string;
  try {
    resolved = await realpath(path);
  } catch (err) {
    throw new Error(`failed to try resolving symlinks in path "${path}": ${(err as Error).message}`, { cause: err });
  }
  let file: FileHandle;
  try {
    file = await open(resolved, 'r');
  } catch (err) {
    throw new Error(`failed to open log file "${resolved}": ${(err as Error).message}`, { cause: err });
  }
  let watcher: FSWatcher | undefined;
  let wake: (() => void) | undefined;
  sink.onClose?.(() => wake?.());
  try {
    let since = -1n;
    if (options.sinceSeconds !== undefined) since = nowNanos - BigInt(options.sinceSeconds) * 1_000_000_000n;
    if (options.sinceTimeNanos !== undefined && options.sinceTimeNanos > since) since = options.sinceTimeNanos;
    let position = await tailStart(file, options.tailLines);
    const limited = options.tailLines !== undefined && !options.follow;
    let remainingLines = options.tailLines ?? -1;
    let remainingBytes = options.limitBytes ?? Number.MAX_SAFE_INTEGER;
    let isNewLine = true;
    let found = true;
    let pending = Buffer.alloc(0);
    const chunk = Buffer.alloc(READ_CHUNK);

    /** Writes one record; false when the byte limit is reached. */
    const write = async (msg: LogMessage): Promise<boolean> => {
      if (msg.timestamp.nanos < since) return true;
      let line = msg.log;
      if (options.timestamps && isNewLine) line = Buffer.concat([Buffer.from(`${msg.timestamp.fixed} `), line]);
      if (line.length > remainingBytes) line = line.subarray(0, remainingBytes);
      await sink.write(msg.stream, line);
      remainingBytes -= line.length;
      isNewLine = msg.log.length === 0 || msg.log[msg.log.length - 1] === 0x0a;
      return remainingBytes > 0;
    };

    for (;;) {
      if (sink.closed) return;
      if (limited && remainingLines === 0) return;
      const { bytesRead } = await file.read(chunk, 0, READ_CHUNK, position);
      if (bytesRead > 0) {
        position += bytesRead;
        pending = pending.length === 0 ? Buffer.from(chunk.subarray(0, bytesRead)) : Buffer.concat([pending, chunk.subarray(0, bytesRead)]);
        let start = 0;
        for (let nl = pending.indexOf(0x0a, start); nl >= 0; nl = pending.indexOf(0x0a, start)) {
          const line = pending.subarray(start, nl + 1);
          start = nl + 1;
          const msg = parseCriLogLine(line);
          if (msg === undefined) continue; // upstream logs and skips a line it cannot parse
          if (!(await write(msg))) return;
          if (limited && --remainingLines === 0) return;
          if (sink.closed) return;
        }
        pending = pending.subarray(start);
        continue;
      }
      // End of file.
      if (!options.follow) {
        // An incomplete last line is still written.
        if (pending.length > 0) {
          const msg = parseCriLogLine(pending);
          if (msg !== undefined) await write(msg);
        }
        return;
      }
      if (!found) return;
      if (watcher === undefined) {
        try {
          watcher = watch(dirname(resolved), (_event, name) => {
            if (name === null || name === basename(resolved)) wake?.();
          });
          watcher.on('error', () => wake?.());
        } catch (err) {
          throw new Error(`failed to watch directory "${dirname(resolved)}": ${(err as Error).message}`, { cause: err });
        }
        continue; // read once more: a write may have come before the watch
      }
      // waitLogs: no need to wait when the container is not running.
      if (!(await isRunning())) {
        found = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { wake = undefined; resolve(); }, forceCheckMs);
        wake = () => { clearTimeout(timer); wake = undefined; resolve(); };
      });
    }
  } finally {
    wake?.();
    watcher?.close();
    await file.close();
  }
}
