/** CRI errors as the kubelet prints them (Go's gRPC status error texts). */
import type * as grpc from '@grpc/grpc-js';

const grpcCodeNames = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied', 'ResourceExhausted',
  'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated',
];

/** A gRPC error as Go's status error prints it: `rpc error: code = NotFound desc = …`. */
export function grpcErrorString(err: unknown): string {
  const e = err as Partial<grpc.ServiceError>;
  // grpc-js ends an unreachable endpoint's details with an empty "Resolution note: ": dropped.
  if (typeof e.code === 'number') return `rpc error: code = ${grpcCodeNames[e.code] ?? `Code(${e.code})`} desc = ${(e.details ?? '').replace(/\.?\s*Resolution note:\s*$/, '')}`;
  return err instanceof Error ? err.message : String(err);
}

/** status.Message: the description alone, what the kubelet puts in waiting messages. */
export function grpcMessage(err: unknown): string {
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e.code === 'number') return e.details ?? '';
  return err instanceof Error ? err.message : String(err);
}
