/**
 * Pod manifests: YAML files (one or many documents) holding Pods, or workloads whose pod template
 * contributes a pod (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob). Each document is
 * decoded, checked for shape and API-validated; a broken one is reported with file, document and
 * field, and yields no pod, while the other documents of the file still do.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { MAX_YAML_NESTING, yamlNestingDepth } from '../yaml-nesting.js';
import type { V1ObjectMeta, V1Pod, V1PodTemplateSpec } from '@kubernetes/client-node';
import { manifestKinds, strictDecodingError, unknownFields, unknownFieldWarning, withoutNulls, type FieldValidation } from './api-decoding.js';
import { formatFieldError, invalid, notSupported, required, type FieldError } from './field-errors.js';
import { validatePod, defaultPodValidationOptions, type PodValidationOptions } from './validation.js';

/** Where an object came from: file as given by the user, document number counted from 1. */
export interface ManifestSource {
  readonly file: string;
  readonly document: number;
}

/** `pods/web.yaml: document 2: spec.containers[0].name: Required value`. */
export class ManifestError extends Error {
  readonly source: ManifestSource;
  readonly field?: FieldError;
  /** Set when API validation refused a decoded, named object (kubectl's `The Pod "x" is invalid`). */
  readonly invalidObject?: { readonly kind: string; readonly name: string };

  constructor(source: ManifestSource, detail: string | FieldError, invalidObject?: { readonly kind: string; readonly name: string }) {
    const text = typeof detail === 'string' ? detail : formatFieldError(detail);
    super(`${source.file}: document ${source.document}: ${text}`);
    this.name = 'ManifestError';
    this.source = source;
    if (typeof detail !== 'string') this.field = detail;
    if (invalidObject !== undefined) this.invalidObject = invalidObject;
  }
}

/** Several manifest errors at once: nothing was applied. */
export class ManifestErrors extends Error {
  readonly errors: readonly ManifestError[];

  constructor(errors: readonly ManifestError[]) {
    super(errors.map((e) => e.message).join('\n'));
    this.name = 'ManifestErrors';
    this.errors = errors;
  }
}

export interface ParsedDocument {
  readonly source: ManifestSource;
  readonly value: unknown;
}

/** Splits a YAML (or JSON) text into documents; empty documents keep their number but are dropped. */
export function parseDocuments(file: string, text: string): { documents: ParsedDocument[]; errors: ManifestError[] } {
  const documents: ParsedDocument[] = [];
  const errors: ManifestError[] = [];
  if (yamlNestingDepth(text) > MAX_YAML_NESTING) {
    errors.push(new ManifestError({ file, document: 1 }, `invalid YAML: nested more than ${MAX_YAML_NESTING} levels deep`));
    return { documents, errors };
  }
  parseAllDocuments(text, { prettyErrors: false }).forEach((doc, i) => {
    const source = { file, document: i + 1 };
    if (!('errors' in doc)) return; // an empty stream after the last separator
    const yamlError = doc.errors[0];
    if (yamlError !== undefined) {
      const where = yamlError.linePos?.[0] ?? linePosition(text, yamlError.pos[0]);
      const at = where === undefined ? '' : ` (line ${where.line}, column ${where.col})`;
      errors.push(new ManifestError(source, `invalid YAML: ${firstLine(yamlError.message)}${at}`));
      return;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      // An alias bomb: the yaml package refuses it with a ReferenceError.
      errors.push(new ManifestError(source, `invalid YAML: ${firstLine((err as Error).message)}`));
      return;
    }
    if (value === null || value === undefined) return;
    documents.push({ source, value });
  });
  return { documents, errors };
}

const firstLine = (s: string): string => s.split('\n')[0] ?? s;

/** 1-based line and column of a character offset, for parse errors. */
function linePosition(text: string, offset: number | undefined): { line: number; col: number } | undefined {
  if (offset === undefined || offset < 0) return undefined;
  const before = text.slice(0, Math.min(offset, text.length));
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, col: before.length - lineStart + 1 };
}

// ---- shape checking: the decoding step, which rejects wrong types before validation ----

type Shape = 'string' | 'boolean' | 'integer' | 'quantity' | 'any' | { object: Record<string, Shape> } | { array: Shape } | { stringMap: true };

const stringArray: Shape = { array: 'string' };
const stringMap: Shape = { stringMap: true };
const windowsOptionsShape: Shape = {
  object: { gmsaCredentialSpecName: 'string', gmsaCredentialSpec: 'string', runAsUserName: 'string', hostProcess: 'boolean' },
};
const containerShape: Shape = {
  object: {
    name: 'string',
    image: 'string',
    imagePullPolicy: 'string',
    command: stringArray,
    args: stringArray,
    workingDir: 'string',
    stdin: 'boolean',
    stdinOnce: 'boolean',
    tty: 'boolean',
    env: { array: { object: { name: 'string', value: 'string', valueFrom: 'any' } } },
    ports: { array: { object: { name: 'string', containerPort: 'integer', hostPort: 'integer', protocol: 'string', hostIP: 'string' } } },
    resources: { object: { limits: { stringMap: true }, requests: { stringMap: true } } },
    securityContext: {
      object: { windowsOptions: windowsOptionsShape, runAsNonRoot: 'boolean', privileged: 'boolean', runAsUser: 'integer', runAsGroup: 'integer' },
    },
  },
};
const metadataShape: Shape = {
  object: { name: 'string', generateName: 'string', namespace: 'string', uid: 'string', labels: stringMap, annotations: stringMap },
};
const podSpecShape: Shape = {
  object: {
    containers: { array: containerShape },
    initContainers: { array: containerShape },
    serviceAccountName: 'string',
    hostNetwork: 'boolean',
    hostname: 'string',
    subdomain: 'string',
    nodeName: 'string',
    restartPolicy: 'string',
    securityContext: {
      object: { windowsOptions: windowsOptionsShape, runAsNonRoot: 'boolean', runAsUser: 'integer', runAsGroup: 'integer' },
    },
  },
};

const describe = (value: unknown): string => (Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value);

/** Checks the fields the kubelet reads for their JSON types; unknown fields are ignored like the API server's decoder. */
export function checkShape(value: unknown, shape: Shape, path: string): FieldError[] {
  if (value === undefined || value === null || shape === 'any') return [];
  const mismatch = (expected: string): FieldError[] => [invalid(path, value, `must be ${expected}, not ${describe(value)}`)];
  if (shape === 'string') return typeof value === 'string' ? [] : mismatch('a string');
  if (shape === 'boolean') return typeof value === 'boolean' ? [] : mismatch('a boolean');
  if (shape === 'integer') return Number.isInteger(value) ? [] : mismatch('an integer');
  if (shape === 'quantity') return typeof value === 'string' || typeof value === 'number' ? [] : mismatch('a quantity');
  if ('stringMap' in shape) {
    if (typeof value !== 'object' || Array.isArray(value)) return mismatch('an object');
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
      typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? [] : checkShape(v, 'string', `${path}[${k}]`),
    );
  }
  if ('array' in shape) {
    if (!Array.isArray(value)) return mismatch('an array');
    return value.flatMap((item, i) => checkShape(item, shape.array, `${path}[${i}]`));
  }
  if (typeof value !== 'object' || Array.isArray(value)) return mismatch('an object');
  return Object.entries(shape.object).flatMap(([key, fieldShape]) =>
    checkShape((value as Record<string, unknown>)[key], fieldShape, path === '' ? key : `${path}.${key}`),
  );
}

/** Label and annotation values may be written as YAML numbers or booleans; the API wants strings. */
function stringifyMap(map: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (map === undefined || map === null) return undefined;
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, String(v)]));
}

export function normaliseMetadata(meta: V1ObjectMeta | undefined): V1ObjectMeta {
  const out: V1ObjectMeta = { ...(meta ?? {}) };
  const labels = stringifyMap(meta?.labels);
  const annotations = stringifyMap(meta?.annotations);
  if (labels !== undefined) out.labels = labels;
  if (annotations !== undefined) out.annotations = annotations;
  return out;
}

// ---- workloads ----

/** Where each workload kind keeps its pod template. */
const templatePaths: Record<string, readonly string[]> = {
  Deployment: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};
export const supportedPodKinds: readonly string[] = ['Pod', ...Object.keys(templatePaths)];

function dig(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

// The suffix alphabet of generated names (apimachinery rand.String): no vowels, no confusables.
const nameAlphabet = 'bcdfghjklmnpqrstvwxz2456789';

/** A stable generated-name suffix, so the same workload gives the same pod name on every run. */
export function stableSuffix(seed: string, length = 5): string {
  const digest = createHash('sha256').update(seed).digest();
  return Array.from(digest.subarray(0, length), (b) => nameAlphabet[b % nameAlphabet.length]).join('');
}

/** A UUID-shaped, stable UID for a pod the user gave none (a static pod's UID is a hash too). */
export function stableUid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export interface LoadedPod {
  readonly pod: V1Pod;
  readonly source: ManifestSource;
}

export interface PodManifestOptions {
  readonly defaultNamespace?: string;
  readonly validation?: PodValidationOptions;
  /**
   * Whether a Pod's field validation runs when the file is read (default true). `kubelet run` turns
   * it off and validates in the API server's order instead, after the mutating admission
   * (admitPod). Workloads are always validated here: their create validates the template.
   */
  readonly validate?: boolean;
  /** Unknown fields: refused (Strict, the default, as kubectl's --validate=strict), reported as warnings (Warn), or dropped (Ignore). */
  readonly fieldValidation?: FieldValidation;
  /** Told each warning (an unknown field under Warn), as kubectl prints `Warning: …` lines. */
  readonly onWarning?: (warning: string) => void;
}

/** Turns one decoded document into a pod (or the errors that prevent it). */
export function podFromDocument(doc: ParsedDocument, options: PodManifestOptions = {}): { pod?: V1Pod; errors: ManifestError[] } {
  const fail = (...errs: FieldError[]) => ({ errors: errs.map((e) => new ManifestError(doc.source, e)) });
  let value = doc.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail(invalid('', value, 'a manifest document must be an object'));
  }
  const kind = (value as Record<string, unknown>)['kind'];
  if (kind === undefined || kind === '') return fail(required('kind'));
  if (typeof kind !== 'string' || !supportedPodKinds.includes(kind)) return fail(notSupported('kind', kind, supportedPodKinds));

  // The API server's decoder: unknown fields per fieldValidation, then nulls as Go's zero values.
  const { model, apiVersion } = manifestKinds[kind]!;
  const unknown = unknownFields(value, model);
  if (unknown.length > 0) {
    const mode = options.fieldValidation ?? 'Strict';
    if (mode === 'Strict') return { errors: [new ManifestError(doc.source, strictDecodingError(kind, apiVersion, unknown))] };
    if (mode === 'Warn') for (const f of unknown) options.onWarning?.(`${doc.source.file}: document ${doc.source.document}: ${unknownFieldWarning(f)}`);
  }
  value = withoutNulls(value, model);

  const object = value as Record<string, unknown>;
  let raw: Record<string, unknown>;
  if (kind === 'Pod') {
    raw = object;
  } else {
    const templatePath = templatePaths[kind]!;
    const template = dig(object, templatePath) as V1PodTemplateSpec | undefined;
    const where = templatePath.join('.');
    if (template === undefined || template === null) return fail(required(where));
    const shapeErrors = checkShape(object['metadata'], metadataShape, 'metadata');
    if (shapeErrors.length > 0) return fail(...shapeErrors);
    const owner = (object['metadata'] ?? {}) as V1ObjectMeta;
    const ownerName = owner.name;
    if (ownerName === undefined || ownerName === '') return fail(required('metadata.name', 'name or generateName is required'));
    const templateMeta = (template.metadata ?? {}) as V1ObjectMeta;
    raw = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        ...templateMeta,
        name: `${ownerName}-${stableSuffix(`${kind}/${owner.namespace ?? ''}/${ownerName}`)}`,
        namespace: templateMeta.namespace ?? owner.namespace,
      },
      spec: template.spec,
    };
  }

  // Field paths of a template are reported under the workload's template path.
  const prefix = kind === 'Pod' ? '' : `${templatePaths[kind]!.join('.')}.`;
  const shapeErrors = [...checkShape(raw['metadata'], metadataShape, 'metadata'), ...checkShape(raw['spec'], podSpecShape, 'spec')];
  if (raw['spec'] === undefined || raw['spec'] === null) shapeErrors.push(required('spec'));
  if (shapeErrors.length > 0) return fail(...shapeErrors.map((e) => (kind === 'Pod' ? e : { ...e, path: prefix + e.path })));

  const metadata = normaliseMetadata(raw['metadata'] as V1ObjectMeta | undefined);
  metadata.namespace = metadata.namespace || options.defaultNamespace || 'default';
  if (!metadata.name && metadata.generateName) {
    // The API server appends 5 random characters; a stable suffix keeps reruns idempotent.
    metadata.name = `${metadata.generateName}${stableSuffix(`${doc.source.file}#${doc.source.document}`)}`;
  }
  const pod: V1Pod = { apiVersion: 'v1', kind: 'Pod', metadata, spec: raw['spec'] as V1Pod['spec'] };

  // A workload is validated as itself, template included, when it is created; its pods later.
  const validationErrors = options.validate === false && kind === 'Pod' ? [] : validatePod(pod, options.validation ?? defaultPodValidationOptions);
  if (validationErrors.length > 0) {
    const object = { kind: 'Pod', name: metadata.name ?? '' };
    const located = validationErrors.map((e) => (kind === 'Pod' || !e.path.startsWith('spec') ? e : { ...e, path: prefix + e.path }));
    return { errors: located.map((e) => new ManifestError(doc.source, e, object)) };
  }
  if (metadata.uid === undefined || metadata.uid === '') {
    metadata.uid = stableUid(`${doc.source.file}#${doc.source.document}:${JSON.stringify(pod)}`);
  }
  return { pod, errors: [] };
}

/** All pods of one manifest text; broken documents give errors and no pod. */
export function loadPodManifest(file: string, text: string, options: PodManifestOptions = {}): { pods: LoadedPod[]; errors: ManifestError[] } {
  const { documents, errors } = parseDocuments(file, text);
  const pods: LoadedPod[] = [];
  for (const doc of documents) {
    const result = podFromDocument(doc, options);
    errors.push(...result.errors);
    if (result.pod !== undefined) pods.push({ pod: result.pod, source: doc.source });
  }
  return withoutDuplicates(pods, errors);
}

/** The refusal of a second pod with the namespace and name of an earlier one, as a second create. */
function duplicatePodError(loaded: LoadedPod, first: ManifestSource): ManifestError {
  const name = loaded.pod.metadata!.name;
  return new ManifestError(loaded.source, `metadata.name: Duplicate value: ${JSON.stringify(name)}: already defined in ${first.file} document ${first.document}`);
}

const podKey = (loaded: LoadedPod): string => `${loaded.pod.metadata!.namespace}/${loaded.pod.metadata!.name}`;

/**
 * Two documents naming the same pod: the later one is refused, as a second create would be.
 * True for the first document naming its pod; for a later one the error goes to `duplicates`.
 */
function firstOfItsPod(seen: Map<string, ManifestSource>, loaded: LoadedPod, duplicates: ManifestError[]): boolean {
  const first = seen.get(podKey(loaded));
  if (first !== undefined) {
    duplicates.push(duplicatePodError(loaded, first));
    return false;
  }
  seen.set(podKey(loaded), loaded.source);
  return true;
}

function withoutDuplicates(pods: readonly LoadedPod[], errors: ManifestError[]): { pods: LoadedPod[]; errors: ManifestError[] } {
  const seen = new Map<string, ManifestSource>();
  return { pods: pods.filter((loaded) => firstOfItsPod(seen, loaded, errors)), errors };
}

/**
 * Reads pod manifest files; an unreadable file is an error for that file only. `onPod` is handed
 * each pod as soon as its file is parsed (a pod repeated in a later file is not), so callers can
 * start on the first pods while later files are still being read. The errors list the files'
 * own errors first, then the pods repeated across files.
 */
export async function loadPodFiles(
  files: readonly string[],
  options: PodManifestOptions = {},
  onPod?: (loaded: LoadedPod) => void,
): Promise<{ pods: LoadedPod[]; errors: Error[] }> {
  const pods: LoadedPod[] = [];
  const errors: Error[] = [];
  const duplicates: ManifestError[] = [];
  const seen = new Map<string, ManifestSource>();
  for (const [i, file] of files.entries()) {
    // Between files the event loop runs, so work on the pods handed over goes on while loading.
    if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    let text: string;
    try {
      // Manifests are small local files: a synchronous read takes microseconds, where the promise
      // API's separate open, fstat, read and close round trips through the thread pool cost ~0.2 ms.
      text = readFileSync(file, 'utf8');
    } catch (err) {
      errors.push(new Error(`${file}: ${(err as Error).message}`));
      continue;
    }
    const result = loadPodManifest(file, text, options);
    errors.push(...result.errors);
    for (const loaded of result.pods) {
      if (!firstOfItsPod(seen, loaded, duplicates)) continue;
      pods.push(loaded);
      onPod?.(loaded);
    }
  }
  return { pods, errors: [...errors, ...duplicates] };
}
