/**
 * The logging flags every long-running command shares, named as the kubelet's (component-base
 * logs): `-v, --v N` (klog verbosity), `--logging-format json|text`, and this project's
 * `--log-level` (pino's level names). `--v` also decides how much a failing command prints: from
 * 4 on, an error's gRPC code, details, metadata and stack follow its one-line text.
 */
import { Option, type Command } from 'commander';
import { invalidFlagValue } from './cli-errors.js';
import type { LogFormat } from '../log.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['json', 'text'] as const;

/** From this verbosity on, errors are printed with everything known about them. */
export const DETAIL_VERBOSITY = 4;

export interface LogFlagValues {
  v?: string;
  logLevel?: string;
  loggingFormat?: LogFormat;
}

export interface LogSettings {
  readonly verbosity: number;
  readonly level: string;
  /** Undefined: JSON, pretty when stderr is a terminal (the default). */
  readonly format?: LogFormat;
}

/** Adds -v/--v, --log-level and --logging-format (`defaultLevel`: the level without either flag). */
export function addLogFlags(command: Command, defaultLevel = 'info'): Command {
  return command
    .addOption(new Option('-v, --v <level>', 'number for the log level verbosity (klog): 4 and up log at debug and print error details, 6 and up at trace'))
    .addOption(new Option('--log-level <level>', `log level by name (default: ${defaultLevel}, or what --v sets)`).choices(LOG_LEVELS))
    .addOption(new Option('--logging-format <format>', 'json (pino lines, level names) or text (klog lines: I1125 16:30:34.123456   12345 file.ts:12] "msg" key="value"); default json, pretty in a terminal').choices(LOG_FORMATS));
}

/** The verbosity of --v: a non-negative integer (klog's Level is an int32). */
export function verbosity(value: string | undefined): number {
  if (value === undefined) return 0;
  if (!/^\d+$/.test(value) || Number(value) > 2 ** 31 - 1) throw invalidFlagValue('-v, --v', value, `strconv.ParseInt: parsing ${JSON.stringify(value)}: invalid syntax`);
  return Number(value);
}

/** --log-level when given; else what --v asks for; else the command's default. */
export function logSettings(values: LogFlagValues, defaultLevel = 'info'): LogSettings {
  const v = verbosity(values.v);
  const fromVerbosity = v >= 6 ? 'trace' : v >= DETAIL_VERBOSITY ? 'debug' : undefined;
  const level = values.logLevel ?? fromVerbosity ?? defaultLevel;
  return { verbosity: v, level, ...(values.loggingFormat === undefined ? {} : { format: values.loggingFormat }) };
}
