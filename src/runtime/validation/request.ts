import { RuntimeError } from '../errors.js';

/**
 * Request checks, the only ones: the gRPC edge decodes and passes requests on, so a runtime called
 * in process (the kubelet's tests, the benchmark) checks exactly what a client over the socket
 * gets checked. proto3 has no "required": an absent message arrives as null and an absent string
 * as "", so each check names the field left out by its path in the request
 * (`config.metadata.name`). `<field> is required` is our own wording: containerd v2.2.7 has no such
 * check (an empty id fails in its id index, internal/truncindex/truncindex.go, with "prefix can't
 * be empty"). Where containerd does check, the handler uses containerd's text.
 */
export function requireField(value: string, field: string): void {
  if (value === '') throw new RuntimeError('InvalidArgument', `${field} is required`);
}

/** A repeated field that must hold at least one element. */
export function requireElements(value: readonly unknown[], field: string): void {
  if (value.length === 0) throw new RuntimeError('InvalidArgument', `${field} is required`);
}

/** A duration in seconds (int64, decoded as a decimal string): a negative one is malformed. */
export function nonNegativeSeconds(value: string | number, field: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) throw new RuntimeError('InvalidArgument', `${field} must not be negative, got ${String(value)}`);
  return seconds;
}
