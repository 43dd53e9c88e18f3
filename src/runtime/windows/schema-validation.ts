import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';

// ajv is loaded on the first compile, not at start-up: loading it is a tenth of the runtime's
// start-up, and a runtime on the embedded node validates nothing with it until the first
// credential spec (ajv is CommonJS, so it loads synchronously).
const requireCommonJs = createRequire(import.meta.url);

/**
 * An ajv instance for a Windows schema. `errorReason` is our annotation keyword: the sentence
 * an error uses when a value does not match a pattern or enum, so messages read as the rule
 * ("is not a domain SID (S-1-5-21-a-b-c)") rather than as a regular expression.
 * `verbose` gives each error its schema and value, which the messages need.
 */
function createAjv(): Ajv {
  const { Ajv: AjvClass } = requireCommonJs('ajv') as typeof import('ajv');
  const ajv = new AjvClass({ allErrors: false, verbose: true, strict: true });
  ajv.addKeyword({ keyword: 'errorReason', schemaType: 'string' });
  return ajv;
}

/** A schema compiled once, on its first use. */
export interface CompiledSchema<T> {
  readonly validate: ValidateFunction<T>;
}

/**
 * Declares a schema; it is compiled on first use (by an ajv instance of its own) and then kept:
 * an immutable table every runtime of the process may share. Compiling every schema at module
 * load cost start-up time for schemas a run may never need (the credential spec schema waits
 * for the first gMSA container). `referenced`: schemas it `$ref`s by their `$id`.
 */
export function compileSchema<T>(schema: object, referenced: readonly object[] = []): CompiledSchema<T> {
  let compiled: ValidateFunction<T> | undefined;
  return {
    get validate(): ValidateFunction<T> {
      if (compiled === undefined) {
        const ajv = createAjv();
        // Schemas this one `$ref`s by their `$id` (the AD document reuses the node file's).
        for (const other of referenced) ajv.addSchema(other);
        compiled = ajv.compile<T>(schema);
      }
      return compiled;
    },
  };
}

/** A schema violation in words: where (dotted field path, `domains[0].sid`) and why. */
export interface SchemaViolation {
  /** Dotted path of the offending field; empty for the document itself. */
  path: string;
  /** What is wrong, as a phrase to put after the path ("is required", "must be a string"). */
  reason: string;
  /** The offending value, when there is one to show. */
  value?: unknown;
  /** True when `reason` came from the schema's `errorReason` (it describes the value). */
  describesValue: boolean;
}

/** `/domains/0/sid` -> `domains[0].sid`. */
export function fieldPath(instancePath: string, child?: string): string {
  const segments = instancePath === '' ? [] : instancePath.slice(1).split('/');
  if (child !== undefined) segments.push(child);
  let out = '';
  for (const raw of segments) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^[0-9]+$/.test(segment)) out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** Turns the first ajv error into a violation that names the field. */
export function describeSchemaError(error: ErrorObject): SchemaViolation {
  const params = error.params as Record<string, unknown>;
  const parentSchema = error.parentSchema as { errorReason?: unknown } | undefined;
  const errorReason = typeof parentSchema?.errorReason === 'string' ? parentSchema.errorReason : undefined;
  switch (error.keyword) {
    case 'required':
      return { path: fieldPath(error.instancePath, String(params.missingProperty)), reason: 'is required', describesValue: false };
    case 'additionalProperties':
      return {
        path: fieldPath(error.instancePath, String(params.additionalProperty)),
        reason: 'is not a known field',
        describesValue: false,
      };
    case 'type': {
      const expected = Array.isArray(params.type) ? params.type.join(' or ') : String(params.type);
      return {
        path: fieldPath(error.instancePath),
        reason: `must be ${article(expected)}, not ${article(typeOf(error.data))}`,
        describesValue: false,
      };
    }
    case 'minItems':
      return {
        path: fieldPath(error.instancePath),
        reason: params.limit === 1 ? 'must not be empty' : `must have at least ${String(params.limit)} items`,
        describesValue: false,
      };
    case 'maxItems':
      return { path: fieldPath(error.instancePath), reason: `must have at most ${String(params.limit)} items`, describesValue: false };
    case 'minLength':
      return {
        path: fieldPath(error.instancePath),
        reason: params.limit === 1 ? 'must not be empty' : `must be at least ${String(params.limit)} characters long`,
        describesValue: false,
      };
    case 'maxLength':
      return {
        path: fieldPath(error.instancePath),
        reason: `must be at most ${String(params.limit)} characters long`,
        describesValue: false,
      };
    default:
      if (errorReason !== undefined) {
        return { path: fieldPath(error.instancePath), reason: errorReason, value: error.data, describesValue: true };
      }
      return { path: fieldPath(error.instancePath), reason: error.message ?? 'is invalid', value: error.data, describesValue: false };
  }
}

/** Runs a compiled validator and returns the first violation, or undefined when the data is valid. */
export function firstViolation(schema: CompiledSchema<unknown>, data: unknown): SchemaViolation | undefined {
  const { validate } = schema;
  if (validate(data)) return undefined;
  const error = validate.errors?.[0];
  if (error === undefined) return { path: '', reason: 'is invalid', describesValue: false };
  return describeSchemaError(error);
}
