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
}

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
  return pino(options, pino.destination({ fd: 2, sync: false }));
}

/** A logger that writes nothing, for library use and tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
