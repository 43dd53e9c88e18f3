import { writeSync } from 'node:fs';
import { pino, type Logger, type LoggerOptions } from 'pino';
import { TidyUp } from './tidy-up.js';

export type { Logger };

/**
 * Keys whose values are credential spec contents. They are redacted in every log line, at any
 * depth up to REDACT_DEPTH (the spec stays visible through `crictl inspect`, as on a real node).
 */
const REDACTED_KEYS: ReadonlySet<string> = new Set(['credential_spec', 'credentialSpec', 'gmsaCredentialSpec']);
/**
 * Keys whose values are registry credentials: the CRI AuthConfig of PullImage (password,
 * identity_token, registry_token, and `auth`, base64 of user:password, when it is a string) in
 * either spelling. Never logged by containerd or the kubelet; censored here wherever a line holds one.
 */
const SECRET_KEYS: ReadonlySet<string> = new Set(['password', 'identity_token', 'identityToken', 'registry_token', 'registryToken']);
const SECRET_CENSOR = '[redacted credential]';
/** Top-level keys are depth 1; `req.config.windows.security_context.credential_spec` is 5. */
const REDACT_DEPTH = 5;
const CENSOR = '[redacted credential spec]';

/** An object or array the redaction looks into (not a Buffer or typed array). */
function walkable(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !ArrayBuffer.isView(value);
}

/**
 * Value with every redacted key within `depth` levels censored. One walk: a level is copied only
 * when something in it changes, so a line that holds no spec comes back as itself and allocates
 * nothing, and what holds none is shared, not copied.
 */
function censored(value: object, depth: number): object {
  let copy: Record<string, unknown> | undefined;
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const child = (value as Record<string, unknown>)[key];
    const replacement = REDACTED_KEYS.has(key) ? CENSOR
      : SECRET_KEYS.has(key) || (key === 'auth' && typeof child === 'string') ? SECRET_CENSOR
        : depth > 1 && walkable(child) ? censored(child, depth - 1) : child;
    if (replacement === child) continue;
    copy ??= shallowCopy(value);
    copy[key] = replacement;
  }
  return copy ?? value;
}

/** Own properties with their prototype, so an Error stays an Error for pino's serializer. */
function shallowCopy(value: object): Record<string, unknown> {
  return Array.isArray(value)
    ? ([...(value as unknown[])] as unknown as Record<string, unknown>)
    : (Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value)) as Record<string, unknown>);
}

/**
 * pino's log formatter: credential specs out of the line, the caller's object left as it was.
 * pino's own `redact` (wildcard paths) copies every line even when it holds only an id (with
 * sonic-boom's batching, LineBatcher below, a third of the runtime's garbage per pod; figures in
 * bench/README.md); this walk allocates only for a line that holds a spec.
 */
export function redactCredentialSpecs(object: Record<string, unknown>): Record<string, unknown> {
  return censored(object, REDACT_DEPTH) as Record<string, unknown>;
}

/** `json`: one pino JSON line per entry, level by name; `text`: the kubelet's klog lines. */
export type LogFormat = 'json' | 'text';

export interface LoggerSettings {
  level?: string;
  name?: string;
  /**
   * `text` writes klog lines (`I1125 16:30:34.123456   12345 kubelet.js:310] "msg" key="value"`,
   * unbatched); `json` pino lines. Undefined: JSON, or pretty when `pretty` says so.
   */
  format?: LogFormat;
  /** Force pretty (true) or JSON (false) output; by default pretty only when stderr is a terminal. */
  pretty?: boolean;
  /**
   * Batch JSON lines into larger writes to stderr (a server logging on every call). Lines reach
   * stderr at the latest BATCH_FLUSH_MS after they were logged, at once for `error` and `fatal`,
   * on `logger.flush()` and at process exit. Ignored for pretty output.
   */
  batch?: boolean;
}

/** Bytes collected before a batched logger writes to stderr. */
const BATCH_MIN_BYTES = 4096;
/** Longest time a line of a batched logger waits in memory. */
const BATCH_FLUSH_MS = 100;
/** pino's level number of `error`: lines at this level or above are written at once. */
const IMMEDIATE_LEVEL = 50;

/**
 * The project's logger: pino JSON on stderr (levels by name, `"level":"info"`), pretty in a
 * terminal, or klog text; credential specs redacted in every format.
 */
export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? process.env.CRI_WINSIM_LOG_LEVEL ?? 'info',
    formatters: { log: redactCredentialSpecs, level: (label) => ({ level: label }) },
  };
  if (settings.name !== undefined) options.name = settings.name;
  if (settings.format === 'text') return klogLogger(options);
  const pretty = settings.format === 'json' ? false : (settings.pretty ?? process.stderr.isTTY === true);
  if (pretty) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } },
    });
  }
  if (settings.batch !== true) return pino(options, pino.destination({ fd: 2, sync: false }));
  // One write per line was a sixth of the runtime's CPU under load: lines are written in batches.
  const batcher = new LineBatcher(STDERR_FD, pino.destination({ fd: STDERR_FD, sync: false }));
  options.hooks = {
    logMethod(args, method, level) {
      method.apply(this, args);
      if (level >= IMMEDIATE_LEVEL) batcher.flush();
    },
  };
  return pino(options, batcher);
}

const STDERR_FD = 2;

/** Where a LineBatcher hands its batches: sonic-boom as pino.destination makes it. */
type BatchOutput = Pick<ReturnType<typeof pino.destination>, 'write' | 'flush' | 'flushSync'>;

/**
 * pino's destination for batched lines: collects them in an array and hands them on as one
 * string once BATCH_MIN_BYTES have gathered (as tidy-up, see flushAfterReplies) or BATCH_FLUSH_MS
 * after the first. sonic-boom's own batching (`minLength`) appends each line to a string and
 * measures the whole batch on every line (`Buffer.byteLength` flattens the concatenation): a copy
 * of the batch per line, the largest part of the runtime's garbage after redaction.
 */
class LineBatcher {
  private lines: string[] = [];
  private chars = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushQueued = false;
  /** The batcher's own tidy-up queue (a logger may outlive, or serve, several runtimes). */
  private readonly tidyUp = new TidyUp();

  constructor(
    private readonly fd: number,
    private readonly out: BatchOutput,
  ) {
    // The timer does not keep the process alive: what is still here at exit is written then.
    process.once('exit', () => this.flushAtExit());
  }

  write(line: string): void {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= BATCH_MIN_BYTES) this.flushAfterReplies();
    else if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), BATCH_FLUSH_MS);
      this.timer.unref();
    }
  }

  /**
   * A full batch is handed on as tidy-up (TidyUp), after the replies of this turn went out:
   * handing a batch to sonic-boom's write goes through the thread pool, and whichever call logged
   * the line that filled the batch waited for it, one call in twenty at concurrency 1.
   */
  private flushAfterReplies(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    this.tidyUp.later(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /** Hands the collected lines on now; `done` (pino's `logger.flush(cb)`) once they are passed on. */
  flush(done?: (err?: Error) => void): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.take();
    if (batch !== undefined) this.out.write(batch);
    if (done !== undefined) this.out.flush(done);
  }

  private take(): string | undefined {
    if (this.lines.length === 0) return undefined;
    const batch = this.lines.join('');
    this.lines = [];
    this.chars = 0;
    return batch;
  }

  /** At exit nothing asynchronous runs any more: older lines first (sonic-boom's), then ours. */
  private flushAtExit(): void {
    const batch = this.take();
    if (batch === undefined) return;
    try {
      this.out.flushSync();
    } catch {
      // sonic-boom not ready or already closed: our lines still go out below.
    }
    writeAllSync(this.fd, batch);
  }
}

/** Writes all of text to fd, retrying a full non-blocking pipe a bounded number of times. */
function writeAllSync(fd: number, text: string): void {
  let rest = Buffer.from(text);
  for (let attempt = 0; rest.length > 0 && attempt < 1000; ) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      attempt++;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    }
  }
}

// ---- klog text ----

/** pino's level numbers → klog's severity letters (klog has no debug/trace: they are V-levels of I). */
function severity(level: string): string {
  return level === 'fatal' ? 'F' : level === 'error' ? 'E' : level === 'warn' ? 'W' : 'I';
}

/** Keys of a pino line that the klog header carries (or klog has no place for). */
const HEADER_KEYS: ReadonlySet<string> = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'caller', 'name']);

/** A value as klog's text format prints it: strings quoted, numbers and booleans bare, the rest as JSON. */
function klogValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return '<nil>';
  const err = value as { type?: unknown; message?: unknown; stack?: unknown };
  if (typeof err.message === 'string' && typeof err.stack === 'string') return JSON.stringify(err.message); // pino's serialized Error
  return JSON.stringify(value);
}

const two = (n: number): string => String(n).padStart(2, '0');

/**
 * One pino JSON line as klog's text header and structured pairs (k8s.io/klog/v2 v2.130.1,
 * `Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg`, the pid space-padded to 7): `I1125
 * 16:30:34.123456   12345 kubelet.js:310] "watching" dir="/x"`. The time is local, as klog's.
 */
export function klogLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = new Date(typeof entry['time'] === 'number' ? entry['time'] : Date.now());
  const micros = String(time.getMilliseconds() * 1000).padStart(6, '0');
  const header =
    `${severity(String(entry['level']))}${two(time.getMonth() + 1)}${two(time.getDate())} ` +
    `${two(time.getHours())}:${two(time.getMinutes())}:${two(time.getSeconds())}.${micros} ` +
    `${String(entry['pid'] ?? process.pid).padStart(7, ' ')} ${typeof entry['caller'] === 'string' ? entry['caller'] : '???:1'}] `;
  const pairs = Object.entries(entry)
    .filter(([key]) => !HEADER_KEYS.has(key))
    .map(([key, value]) => ` ${key}=${klogValue(value)}`)
    .join('');
  return `${header}${JSON.stringify(String(entry['msg'] ?? ''))}${pairs}\n`;
}

/** The file:line that called the logger, from a stack taken in pino's mixin (text format only). */
function callerOf(stack: string | undefined): string | undefined {
  for (const frame of (stack ?? '').split('\n').slice(1)) {
    const m = /\(?(?:file:\/\/)?([^()\s]+):(\d+):\d+\)?$/.exec(frame.trim());
    if (m === null) continue;
    const file = m[1]!;
    if (file.includes('/node_modules/') || file.startsWith('node:') || /\/log\.[jt]s$/.test(file)) continue;
    return `${file.slice(file.lastIndexOf('/') + 1)}:${m[2]}`;
  }
  return undefined;
}

function klogLogger(options: LoggerOptions): Logger {
  // Synchronous: text is for people reading a terminal or a file, in order, not for load.
  const out = pino.destination({ fd: STDERR_FD, sync: true });
  return pino(
    {
      ...options,
      mixin: () => {
        const caller = callerOf(new Error().stack);
        return caller === undefined ? {} : { caller };
      },
    },
    { write: (line: string) => out.write(klogLine(line)), flush: (cb?: (err?: Error) => void) => { out.flushSync(); cb?.(); } } as unknown as NodeJS.WritableStream,
  );
}

/** A logger that writes nothing, for library use and tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
