/**
 * Admission of a pod before it reaches the node, for the GMSA part in one of three designs, picked
 * by name (`--gmsa-design`); the shipped one is the default:
 *
 * - `webhook`: the shipped windows-gmsa webhook (kubernetes-sigs/windows-gmsa): `gmsaCredentialSpecName`
 *   names a cluster-scoped GMSACredentialSpec; the mutating hook inlines its `credspec` as compact
 *   JSON with sorted keys, the validating hook checks the service account may `use` it and that
 *   contents match the resource;
 * - `kep-configmap`: the GMSA KEP's design that never shipped: the annotation
 *   `pod.alpha|beta.kubernetes.io/windows-gmsa-config-map` names a ConfigMap whose key
 *   `gmsa-cred-spec` holds the spec, and the GMSAAuthorizer requires both the requesting user and
 *   the service account to be allowed `use` on that ConfigMap;
 * - `alpha-1.14`: the alpha windows-gmsa webhook of Kubernetes 1.14, which inlined the resource
 *   named by a `…/gmsa-credential-spec-name` annotation into the `…/gmsa-credential-spec`
 *   annotation, and the 1.14 kubelet, which read that annotation itself (container before pod).
 *
 * Under one design the others' annotations mean nothing, as on a cluster that runs that design.
 *
 * Before those, the two built-in checks every pod meets: its namespace exists and its service
 * account exists (defaulted to `default`). Texts and codes of every rejection are upstream's where
 * upstream has one.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { V1Container, V1Pod, V1WindowsSecurityContextOptions } from '@kubernetes/client-node';
import { findConfigMap, findGMSACredentialSpec, findServiceAccount, gmsaApiGroup, namespaceExists, type ClusterSnapshot, type GMSACredentialSpec } from './cluster.js';
import { formatFieldError, type FieldError } from './field-errors.js';
import { authorize, serviceAccountUser, type UserInfo } from './rbac.js';
import { defaultPodValidationOptions, validatePod, type PodValidationOptions } from './validation.js';
import { goJsonParse } from './go-json-errors.js';
import { admitRuntimeClass } from './runtime-class-admission.js';
import { defaultGmsaDesign, gmsaWebhookName, type GmsaDesign } from './gmsa-designs.js';

/** A refused admission: the HTTP status code the API server answers with and the message. */
export class AdmissionError extends Error {
  constructor(
    readonly code: number,
    message: string,
    /** Which admission step refused: shown to users as upstream does (webhook name, plugin). */
    readonly by: AdmissionStep,
    /** For `validation` (422 Invalid): every field error, in upstream order. */
    readonly fields?: readonly FieldError[],
  ) {
    super(message);
    this.name = 'AdmissionError';
  }
}

/** `validation`: the API server's field validation of the (mutated) object, between the two admission phases. */
export type AdmissionStep = 'NamespaceLifecycle' | 'ServiceAccount' | 'RuntimeClass' | 'GMSAAuthorizer' | 'gmsa-webhook' | 'validation';

/**
 * errors.NewInvalid (apimachinery v0.34.12 pkg/api/errors): `Pod "x" is invalid: <aggregate>`,
 * where the aggregate is the one message, or several in brackets joined by ", " (duplicates dropped).
 */
export function invalidPodError(name: string, fields: readonly FieldError[]): AdmissionError {
  const messages = [...new Set(fields.map(formatFieldError))];
  const aggregate = messages.length === 1 ? messages[0]! : `[${messages.join(', ')}]`;
  return new AdmissionError(http.unprocessable, `Pod ${JSON.stringify(name)} is invalid: ${aggregate}`, 'validation', fields);
}

export { defaultGmsaDesign, gmsaDesigns, gmsaWebhookName, type GmsaDesign } from './gmsa-designs.js';

/** How kubectl shows a refusal: `admission webhook "…" denied the request: …` for the webhook. */
export function describeRejection(err: AdmissionError): string {
  return err.by === 'gmsa-webhook' ? `admission webhook "${gmsaWebhookName}" denied the request: ${err.message}` : err.message;
}

export type AdmissionResult = { readonly allowed: true; readonly pod: V1Pod } | { readonly allowed: false; readonly error: AdmissionError };

export interface AdmissionContext {
  readonly cluster: ClusterSnapshot;
  /** The requesting user (`--as`, `--as-group`); the KEP's GMSAAuthorizer checks it. */
  readonly user: UserInfo;
  /** The GMSA design the cluster runs; `webhook` (the shipped one) by default. */
  readonly design?: GmsaDesign;
  /**
   * The windows-gmsa webhook's RANDOM_HOSTNAME (its Helm chart's `randomHostname`, default
   * false): a pod with a gMSA and no spec.hostname gets a random 15-character one.
   */
  readonly randomHostname?: boolean;
  /** Where random hostnames come from (a lowercase UUID by default); replaceable in tests. */
  readonly uuid?: () => string;
  /** The API server's field validation options (--allow-privileged). */
  readonly validation?: PodValidationOptions;
}

/** kubectl with an admin kubeconfig: a member of system:masters. */
export const defaultRequestingUser: UserInfo = { name: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] };

const http = { forbidden: 403, notFound: 404, expectationFailed: 417, unprocessable: 422 } as const;

// ---- Go's encoding/json, as the webhook uses it to inline the resource's credspec ----

/** json.Marshal of a decoded object: keys sorted at every level, HTML characters escaped. */
export function goJsonMarshal(value: unknown): string {
  const encode = (v: unknown): string => {
    if (v === null || v === undefined) return 'null';
    if (Array.isArray(v)) return `[${v.map(encode).join(',')}]`;
    if (typeof v === 'object') {
      const entries = Object.keys(v as object)
        .sort()
        .map((k) => `${encode(k)}:${encode((v as Record<string, unknown>)[k])}`);
      return `{${entries.join(',')}}`;
    }
    if (typeof v === 'string') {
      return JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    }
    return JSON.stringify(v);
  };
  return encode(value);
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** json.Unmarshal into map[string]interface{}: Go's syntax errors; anything but an object is an error. */
function parseJsonObject(text: string): { [key: string]: Json } {
  const value = goJsonParse(text) as Json;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const kind = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
    throw new Error(`json: cannot unmarshal ${kind} into Go value of type map[string]interface {}`);
  }
  return value;
}

/** compareCredSpecContents: equal as strings, or else as parsed JSON objects. */
export function compareCredSpecContents(fromPod: string, fromResource: string): { equal: boolean; error?: string } {
  if (fromPod === fromResource) return { equal: true };
  let podObject: { [key: string]: Json };
  let resourceObject: { [key: string]: Json };
  try {
    podObject = parseJsonObject(fromPod);
  } catch (err) {
    return { equal: false, error: `unable to parse ${JSON.stringify(fromPod)} as a JSON object: ${(err as Error).message}` };
  }
  try {
    resourceObject = parseJsonObject(fromResource);
  } catch (err) {
    return { equal: false, error: `unable to parse CRD ${JSON.stringify(fromResource)} as a JSON object: ${(err as Error).message}` };
  }
  // reflect.DeepEqual of the two unmarshalled maps: plain JSON values, so a strict deep comparison.
  return { equal: isDeepStrictEqual(podObject, resourceObject) };
}

/** Each resource's credspec as the webhook inlines it, marshalled once per snapshot. */
const marshalledCredSpecsView = Symbol('marshalled credspecs');

/** retrieveCredSpecContents: 404 when the resource is missing, 417 when it has no credspec. */
export function retrieveCredSpecContents(cluster: ClusterSnapshot, name: string): string {
  const resource = findGMSACredentialSpec(cluster, name);
  if (resource === undefined) throw new AdmissionError(http.notFound, `cred spec ${name} does not exist`, 'gmsa-webhook');
  if (resource.credspec === undefined || resource.credspec === null || resource.credspec === '') {
    throw new AdmissionError(http.expectationFailed, `cred spec ${name} does not have a credspec key`, 'gmsa-webhook');
  }
  const marshalled = cluster.derived.get(marshalledCredSpecsView, () => new Map<GMSACredentialSpec, string>());
  let contents = marshalled.get(resource);
  if (contents === undefined) marshalled.set(resource, (contents = goJsonMarshal(resource.credspec)));
  return contents;
}

// ---- walking the windowsOptions the webhook looks at: the pod's, then each container's ----

type ResourceKind = 'pod' | 'container';

interface WindowsOptionsSite {
  readonly kind: ResourceKind;
  readonly name: string;
  readonly options: V1WindowsSecurityContextOptions;
}

/** iterateOverWindowsSecurityOptions: pod level and regular containers, never init or ephemeral ones. */
function windowsOptionsSites(pod: V1Pod): WindowsOptionsSite[] {
  const sites: WindowsOptionsSite[] = [];
  const podOptions = pod.spec?.securityContext?.windowsOptions;
  if (podOptions !== undefined && podOptions !== null) sites.push({ kind: 'pod', name: pod.metadata?.name ?? '', options: podOptions });
  for (const container of pod.spec?.containers ?? []) {
    const options = container.securityContext?.windowsOptions;
    if (options !== undefined && options !== null) sites.push({ kind: 'container', name: container.name, options });
  }
  return sites;
}

/** The webhook's generateUUID: the first 15 characters of a random UUID, in lower case. */
export const randomGmsaHostname = (uuid: () => string = randomUUID): string => uuid().slice(0, 15).toLowerCase();

export interface GmsaMutationOptions {
  /** EnableRandomHostName (RANDOM_HOSTNAME). */
  readonly randomHostname?: boolean;
  readonly uuid?: () => string;
}

/**
 * mutateCreateRequest (windows-gmsa admission-webhook/webhook.go): inline the named resource's
 * credspec where a name has no contents yet; with EnableRandomHostName, a pod where any
 * gmsaCredentialSpecName is set (pod or regular container) and spec.hostname is empty gets a
 * random hostname. A hostname the pod sets is kept.
 */
export function mutateGmsaWebhook(pod: V1Pod, cluster: ClusterSnapshot, options: GmsaMutationOptions = {}): V1Pod {
  const mutated = structuredClone(pod);
  let hasGmsa = false;
  for (const site of windowsOptionsSites(mutated)) {
    if (site.options.gmsaCredentialSpecName === undefined) continue;
    hasGmsa = true;
    if (site.options.gmsaCredentialSpec === undefined) {
      site.options.gmsaCredentialSpec = retrieveCredSpecContents(cluster, site.options.gmsaCredentialSpecName);
    }
  }
  if (hasGmsa && options.randomHostname === true && (mutated.spec!.hostname ?? '') === '') {
    mutated.spec!.hostname = randomGmsaHostname(options.uuid);
  }
  return mutated;
}

/** The validating webhook on CREATE: the service account may `use` each named spec; contents match. */
export function validateGmsaWebhookCreate(pod: V1Pod, namespace: string, cluster: ClusterSnapshot): void {
  const serviceAccount = pod.spec?.serviceAccountName ?? '';
  for (const site of windowsOptionsSites(pod)) {
    const name = site.options.gmsaCredentialSpecName;
    const contents = site.options.gmsaCredentialSpec;
    if (name !== undefined) {
      const decision = authorize(cluster, serviceAccountUser(namespace, serviceAccount), {
        verb: 'use',
        apiGroup: gmsaApiGroup,
        resource: 'gmsacredentialspecs',
        namespace,
        name,
      });
      if (!decision.allowed) {
        let message = `service account ${JSON.stringify(serviceAccount)} is not authorized to \`use\` GMSA cred spec ${JSON.stringify(name)}`;
        if (decision.reason !== '') message += `, reason: ${JSON.stringify(decision.reason)}`;
        throw new AdmissionError(http.forbidden, message, 'gmsa-webhook');
      }
      if (contents !== undefined) {
        const expected = retrieveCredSpecContents(cluster, name);
        const comparison = compareCredSpecContents(contents, expected);
        if (!comparison.equal) {
          let message = `the GMSA cred spec contents for ${site.kind} ${JSON.stringify(site.name)} does not match the contents of GMSA resource ${JSON.stringify(name)}`;
          if (comparison.error !== undefined) message += `: ${comparison.error}`;
          throw new AdmissionError(http.unprocessable, message, 'gmsa-webhook');
        }
      }
    } else if (contents !== undefined) {
      throw new AdmissionError(
        http.unprocessable,
        `${site.kind} ${JSON.stringify(site.name)} has a GMSA cred spec set, but does not define the name of the corresponding resource`,
        'gmsa-webhook',
      );
    }
  }
}

/** The validating webhook on UPDATE: neither GMSA name nor contents may change, at any level. */
export function validateGmsaWebhookUpdate(pod: V1Pod, oldPod: V1Pod): void {
  const oldContainers = new Map<string, V1WindowsSecurityContextOptions>();
  for (const site of windowsOptionsSites(oldPod)) if (site.kind === 'container') oldContainers.set(site.name, site.options);
  for (const site of windowsOptionsSites(pod)) {
    const old = (site.kind === 'pod' ? oldPod.spec?.securityContext?.windowsOptions : oldContainers.get(site.name)) ?? {};
    const modified: string[] = [];
    if (site.options.gmsaCredentialSpecName !== old.gmsaCredentialSpecName) modified.push('name');
    if (site.options.gmsaCredentialSpec !== old.gmsaCredentialSpec) modified.push('contents');
    if (modified.length > 0) {
      throw new AdmissionError(
        http.forbidden,
        `cannot update an existing pod's GMSA settings (GMSA ${modified.join(' and ')} modified on ${site.kind} ${JSON.stringify(site.name)})`,
        'gmsa-webhook',
      );
    }
  }
}

// ---- the KEP's ConfigMap design ----

export const gmsaConfigMapAnnotations: readonly string[] = ['pod.alpha.kubernetes.io/windows-gmsa-config-map', 'pod.beta.kubernetes.io/windows-gmsa-config-map'];
export const gmsaConfigMapKey = 'gmsa-cred-spec';

function podWindowsOptions(pod: V1Pod): V1WindowsSecurityContextOptions {
  pod.spec ??= { containers: [] };
  pod.spec.securityContext ??= {};
  pod.spec.securityContext.windowsOptions ??= {};
  return pod.spec.securityContext.windowsOptions;
}

function containerWindowsOptions(container: V1Container): V1WindowsSecurityContextOptions {
  container.securityContext ??= {};
  container.securityContext.windowsOptions ??= {};
  return container.securityContext.windowsOptions;
}

/**
 * GMSAAuthorizer and the ConfigMap lookup: the requesting user and the pod's service account must
 * both be allowed `use` on the ConfigMap; its `gmsa-cred-spec` key becomes the pod's credential spec.
 */
export function admitGmsaConfigMap(pod: V1Pod, namespace: string, user: UserInfo, cluster: ClusterSnapshot): V1Pod {
  const annotations = pod.metadata?.annotations ?? {};
  const named = gmsaConfigMapAnnotations.filter((a) => annotations[a] !== undefined && annotations[a] !== '');
  if (named.length === 0) return pod;
  const names = new Set(named.map((a) => annotations[a]!));
  if (names.size > 1) {
    throw new AdmissionError(http.unprocessable, `annotations ${named.map((a) => JSON.stringify(a)).join(' and ')} name different ConfigMaps`, 'GMSAAuthorizer');
  }
  const configMapName = [...names][0]!;
  const serviceAccount = pod.spec?.serviceAccountName ?? '';
  const attrs = { verb: 'use', apiGroup: '', resource: 'configmaps', namespace, name: configMapName };
  const where = `ConfigMap ${JSON.stringify(configMapName)} in namespace ${JSON.stringify(namespace)}`;
  if (!authorize(cluster, user, attrs).allowed) {
    throw new AdmissionError(http.forbidden, `user ${JSON.stringify(user.name)} is not authorized to \`use\` GMSA ${where}`, 'GMSAAuthorizer');
  }
  if (!authorize(cluster, serviceAccountUser(namespace, serviceAccount), attrs).allowed) {
    throw new AdmissionError(http.forbidden, `service account ${JSON.stringify(serviceAccount)} is not authorized to \`use\` GMSA ${where}`, 'GMSAAuthorizer');
  }
  const configMap = findConfigMap(cluster, namespace, configMapName);
  if (configMap === undefined) throw new AdmissionError(http.notFound, `GMSA ${where} does not exist`, 'GMSAAuthorizer');
  const contents = configMap.data?.[gmsaConfigMapKey];
  if (contents === undefined || contents === '') {
    throw new AdmissionError(http.expectationFailed, `GMSA ${where} does not have a ${gmsaConfigMapKey} key`, 'GMSAAuthorizer');
  }
  const admitted = structuredClone(pod);
  const options = podWindowsOptions(admitted);
  if (options.gmsaCredentialSpec !== undefined && !compareCredSpecContents(options.gmsaCredentialSpec, contents).equal) {
    throw new AdmissionError(
      http.unprocessable,
      `the GMSA cred spec contents for pod ${JSON.stringify(pod.metadata?.name ?? '')} does not match the contents of GMSA ${where}`,
      'GMSAAuthorizer',
    );
  }
  options.gmsaCredentialSpec = contents;
  return admitted;
}

// ---- the 1.14 alpha design: annotations, the alpha webhook and the kubelet that read them ----

export const alphaPodAnnotation = 'pod.alpha.windows.kubernetes.io/gmsa-credential-spec';
export const alphaContainerAnnotationSuffix = '.container.alpha.windows.kubernetes.io/gmsa-credential-spec';

/** The annotation pairs the alpha webhook walks: each container's, then the pod's. */
function alphaAnnotationKeys(pod: V1Pod): { readonly contents: string; readonly name: string }[] {
  const keys = (pod.spec?.containers ?? []).map((c) => `${c.name}${alphaContainerAnnotationSuffix}`);
  keys.push(alphaPodAnnotation);
  return keys.map((contents) => ({ contents, name: `${contents}-name` }));
}

/**
 * The alpha webhook on CREATE (windows-gmsa admission-webhook/webhook.go before the fields
 * existed): only it may set a contents annotation; a named spec must be usable by the service
 * account, and its credspec is inlined into the contents annotation.
 */
export function admitGmsaAlphaWebhook(pod: V1Pod, namespace: string, cluster: ClusterSnapshot): V1Pod {
  const annotations = pod.metadata?.annotations ?? {};
  const serviceAccount = pod.spec?.serviceAccountName ?? '';
  let admitted: V1Pod | undefined;
  for (const key of alphaAnnotationKeys(pod)) {
    if (annotations[key.contents] !== undefined) {
      throw new AdmissionError(http.forbidden, `cannot pre-set a pod's gMSA content annotation (annotation ${key.contents} present)`, 'gmsa-webhook');
    }
    const name = annotations[key.name];
    if (name === undefined || name === '') continue;
    const decision = authorize(cluster, serviceAccountUser(namespace, serviceAccount), { verb: 'use', apiGroup: gmsaApiGroup, resource: 'gmsacredentialspecs', namespace, name });
    if (!decision.allowed) {
      let message = `the service account used for this pod does not have \`use\` access to the ${name} gMSA cred spec`;
      if (decision.reason !== '') message += `, reason : ${decision.reason}`;
      throw new AdmissionError(http.forbidden, message, 'gmsa-webhook');
    }
    admitted ??= structuredClone(pod);
    admitted.metadata!.annotations![key.contents] = retrieveCredSpecContents(cluster, name);
  }
  return admitted ?? pod;
}

/** The alpha webhook on UPDATE: no GMSA annotation may change. */
export function validateGmsaAlphaWebhookUpdate(pod: V1Pod, oldPod: V1Pod): void {
  const now = pod.metadata?.annotations ?? {};
  const before = oldPod.metadata?.annotations ?? {};
  const keys = alphaAnnotationKeys(pod);
  // assertAnnotationsUnchanged runs on the pod's pair first, then each container's.
  for (const key of [keys[keys.length - 1]!, ...keys.slice(0, -1)]) {
    for (const annotation of [key.name, key.contents]) {
      if (now[annotation] !== before[annotation]) {
        throw new AdmissionError(http.forbidden, `cannot update an existing pod's gMSA annotation (annotation ${annotation} changed)`, 'gmsa-webhook');
      }
    }
  }
}

/**
 * What the 1.14 kubelet handed the runtime for a container: the container's contents annotation,
 * else the pod's (kuberuntime's windows security context, 1.14). Undefined: no credential spec.
 */
export function alphaCredentialSpecFor(pod: V1Pod, containerName: string): string | undefined {
  const annotations = pod.metadata?.annotations ?? {};
  return annotations[`${containerName}${alphaContainerAnnotationSuffix}`] ?? annotations[alphaPodAnnotation];
}

/**
 * The 1.14 kubelet's reading of the annotations, expressed in the fields the runtime path reads
 * today: each container whose annotations give it a credential spec gets it as its own.
 */
export function readAlphaCredentialSpecs(pod: V1Pod): V1Pod {
  const specs = (pod.spec?.containers ?? []).map((c) => alphaCredentialSpecFor(pod, c.name));
  if (specs.every((s) => s === undefined)) return pod;
  const read = structuredClone(pod);
  read.spec!.containers.forEach((container, i) => {
    if (specs[i] !== undefined) containerWindowsOptions(container).gmsaCredentialSpec = specs[i];
  });
  return read;
}

// ---- the whole chain ----

/** NamespaceLifecycle: a pod in a namespace that does not exist is refused. */
export function checkNamespace(namespace: string, cluster: ClusterSnapshot): void {
  if (!namespaceExists(cluster, namespace)) throw new AdmissionError(http.notFound, `namespaces ${JSON.stringify(namespace)} not found`, 'NamespaceLifecycle');
}

/** The ServiceAccount plugin: default to `default` (which every namespace has) and require it to exist. */
export function admitServiceAccount(pod: V1Pod, namespace: string, cluster: ClusterSnapshot): V1Pod {
  const admitted = structuredClone(pod);
  admitted.spec ??= { containers: [] };
  const name = admitted.spec.serviceAccountName || 'default';
  admitted.spec.serviceAccountName = name;
  if (name !== 'default' && findServiceAccount(cluster, namespace, name) === undefined) {
    throw new AdmissionError(
      http.forbidden,
      `pods ${JSON.stringify(pod.metadata?.name ?? '')} is forbidden: error looking up service account ${namespace}/${name}: serviceaccount ${JSON.stringify(name)} not found`,
      'ServiceAccount',
    );
  }
  return admitted;
}

/** The API server's field validation of the object admission produced: 422 with every field. */
function validateAdmitted(pod: V1Pod, context: AdmissionContext): void {
  const fields = validatePod(pod, context.validation ?? defaultPodValidationOptions);
  if (fields.length > 0) throw invalidPodError(pod.metadata?.name ?? '', fields);
}

/**
 * A pod CREATE as the API server runs it (apiserver v0.34.12 endpoints/handlers/create.go and
 * registry/generic/registry/store.go Create): the mutating admission plugins in order
 * (NamespaceLifecycle, ServiceAccount), then the mutating webhooks; then the strategy's field
 * validation of the mutated pod (so an inlined credential spec over 64 KiB is a 422 here, at
 * creation); then the validating admission (the validating webhook). The first step that
 * refuses answers. The input pod is never modified.
 */
export function admitPod(pod: V1Pod, context: AdmissionContext): AdmissionResult {
  const namespace = pod.metadata?.namespace || 'default';
  try {
    checkNamespace(namespace, context.cluster);
    let admitted = admitServiceAccount(pod, namespace, context.cluster);
    // The RuntimeClass plugin runs after ServiceAccount, before the mutating webhooks.
    const runtimeClass = admitRuntimeClass(admitted, context.cluster);
    if ('forbidden' in runtimeClass) throw new AdmissionError(http.forbidden, `pods ${JSON.stringify(pod.metadata?.name ?? '')} is forbidden: ${runtimeClass.forbidden}`, 'RuntimeClass');
    admitted = runtimeClass.pod;
    switch (context.design ?? defaultGmsaDesign) {
      case 'webhook':
        admitted = mutateGmsaWebhook(admitted, context.cluster, {
          ...(context.randomHostname === undefined ? {} : { randomHostname: context.randomHostname }),
          ...(context.uuid === undefined ? {} : { uuid: context.uuid }),
        });
        validateAdmitted(admitted, context);
        validateGmsaWebhookCreate(admitted, namespace, context.cluster);
        break;
      case 'kep-configmap':
        // The KEP's GMSAAuthorizer checks and inlines in one in-tree plugin, before validation.
        admitted = admitGmsaConfigMap(admitted, namespace, context.user, context.cluster);
        validateAdmitted(admitted, context);
        break;
      case 'alpha-1.14':
        // The alpha webhook was a mutating one: it wrote annotations, which validation then checked.
        admitted = admitGmsaAlphaWebhook(admitted, namespace, context.cluster);
        validateAdmitted(admitted, context);
        break;
    }
    return { allowed: true, pod: admitted };
  } catch (err) {
    if (err instanceof AdmissionError) return { allowed: false, error: err };
    throw err;
  }
}
