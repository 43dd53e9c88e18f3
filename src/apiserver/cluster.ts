/**
 * The cluster objects admission needs (Namespaces, ServiceAccounts, ConfigMaps,
 * GMSACredentialSpecs, RBAC, and the Secrets and RuntimeClasses the kubelet reads), read either from a directory of ordinary manifests or from a real API
 * server through a kubeconfig. Both produce the same immutable snapshot; everything downstream is
 * pure logic over that snapshot.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1ConfigMap,
  V1Namespace,
  V1ObjectMeta,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { invalid, notFoundValue, notSupported, required, duplicate, type FieldError } from './field-errors.js';
import { checkShape, ManifestError, ManifestErrors, normaliseMetadata, parseDocuments, type ManifestSource, type ParsedDocument } from './manifests.js';
import { runtimeClassApiVersion, type RuntimeClass } from './runtime-class.js';

/** The windows-gmsa CRD: cluster-scoped, group windows.k8s.io, `credspec` holds the document. */
export interface GMSACredentialSpec {
  apiVersion: string;
  kind: 'GMSACredentialSpec';
  metadata: V1ObjectMeta;
  credspec?: unknown;
}

export const gmsaApiGroup = 'windows.k8s.io';
export const gmsaApiVersions: readonly string[] = ['windows.k8s.io/v1', 'windows.k8s.io/v1alpha1'];

/** The cluster objects the kubelet reads, as listed. */
export interface ClusterObjects {
  readonly namespaces: readonly V1Namespace[];
  readonly serviceAccounts: readonly V1ServiceAccount[];
  readonly configMaps: readonly V1ConfigMap[];
  readonly gmsaCredentialSpecs: readonly GMSACredentialSpec[];
  readonly roles: readonly V1Role[];
  readonly clusterRoles: readonly V1ClusterRole[];
  readonly roleBindings: readonly V1RoleBinding[];
  readonly clusterRoleBindings: readonly V1ClusterRoleBinding[];
  /** Registry credentials for imagePullSecrets (the kubelet reads them; admission never does). */
  readonly secrets: readonly V1Secret[];
  /** node.k8s.io RuntimeClasses: spec.runtimeClassName → RunPodSandbox's runtime handler. */
  readonly runtimeClasses: readonly RuntimeClass[];
}

/**
 * Views derived from a snapshot's objects (an RBAC index, marshalled credential specs), each
 * built on first use and kept with the snapshot: a snapshot never changes, so neither do they.
 */
export class DerivedViews {
  private readonly views = new Map<symbol, unknown>();

  /** The view under `key`, built by `build` the first time it is asked for. */
  get<T>(key: symbol, build: () => T): T {
    if (this.views.has(key)) return this.views.get(key) as T;
    const view = build();
    this.views.set(key, view);
    return view;
  }
}

/** One load of the cluster's objects, with the views derived from them. */
export interface ClusterSnapshot extends ClusterObjects {
  readonly derived: DerivedViews;
}

export const clusterSnapshot = (objects: ClusterObjects): ClusterSnapshot => ({ ...objects, derived: new DerivedViews() });

/** Where cluster objects come from: a directory of manifests or an API server. */
export interface ClusterSource {
  /** For logs and errors: the directory, or the kubeconfig and its context. */
  readonly description: string;
  /** Reads every object once; fails as a whole, never with a partial snapshot. */
  load(): Promise<ClusterSnapshot>;
}

export function emptyCluster(): ClusterSnapshot {
  return clusterSnapshot({ namespaces: [], serviceAccounts: [], configMaps: [], gmsaCredentialSpecs: [], roles: [], clusterRoles: [], roleBindings: [], clusterRoleBindings: [], secrets: [], runtimeClasses: [] });
}

/** Namespaces every cluster has, so manifests need not declare them. */
export const builtInNamespaces: readonly string[] = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export const findConfigMap = (c: ClusterSnapshot, namespace: string, name: string): V1ConfigMap | undefined =>
  c.configMaps.find((m) => m.metadata?.namespace === namespace && m.metadata?.name === name);
export const findServiceAccount = (c: ClusterSnapshot, namespace: string, name: string): V1ServiceAccount | undefined =>
  c.serviceAccounts.find((s) => s.metadata?.namespace === namespace && s.metadata?.name === name);
export const findGMSACredentialSpec = (c: ClusterSnapshot, name: string): GMSACredentialSpec | undefined =>
  c.gmsaCredentialSpecs.find((g) => g.metadata.name === name);
export const findSecret = (c: ClusterSnapshot, namespace: string, name: string): V1Secret | undefined =>
  c.secrets.find((s) => s.metadata?.namespace === namespace && s.metadata?.name === name);
export const findRuntimeClass = (c: ClusterSnapshot, name: string): RuntimeClass | undefined => c.runtimeClasses.find((r) => r.metadata.name === name);
export const namespaceExists = (c: ClusterSnapshot, name: string): boolean =>
  builtInNamespaces.includes(name) || c.namespaces.some((n) => n.metadata?.name === name);

// ---- building a snapshot from manifest documents ----

type Kind = 'Namespace' | 'ServiceAccount' | 'ConfigMap' | 'Secret' | 'GMSACredentialSpec' | 'RuntimeClass' | 'Role' | 'ClusterRole' | 'RoleBinding' | 'ClusterRoleBinding';
const clusterKinds: readonly Kind[] = ['Namespace', 'ServiceAccount', 'ConfigMap', 'Secret', 'GMSACredentialSpec', 'RuntimeClass', 'Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'];
const namespaced: ReadonlySet<Kind> = new Set<Kind>(['ServiceAccount', 'ConfigMap', 'Secret', 'Role', 'RoleBinding']);
const rbacApiVersion = 'rbac.authorization.k8s.io/v1';
const apiVersions: Record<Kind, readonly string[]> = {
  Namespace: ['v1'],
  ServiceAccount: ['v1'],
  ConfigMap: ['v1'],
  Secret: ['v1'],
  GMSACredentialSpec: gmsaApiVersions,
  RuntimeClass: [runtimeClassApiVersion],
  Role: [rbacApiVersion],
  ClusterRole: [rbacApiVersion],
  RoleBinding: [rbacApiVersion],
  ClusterRoleBinding: [rbacApiVersion],
};

const ruleShape = { array: { object: { verbs: { array: 'string' }, apiGroups: { array: 'string' }, resources: { array: 'string' }, resourceNames: { array: 'string' }, nonResourceURLs: { array: 'string' } } } } as const;
const subjectsShape = { array: { object: { kind: 'string', name: 'string', namespace: 'string', apiGroup: 'string' } } } as const;
const roleRefShape = { object: { apiGroup: 'string', kind: 'string', name: 'string' } } as const;
const metadataShape = { object: { name: 'string', namespace: 'string', labels: { stringMap: true }, annotations: { stringMap: true } } } as const;

function validateRbac(kind: Kind, object: Record<string, unknown>): FieldError[] {
  const errs: FieldError[] = [];
  if (kind === 'Role' || kind === 'ClusterRole') {
    errs.push(...checkShape(object['rules'], ruleShape, 'rules'));
    if (errs.length > 0) return errs;
    ((object['rules'] ?? []) as { verbs?: string[] }[]).forEach((rule, i) => {
      if ((rule.verbs ?? []).length === 0) errs.push(required(`rules[${i}].verbs`, 'verbs must contain at least one value'));
    });
  }
  if (kind === 'RoleBinding' || kind === 'ClusterRoleBinding') {
    errs.push(...checkShape(object['roleRef'], roleRefShape, 'roleRef'), ...checkShape(object['subjects'], subjectsShape, 'subjects'));
    if (errs.length > 0) return errs;
    const roleRef = object['roleRef'] as { kind?: string; name?: string } | undefined;
    const allowedRefKinds = kind === 'RoleBinding' ? ['Role', 'ClusterRole'] : ['ClusterRole'];
    if (roleRef === undefined) errs.push(required('roleRef'));
    else {
      if (!allowedRefKinds.includes(roleRef.kind ?? '')) errs.push(notSupported('roleRef.kind', roleRef.kind ?? '', allowedRefKinds));
      if (roleRef.name === undefined || roleRef.name === '') errs.push(required('roleRef.name'));
    }
    ((object['subjects'] ?? []) as { kind?: string; name?: string; namespace?: string }[]).forEach((subject, i) => {
      const path = `subjects[${i}]`;
      if (!['User', 'Group', 'ServiceAccount'].includes(subject.kind ?? '')) errs.push(notSupported(`${path}.kind`, subject.kind ?? '', ['ServiceAccount', 'User', 'Group']));
      if (subject.name === undefined || subject.name === '') errs.push(required(`${path}.name`));
      if (subject.kind === 'ServiceAccount' && kind === 'ClusterRoleBinding' && (subject.namespace ?? '') === '') errs.push(required(`${path}.namespace`));
    });
  }
  return errs;
}

function validateObject(kind: Kind, object: Record<string, unknown>): FieldError[] {
  const errs = checkShape(object['metadata'], metadataShape, 'metadata');
  if (errs.length > 0) return errs;
  const metadata = (object['metadata'] ?? {}) as V1ObjectMeta;
  if (metadata.name === undefined || metadata.name === '') errs.push(required('metadata.name', 'name or generateName is required'));
  if (!namespaced.has(kind) && metadata.namespace !== undefined && metadata.namespace !== '') {
    errs.push(invalid('metadata.namespace', metadata.namespace, `not allowed on this type: ${kind} is cluster-scoped`));
  }
  if (kind === 'ConfigMap') {
    errs.push(...checkShape(object['data'], { stringMap: true }, 'data'));
  }
  if (kind === 'Secret') {
    errs.push(...checkShape(object['data'], { stringMap: true }, 'data'), ...checkShape(object['stringData'], { stringMap: true }, 'stringData'));
    for (const [key, value] of Object.entries((object['data'] ?? {}) as Record<string, unknown>)) {
      // Our own text (the API server's decoder says "illegal base64 data at input byte N"); the value is never echoed.
      if (typeof value === 'string' && !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) errs.push(invalid(`data[${key}]`, '<secret data>', 'must be base64-encoded'));
    }
  }
  if (kind === 'RuntimeClass') {
    // ValidateRuntimeClass: the handler is a DNS-1123 label.
    const handler = object['handler'];
    if (handler === undefined || handler === '') errs.push(required('handler'));
    else if (typeof handler !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(handler) || handler.length > 63) {
      errs.push(invalid('handler', handler, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"));
    }
  }
  if (kind === 'GMSACredentialSpec') {
    const credspec = object['credspec'];
    if (credspec !== undefined && credspec !== null && (typeof credspec !== 'object' || Array.isArray(credspec))) {
      errs.push(invalid('credspec', credspec, 'must be an object'));
    }
  }
  errs.push(...validateRbac(kind, object));
  return errs;
}

interface Entry {
  readonly kind: Kind;
  readonly object: Record<string, unknown>;
  readonly source: ManifestSource;
}

/** Expands `kind: List` documents (what `kubectl get -o yaml` writes) into their items. */
function expandLists(doc: ParsedDocument): { items: Record<string, unknown>[]; errors: ManifestError[] } {
  const value = doc.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { items: [], errors: [new ManifestError(doc.source, invalid('', value, 'a manifest document must be an object'))] };
  }
  const object = value as Record<string, unknown>;
  if (object['kind'] !== 'List' && !(typeof object['kind'] === 'string' && object['kind'].endsWith('List') && Array.isArray(object['items']))) {
    return { items: [object], errors: [] };
  }
  const items = object['items'];
  if (!Array.isArray(items)) return { items: [], errors: [new ManifestError(doc.source, invalid('items', items, 'must be an array'))] };
  const errors: ManifestError[] = [];
  const objects: Record<string, unknown>[] = [];
  items.forEach((item, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) errors.push(new ManifestError(doc.source, invalid(`items[${i}]`, item, 'must be an object')));
    else objects.push(item as Record<string, unknown>);
  });
  return { items: objects, errors };
}

/** Builds a snapshot from parsed documents; any error rejects the whole set. */
export function snapshotFromDocuments(documents: readonly ParsedDocument[]): ClusterSnapshot {
  const errors: ManifestError[] = [];
  const entries: Entry[] = [];
  for (const doc of documents) {
    const expanded = expandLists(doc);
    errors.push(...expanded.errors);
    for (const object of expanded.items) {
      const fail = (e: FieldError) => errors.push(new ManifestError(doc.source, e));
      const kind = object['kind'];
      if (kind === undefined || kind === '') { fail(required('kind')); continue; }
      if (typeof kind !== 'string' || !(clusterKinds as readonly string[]).includes(kind)) { fail(notSupported('kind', kind, clusterKinds)); continue; }
      const apiVersion = object['apiVersion'];
      const versions = apiVersions[kind as Kind];
      if (typeof apiVersion !== 'string' || !versions.includes(apiVersion)) { fail(notSupported('apiVersion', apiVersion ?? '', versions)); continue; }
      const objectErrors = validateObject(kind as Kind, object);
      if (objectErrors.length > 0) { objectErrors.forEach(fail); continue; }
      const metadata = normaliseMetadata(object['metadata'] as V1ObjectMeta);
      if (namespaced.has(kind as Kind)) metadata.namespace = metadata.namespace || 'default';
      entries.push({ kind: kind as Kind, object: { ...object, metadata }, source: doc.source });
    }
  }

  // Same kind, namespace and name twice: the second create would fail with AlreadyExists.
  const seen = new Map<string, ManifestSource>();
  for (const entry of entries) {
    const meta = entry.object['metadata'] as V1ObjectMeta;
    const key = `${entry.kind}/${meta.namespace ?? ''}/${meta.name}`;
    const first = seen.get(key);
    if (first !== undefined) {
      errors.push(new ManifestError(entry.source, { ...duplicate('metadata.name', meta.name), detail: `${entry.kind} already defined in ${first.file} document ${first.document}` }));
    } else seen.set(key, entry.source);
  }
  const declared = new Set(entries.filter((e) => e.kind === 'Namespace').map((e) => (e.object['metadata'] as V1ObjectMeta).name));
  for (const entry of entries) {
    const namespace = (entry.object['metadata'] as V1ObjectMeta).namespace;
    if (namespace !== undefined && namespaced.has(entry.kind) && !builtInNamespaces.includes(namespace) && !declared.has(namespace)) {
      errors.push(new ManifestError(entry.source, { ...notFoundValue('metadata.namespace', namespace), detail: 'namespace is not defined in the cluster manifests' }));
    }
  }
  if (errors.length > 0) throw new ManifestErrors(errors);

  const of = <T>(kind: Kind): T[] => entries.filter((e) => e.kind === kind).map((e) => e.object as unknown as T);
  return clusterSnapshot({
    namespaces: of<V1Namespace>('Namespace'),
    serviceAccounts: of<V1ServiceAccount>('ServiceAccount'),
    configMaps: of<V1ConfigMap>('ConfigMap'),
    gmsaCredentialSpecs: of<GMSACredentialSpec>('GMSACredentialSpec'),
    roles: of<V1Role>('Role'),
    clusterRoles: of<V1ClusterRole>('ClusterRole'),
    roleBindings: of<V1RoleBinding>('RoleBinding'),
    clusterRoleBindings: of<V1ClusterRoleBinding>('ClusterRoleBinding'),
    // stringData is folded into data on write, as the API server does.
    secrets: of<V1Secret & { stringData?: Record<string, string> }>('Secret').map(({ stringData, ...secret }) => ({
      ...secret,
      data: { ...(secret.data ?? {}), ...Object.fromEntries(Object.entries(stringData ?? {}).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')])) },
    })),
    runtimeClasses: of<RuntimeClass>('RuntimeClass'),
  });
}

const manifestExtensions = ['.yaml', '.yml', '.json'];
const maxDirectoryDepth = 8;
const maxManifestFiles = 10_000;

/** Manifest files under a directory, sorted, subdirectories included (bounded depth and count). */
async function listManifestFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > maxDirectoryDepth) throw new Error(`${dir}: cluster directory nested deeper than ${maxDirectoryDepth} levels`);
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path, depth + 1);
      else if (manifestExtensions.some((ext) => entry.name.endsWith(ext))) {
        files.push(path);
        if (files.length > maxManifestFiles) throw new Error(`${root}: more than ${maxManifestFiles} manifest files`);
      }
    }
  };
  await walk(root, 0);
  return files;
}

/** `--cluster DIR`: every YAML/JSON file under DIR, errors named by path relative to DIR's parent. */
export class DirectoryClusterSource implements ClusterSource {
  readonly description: string;

  constructor(private readonly directory: string) {
    this.description = `cluster directory ${directory}`;
  }

  async load(): Promise<ClusterSnapshot> {
    const info = await stat(this.directory).catch((err: NodeJS.ErrnoException) => {
      throw new Error(`cluster directory ${this.directory}: ${err.code === 'ENOENT' ? 'does not exist' : err.message}`);
    });
    if (!info.isDirectory()) throw new Error(`cluster directory ${this.directory}: not a directory`);
    const documents: ParsedDocument[] = [];
    const errors: ManifestError[] = [];
    for (const path of await listManifestFiles(this.directory)) {
      const name = join(this.directory, relative(this.directory, path));
      const parsed = parseDocuments(name, await readFile(path, 'utf8'));
      documents.push(...parsed.documents);
      errors.push(...parsed.errors);
    }
    if (errors.length > 0) throw new ManifestErrors(errors);
    return snapshotFromDocuments(documents);
  }
}

/** `--kubeconfig FILE [--context NAME]`: the same objects, listed from a real API server. */
export class KubeconfigClusterSource implements ClusterSource {
  readonly description: string;

  constructor(
    private readonly kubeconfigPath: string,
    private readonly context?: string,
  ) {
    this.description = `kubeconfig ${kubeconfigPath}${context === undefined ? '' : ` (context ${context})`}`;
  }

  async load(): Promise<ClusterSnapshot> {
    // Loaded on demand: the client pulls in an HTTP stack that directory users never need.
    let k8s: typeof import('@kubernetes/client-node');
    try {
      k8s = await import('@kubernetes/client-node');
    } catch (err) {
      throw new Error(`${this.description}: cannot load the Kubernetes client: ${(err as Error).message}`, { cause: err });
    }
    const config = new k8s.KubeConfig();
    let core, rbac, custom;
    try {
      config.loadFromFile(this.kubeconfigPath);
      // setCurrentContext accepts any name; the client fails later with "No active cluster!".
      if (this.context !== undefined) {
        if (config.getContextObject(this.context) === null) throw new Error(`context "${this.context}" does not exist`);
        config.setCurrentContext(this.context);
      }
      if (config.getCurrentCluster() === null) throw new Error(`context "${config.getCurrentContext()}" names no cluster`);
      core = config.makeApiClient(k8s.CoreV1Api);
      rbac = config.makeApiClient(k8s.RbacAuthorizationV1Api);
      custom = config.makeApiClient(k8s.CustomObjectsApi);
    } catch (err) {
      throw new Error(`${this.description}: ${(err as Error).message}`, { cause: err });
    }
    const listing = async <T>(what: string, list: () => Promise<{ items: T[] }>): Promise<T[]> => {
      try {
        return (await list()).items;
      } catch (err) {
        throw new Error(`${this.description}: listing ${what}: ${(err as Error).message}`, { cause: err });
      }
    };
    const gmsa = async (): Promise<GMSACredentialSpec[]> => {
      // v1 is the storage version; clusters still on the alpha CRD only serve v1alpha1.
      for (const version of ['v1', 'v1alpha1']) {
        try {
          const list = (await custom.listClusterCustomObject({ group: gmsaApiGroup, version, plural: 'gmsacredentialspecs' })) as { items?: GMSACredentialSpec[] };
          return list.items ?? [];
        } catch (err) {
          if ((err as { code?: number }).code !== 404) throw new Error(`${this.description}: listing gmsacredentialspecs: ${(err as Error).message}`, { cause: err });
        }
      }
      return [];
    };
    const runtimeClassList = async (): Promise<RuntimeClass[]> => {
      try {
        const list = (await custom.listClusterCustomObject({ group: 'node.k8s.io', version: 'v1', plural: 'runtimeclasses' })) as { items?: RuntimeClass[] };
        return list.items ?? [];
      } catch (err) {
        if ((err as { code?: number }).code === 404) return [];
        throw new Error(`${this.description}: listing runtimeclasses: ${(err as Error).message}`, { cause: err });
      }
    };
    const [namespaces, serviceAccounts, configMaps, roles, clusterRoles, roleBindings, clusterRoleBindings, gmsaCredentialSpecs, secrets, runtimeClasses] = await Promise.all([
      listing('namespaces', () => core.listNamespace()),
      listing('serviceaccounts', () => core.listServiceAccountForAllNamespaces()),
      listing('configmaps', () => core.listConfigMapForAllNamespaces()),
      listing('roles', () => rbac.listRoleForAllNamespaces()),
      listing('clusterroles', () => rbac.listClusterRole()),
      listing('rolebindings', () => rbac.listRoleBindingForAllNamespaces()),
      listing('clusterrolebindings', () => rbac.listClusterRoleBinding()),
      gmsa(),
      // Only pull secrets: the kubelet reads no other kind, and their values stay in this snapshot.
      listing('secrets', () => core.listSecretForAllNamespaces()),
      runtimeClassList(),
    ]);
    const pullSecrets = secrets.filter((s) => s.type === 'kubernetes.io/dockerconfigjson' || s.type === 'kubernetes.io/dockercfg');
    return clusterSnapshot({ namespaces, serviceAccounts, configMaps, gmsaCredentialSpecs, roles, clusterRoles, roleBindings, clusterRoleBindings, secrets: pullSecrets, runtimeClasses });
  }
}
