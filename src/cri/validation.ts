import { RuntimeError } from '../runtime/errors.js';

/**
 * Request checks at the gRPC edge. proto3 has no "required": an absent message arrives as null
 * and an absent string as "", so each check names the field the caller left out.
 */
function invalid(message: string): RuntimeError {
  return new RuntimeError('InvalidArgument', message);
}

/** `<what> is required` for an empty id, e.g. requireId(req.container_id, 'container id'). */
export function requireId(value: string | null | undefined, what: string): void {
  if (value === undefined || value === null || value === '') throw invalid(`${what} is required`);
}

/** `<field> is required` for an empty string field, named by its path (`config.metadata.name`). */
export function requireString(value: string | null | undefined, field: string): void {
  if (value === undefined || value === null || value === '') throw invalid(`${field} is required`);
}

/** `<field> is required` for an absent message field. */
export function requireMessage<T>(value: T | null | undefined, field: string): asserts value is T {
  if (value === undefined || value === null) throw invalid(`${field} is required`);
}

/** int64 fields arrive as decimal strings (longs: String); a negative duration is malformed. */
export function requireNonNegative(value: string | number | null | undefined, field: string): void {
  if (value === undefined || value === null || value === '') return;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(n) || n < 0) throw invalid(`${field} must not be negative, got ${String(value)}`);
}

/** A repeated field that must hold at least one element. */
export function requireNonEmpty(value: readonly unknown[] | null | undefined, field: string): void {
  if (value === undefined || value === null || value.length === 0) throw invalid(`${field} is required`);
}
