/**
 * Field errors in the shape the API server reports them (k8s.io/apimachinery field.Error):
 * `<path>: <type>: <value>: <detail>`, e.g.
 * `spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "a\\b\\c": runAsUserName cannot contain more than one backslash`.
 */
export type FieldErrorType = 'Invalid value' | 'Required value' | 'Unsupported value' | 'Forbidden' | 'Duplicate value' | 'Not found';

export interface FieldError {
  readonly path: string;
  readonly type: FieldErrorType;
  /** The offending value; absent for Required and Forbidden. */
  readonly value?: unknown;
  readonly detail: string;
}

export const invalid = (path: string, value: unknown, detail: string): FieldError => ({ path, type: 'Invalid value', value, detail });
export const required = (path: string, detail = ''): FieldError => ({ path, type: 'Required value', detail });
export const forbidden = (path: string, detail: string): FieldError => ({ path, type: 'Forbidden', detail });
export const duplicate = (path: string, value: unknown): FieldError => ({ path, type: 'Duplicate value', value, detail: '' });
export const notFoundValue = (path: string, value: unknown): FieldError => ({ path, type: 'Not found', value, detail: '' });
export const notSupported = (path: string, value: unknown, supported: readonly string[]): FieldError => ({
  path,
  type: 'Unsupported value',
  value,
  detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
});

/** Values print like Go's %q for strings and %v for scalars, which is what field.Error does. */
function formatValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return 'null';
  return JSON.stringify(value);
}

export function formatFieldError(err: FieldError): string {
  const head = err.path === '' ? '' : `${err.path}: `;
  switch (err.type) {
    case 'Required value':
    case 'Forbidden':
      return err.detail === '' ? `${head}${err.type}` : `${head}${err.type}: ${err.detail}`;
    default: {
      const body = `${err.type}: ${formatValue(err.value)}`;
      return err.detail === '' ? `${head}${body}` : `${head}${body}: ${err.detail}`;
    }
  }
}

/** Builds child paths the way field.Path prints them: `spec.containers[0].name`. */
export function child(path: string, ...names: string[]): string {
  return [path, ...names].filter((p) => p !== '').join('.');
}

export function index(path: string, i: number): string {
  return `${path}[${i}]`;
}
