import { status, type ServiceError, Metadata } from '@grpc/grpc-js';
import { RuntimeError, type RuntimeErrorCode } from '../runtime/errors.js';

/**
 * The one place where errors become gRPC statuses. Runtime errors keep their code and message;
 * anything else is an INTERNAL error whose message carries no stack.
 */
const STATUS_OF: Record<RuntimeErrorCode, status> = {
  InvalidArgument: status.INVALID_ARGUMENT,
  NotFound: status.NOT_FOUND,
  AlreadyExists: status.ALREADY_EXISTS,
  FailedPrecondition: status.FAILED_PRECONDITION,
  DeadlineExceeded: status.DEADLINE_EXCEEDED,
  ResourceExhausted: status.RESOURCE_EXHAUSTED,
  Unimplemented: status.UNIMPLEMENTED,
  Unavailable: status.UNAVAILABLE,
  Internal: status.INTERNAL,
  Unknown: status.UNKNOWN,
  Canceled: status.CANCELLED,
  PermissionDenied: status.PERMISSION_DENIED,
  Aborted: status.ABORTED,
  OutOfRange: status.OUT_OF_RANGE,
  DataLoss: status.DATA_LOSS,
  Unauthenticated: status.UNAUTHENTICATED,
};

/** Status names as Go's codes.Code.String() spells them (the labels the kubelet's metrics use). */
const STATUS_NAMES: readonly string[] = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists',
  'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange',
  'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated',
];

export function statusName(code: status): string {
  return STATUS_NAMES[code] ?? `Code(${code})`;
}

/** A ServiceError as grpc-js expects from a handler. */
export interface CriStatusError extends Partial<ServiceError> {
  code: status;
  details: string;
  message: string;
}

/**
 * The longest status message sent, in UTF-16 code units. grpc-js sends the message
 * percent-encoded in the trailers, and trailers over the client's header list limit (64 KiB,
 * Node's http2 default, which grpc-js keeps) never arrive: the call hangs until its deadline. An
 * error that quotes a huge id (a 1 MiB `pod_sandbox_id`) would do that, so longer messages are
 * cut; 4,096 code units percent-encode to at most 36 KiB. The marker after the cut is our own text.
 */
export const MAX_STATUS_MESSAGE_LENGTH = 4096;

function boundedMessage(details: string): string {
  if (details.length <= MAX_STATUS_MESSAGE_LENGTH) return details;
  let end = MAX_STATUS_MESSAGE_LENGTH;
  // Never split a surrogate pair: a lone surrogate cannot be percent-encoded.
  const last = details.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${details.slice(0, end)}… (message cut: ${details.length - end} more characters)`;
}

export function statusError(code: status, details: string): CriStatusError {
  const message = boundedMessage(details);
  return { name: 'CriStatusError', code, details: message, message, metadata: new Metadata() };
}

/** Whether an error is one the server expected (a mapped runtime error) rather than a bug. */
export function isExpectedError(err: unknown): err is RuntimeError {
  return err instanceof RuntimeError && err.code !== 'Internal' && err.code !== 'Unknown';
}

export function toStatusError(err: unknown): CriStatusError {
  if (err instanceof RuntimeError) {
    return statusError(STATUS_OF[err.code] ?? status.UNKNOWN, err.message);
  }
  const message = err instanceof Error ? err.message : String(err);
  return statusError(status.INTERNAL, `internal error: ${message}`);
}

export function unimplemented(method: string, why: string): CriStatusError {
  return statusError(status.UNIMPLEMENTED, `${method} is not implemented by cri-winsim: ${why}`);
}
