/**
 * Errors raised by the simulated runtime. They carry a CRI-level code so the gRPC edge
 * (src/cri) can map them to a status once, without the runtime knowing anything of gRPC.
 * Every failure is written the one way, `new RuntimeError(code, message)`: the code is in view
 * where the error is raised.
 */
export type RuntimeErrorCode =
  | 'InvalidArgument'
  | 'NotFound'
  | 'AlreadyExists'
  | 'FailedPrecondition'
  | 'DeadlineExceeded'
  | 'ResourceExhausted'
  | 'Unimplemented'
  | 'Unavailable'
  | 'Internal'
  | 'Unknown'
  // The other gRPC codes: only --inject-fault raises them (call-conditions/fault-spec.ts).
  | 'Canceled'
  | 'PermissionDenied'
  | 'Aborted'
  | 'OutOfRange'
  | 'DataLoss'
  | 'Unauthenticated';

export class RuntimeError extends Error {
  readonly code: RuntimeErrorCode;

  constructor(code: RuntimeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RuntimeError';
    this.code = code;
  }
}

/** Adds context as an error travels up ("failed to start container …: <cause>"), keeping its code. */
export function withContext(err: unknown, context: string): RuntimeError {
  if (err instanceof RuntimeError) {
    return new RuntimeError(err.code, `${context}: ${err.message}`, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new RuntimeError('Internal', `${context}: ${message}`, { cause: err });
}
