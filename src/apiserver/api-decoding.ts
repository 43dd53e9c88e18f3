/**
 * Decoding a manifest into API types the way the API server's JSON decoder does: fields that the
 * type does not have are reported (strict field validation, `fieldValidation=Strict|Warn|Ignore`,
 * which kubectl's `--validate=strict|warn|ignore` selects), and a JSON/YAML `null` becomes Go's zero
 * value (an absent field; a zero struct or an empty string as a list element).
 *
 * The types are @kubernetes/client-node's models (generated from the API's OpenAPI document): each
 * carries an `attributeTypeMap` of its JSON field names and types, the same field set the API
 * server's Go types have. They come from the package's table of models alone, not its index: the
 * index loads the whole client (HTTP, auth, watch, exec, ...), which no command here decodes with,
 * and every cri-winsim process that admits a manifest paid for it at start-up.
 */
import * as models from '@kubernetes/client-node/dist/gen/models/all.js';

/** The API server's fieldValidation values (kubectl: strict, warn, ignore). */
export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

interface Attribute {
  readonly baseName: string;
  readonly type: string;
}

type ModelTable = Record<string, { attributeTypeMap?: readonly Attribute[] } | undefined>;

/** The kinds a manifest may hold, with their model and API version. */
export const manifestKinds: Readonly<Record<string, { readonly model: string; readonly apiVersion: string }>> = {
  Pod: { model: 'V1Pod', apiVersion: 'v1' },
  Deployment: { model: 'V1Deployment', apiVersion: 'apps/v1' },
  ReplicaSet: { model: 'V1ReplicaSet', apiVersion: 'apps/v1' },
  StatefulSet: { model: 'V1StatefulSet', apiVersion: 'apps/v1' },
  DaemonSet: { model: 'V1DaemonSet', apiVersion: 'apps/v1' },
  Job: { model: 'V1Job', apiVersion: 'batch/v1' },
  CronJob: { model: 'V1CronJob', apiVersion: 'batch/v1' },
};

function attributesOf(model: string): readonly Attribute[] | undefined {
  return (models as unknown as ModelTable)[model]?.attributeTypeMap;
}

const arrayElement = (type: string): string | undefined => /^Array<(.+)>$/.exec(type)?.[1];
const isModel = (type: string): boolean => attributesOf(type) !== undefined;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Every field of `value` that its model does not define, as the strict decoder names them
 * (`spec.containers[0].imagePullPolice`), in document order.
 */
export function unknownFields(value: unknown, model: string, path = ''): string[] {
  const attributes = attributesOf(model);
  if (attributes === undefined || !isObject(value)) return [];
  const found: string[] = [];
  for (const [key, fieldValue] of Object.entries(value)) {
    const fieldPath = path === '' ? key : `${path}.${key}`;
    const attribute = attributes.find((a) => a.baseName === key);
    if (attribute === undefined) {
      found.push(fieldPath);
      continue;
    }
    const element = arrayElement(attribute.type);
    if (element !== undefined) {
      if (Array.isArray(fieldValue) && isModel(element)) fieldValue.forEach((item, i) => found.push(...unknownFields(item, element, `${fieldPath}[${i}]`)));
    } else if (isModel(attribute.type)) {
      found.push(...unknownFields(fieldValue, attribute.type, fieldPath));
    }
  }
  return found;
}

/**
 * The value with nulls decoded as Go decodes them into the model: a null field is dropped (a nil
 * pointer, an empty slice or map), a null element of a list of objects is an empty object, of a
 * list of strings an empty string. Returns a copy; the input is not changed.
 */
export function withoutNulls(value: unknown, model: string): unknown {
  const attributes = attributesOf(model);
  if (attributes === undefined || !isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, fieldValue] of Object.entries(value)) {
    if (fieldValue === null) continue;
    const type = attributes.find((a) => a.baseName === key)?.type;
    const element = type === undefined ? undefined : arrayElement(type);
    if (element !== undefined && Array.isArray(fieldValue)) {
      out[key] = fieldValue.map((item) => (item === null ? zeroValue(element) : withoutNulls(item, element)));
    } else if (type !== undefined && isModel(type)) {
      out[key] = withoutNulls(fieldValue, type);
    } else {
      out[key] = fieldValue;
    }
  }
  return out;
}

function zeroValue(type: string): unknown {
  if (isModel(type)) return {};
  if (type === 'string') return '';
  if (type === 'number') return 0;
  if (type === 'boolean') return false;
  return null;
}

/** The strict decoder's refusal (apimachinery's serializer, kubernetes v1.34): one sentence for every unknown field. */
export function strictDecodingError(kind: string, apiVersion: string, fields: readonly string[]): string {
  const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
  return `${kind} in version ${JSON.stringify(version)} cannot be handled as a ${kind}: strict decoding error: ${fields.map((f) => `unknown field ${JSON.stringify(f)}`).join(', ')}`;
}

/** The warning the API server returns (and kubectl prints after `Warning: `) for each unknown field under fieldValidation=Warn. */
export const unknownFieldWarning = (field: string): string => `unknown field ${JSON.stringify(field)}`;
