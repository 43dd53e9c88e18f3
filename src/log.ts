import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * Paths whose values are credential spec contents. They are redacted by configuration in every
 * log line (the spec stays visible through `crictl inspect`, as on a real node).
 */
const REDACT_PATHS = [
  'credential_spec',
  'credentialSpec',
  'gmsaCredentialSpec',
  '*.credential_spec',
  '*.credentialSpec',
  '*.gmsaCredentialSpec',
  '*.*.credential_spec',
  '*.*.credentialSpec',
  '*.*.*.credential_spec',
  '*.*.*.*.credential_spec',
];

export interface LoggerSettings {
  level?: string;
  name?: string;
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

/** The project's logger: pino JSON on stderr, pretty in a terminal, credential specs redacted. */
export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? process.env.CRI_WINSIM_LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted credential spec]' },
  };
  if (settings.name !== undefined) options.name = settings.name;
  const pretty = settings.pretty ?? process.stderr.isTTY === true;
  if (pretty) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } },
    });
  }
  if (settings.batch !== true) return pino(options, pino.destination({ fd: 2, sync: false }));
  // One write per line was a sixth of the runtime's CPU under load. pino.destination flushes its
  // buffer at process exit by itself (on-exit-leak-free).
  const destination = pino.destination({ fd: 2, sync: false, minLength: BATCH_MIN_BYTES });
  let timer: NodeJS.Timeout | undefined;
  const flushSoon = (): void => {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      destination.flush();
    }, BATCH_FLUSH_MS);
    // A pending flush must not keep the process alive; exit flushes anyway.
    timer.unref();
  };
  options.hooks = {
    logMethod(args, method, level) {
      method.apply(this, args);
      if (level >= IMMEDIATE_LEVEL) destination.flush();
      else flushSoon();
    },
  };
  return pino(options, destination);
}

/** A logger that writes nothing, for library use and tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
