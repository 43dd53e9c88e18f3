/**
 * How the command line fails: usage errors (exit 2), failures (exit 1), a command's own exit
 * status (`kubelet exec`), and one-line texts for a runtime that cannot be reached or fails.
 *
 * Exit codes. kubectl exits 1 for every error, usage errors included (cmdutil.DefaultErrorExitCode),
 * and so does commander; Go's flag package exits 2 for a bad command line, as POSIX tools do. A CI
 * job has to tell "the pipeline calls cri-winsim wrongly" from "a pod failed", so usage errors exit
 * 2 here: unknown flags and commands, missing arguments, bad flag values, conflicting flags.
 */
import * as grpc from '@grpc/grpc-js';
import { DurationError, formatGoDuration, parseGoDuration } from './go-duration.js';

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** The command line itself is wrong: printed as `error: …` with a pointer to --help, exit 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A command that ends with a status of its own (`kubelet exec`: the command's exit code). */
export class ExitStatusError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'ExitStatusError';
  }
}

/** pflag's text for a flag value its type refuses (spf13/pflag v1.0.10 errors.go InvalidValueError). */
export function invalidFlagValue(flag: string, value: string, cause: string): UsageError {
  return new UsageError(`invalid argument ${JSON.stringify(value)} for ${JSON.stringify(flag)} flag: ${cause}`);
}

/** A duration flag's value in nanoseconds, Go syntax; a bad value is a usage error naming the flag. */
export function durationFlag(flag: string, value: string): bigint {
  try {
    return parseGoDuration(value);
  } catch (err) {
    if (err instanceof DurationError) throw invalidFlagValue(flag, value, err.message);
    throw err;
  }
}

/** A duration flag that must be positive (timeouts: 0 would expire at once). */
export function positiveDurationFlag(flag: string, value: string): bigint {
  const ns = durationFlag(flag, value);
  if (ns <= 0n) throw invalidFlagValue(flag, value, `must be greater than 0, not ${formatGoDuration(ns)}`);
  return ns;
}

/** An integer flag (strconv.ParseInt's texts, as pflag's int flags print them). */
export function integerFlag(flag: string, value: string, range: { min?: number; max?: number } = {}): number {
  if (!/^[+-]?\d+$/.test(value)) throw invalidFlagValue(flag, value, `strconv.ParseInt: parsing ${JSON.stringify(value)}: invalid syntax`);
  const n = Number(value);
  if (range.min !== undefined && n < range.min) throw invalidFlagValue(flag, value, `must be at least ${range.min}`);
  if (range.max !== undefined && n > range.max) throw invalidFlagValue(flag, value, `must be at most ${range.max}`);
  return n;
}

const grpcCodeNames = Object.fromEntries(Object.entries(grpc.status).filter(([, v]) => typeof v === 'number').map(([k, v]) => [v as number, k]));

/** grpc-go's names for the codes (`DeadlineExceeded`), as crictl and the kubelet print them. */
function codeName(code: number): string {
  const constant = grpcCodeNames[code];
  if (constant === undefined) return `Code(${code})`;
  return constant
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')
    .replace(/^Ok$/, 'OK');
}

/**
 * A gRPC status description without grpc-js's empty `Resolution note: ` (it ends "No connection
 * established. Last error: … Resolution note: " when the name resolved fine).
 */
export function cleanGrpcDetails(details: string): string {
  return details.replace(/\.?\s*Resolution note:\s*$/, '').replace(/\s+$/, '');
}

function isGrpcError(err: unknown): err is grpc.ServiceError {
  return typeof (err as Partial<grpc.ServiceError>)?.code === 'number' && typeof (err as Partial<grpc.ServiceError>).details === 'string';
}

export interface RuntimeErrorContext {
  readonly endpoint: string;
  /** The socket path of the endpoint, for the hint. */
  readonly socketPath?: string;
  /** The deadline of each call (for DeadlineExceeded). */
  readonly timeoutNs?: bigint;
  /** The flag that sets the endpoint, for the hint. */
  readonly endpointFlag?: string;
}

/**
 * One line for a runtime that could not be reached at all (the Version probe failed): what went
 * wrong in a user's words and what to do about it.
 */
export function unreachableRuntimeText(err: unknown, context: RuntimeErrorContext): string {
  const { endpoint } = context;
  const start = `is the runtime running? Start it with \`cri-winsim runtime --listen ${endpoint}\`, or point ${context.endpointFlag ?? '--container-runtime-endpoint'} at the socket it listens on`;
  if (!isGrpcError(err)) return `cannot reach the container runtime at ${endpoint}: ${err instanceof Error ? err.message : String(err)}`;
  const details = cleanGrpcDetails(err.details);
  const errno = /\b(ENOENT|ECONNREFUSED|EACCES|EPERM|ENOTSOCK|ETIMEDOUT)\b/.exec(details)?.[1];
  switch (errno) {
    case 'ENOENT':
      return `cannot reach the container runtime at ${endpoint}: there is no socket at ${context.socketPath ?? 'that path'}; ${start}`;
    case 'ECONNREFUSED':
      return `cannot reach the container runtime at ${endpoint}: nothing listens on the socket (connection refused; a runtime that stopped left it behind?); ${start}`;
    case 'EACCES':
    case 'EPERM':
      return `cannot reach the container runtime at ${endpoint}: permission denied on ${context.socketPath ?? 'the socket'}; run as a user who may open it (the runtime's user, or root)`;
    case 'ENOTSOCK':
      return `cannot reach the container runtime at ${endpoint}: ${context.socketPath ?? 'the path'} is not a socket; point ${context.endpointFlag ?? '--container-runtime-endpoint'} at the runtime's socket`;
    default:
      break;
  }
  if (err.code === grpc.status.DEADLINE_EXCEEDED) {
    const within = context.timeoutNs === undefined ? '' : ` within ${formatGoDuration(context.timeoutNs)} (--runtime-request-timeout)`;
    return `the container runtime at ${endpoint} did not answer${within}; is it overloaded or stopped? Try again, or give a longer --runtime-request-timeout`;
  }
  if (err.code === grpc.status.UNIMPLEMENTED) {
    return `the endpoint ${endpoint} does not serve the CRI v1 API (runtime.v1.RuntimeService/Version: ${details}); is it a CRI v1 runtime?`;
  }
  if (err.code === grpc.status.UNAVAILABLE) return `cannot reach the container runtime at ${endpoint}: ${details}; ${start}`;
  return `the container runtime at ${endpoint} refused the version check: rpc error: code = ${codeName(err.code)} desc = ${details}`;
}

/** One line for a call that failed after the runtime was reached. */
export function runtimeCallFailedText(err: unknown, endpoint: string): string | undefined {
  if (!isGrpcError(err)) return undefined;
  const details = cleanGrpcDetails(err.details);
  if (err.code === grpc.status.UNAVAILABLE) {
    return `lost the connection to the container runtime at ${endpoint}: ${details}; is it still running?`;
  }
  return `the container runtime at ${endpoint} failed: rpc error: code = ${codeName(err.code)} desc = ${details}`;
}

/** Everything about an error, for --v=4 and above: code, details, metadata, stack. */
export function errorDetails(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const grpcError = err as Partial<grpc.ServiceError>;
  const lines = [err.stack ?? `${err.name}: ${err.message}`];
  if (typeof grpcError.code === 'number') lines.push(`gRPC code: ${codeName(grpcError.code)} (${grpcError.code})`, `gRPC details: ${grpcError.details ?? ''}`);
  const metadata = grpcError.metadata?.getMap();
  if (metadata !== undefined && Object.keys(metadata).length > 0) lines.push(`gRPC metadata: ${JSON.stringify(metadata)}`);
  return lines.join('\n');
}
