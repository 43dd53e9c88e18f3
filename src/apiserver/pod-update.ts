/**
 * A pod UPDATE as the API server runs it, for `kubelet run` of a file whose pod the node already
 * runs (same namespace and name) and whose contents changed since it was run:
 *
 * 1. the new object is what `kubectl apply` would make of it: the changes from the file as last
 *    run to the file now, applied to the live pod, so fields the server set (the inlined
 *    credential spec, the defaulted service account, a random hostname) stay unless the file
 *    changes them; containers are matched by name, as the strategic merge patch does;
 * 2. mutating admission: nothing on UPDATE (ServiceAccount mutates on create only; the
 *    windows-gmsa mutating webhook is registered for CREATE only, charts/gmsa
 *    mutatingwebhook.yaml);
 * 3. field validation: ValidatePodUpdate (kubernetes v1.34.12 pkg/apis/core/validation/
 *    validation.go): the new pod must be valid, may not add or remove containers, and its spec
 *    may change only in the updatable fields — anything else, GMSA fields included, is
 *    `spec: Forbidden: pod updates may not change fields other than …` (422);
 * 4. validating admission: the windows-gmsa webhook's validateUpdateRequest (webhook.go), which
 *    refuses any change of a GMSA name or contents (403), or, under `alpha-1.14`, the alpha
 *    webhook's annotation rule.
 *
 * Because step 3 runs first and windowsOptions are not updatable, a change of gmsaCredentialSpecName
 * or gmsaCredentialSpec is answered by validation, never by the webhook: the webhook's update rule
 * is a second line a real API server does not reach for a Pod. The alpha design keeps its GMSA
 * settings in annotations, which updates may change, so there the alpha webhook's rule answers.
 */
import { isDeepStrictEqual } from 'node:util';
import type { V1Container, V1Pod, V1PodSchedulingGate, V1PodSpec, V1Toleration } from '@kubernetes/client-node';
import { structuredPatch } from 'diff';
import { AdmissionError, defaultGmsaDesign, invalidPodError, validateGmsaAlphaWebhookUpdate, validateGmsaWebhookUpdate, type AdmissionContext, type AdmissionResult } from './admission.js';
import { child, forbidden, index, invalid, required, type FieldError } from './field-errors.js';
import { defaultPodValidationOptions, validatePod, validateTolerations, type PodValidationOptions } from './validation.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const toJson = (v: unknown): Json => JSON.parse(JSON.stringify(v ?? null)) as Json;
const named = (items: Json[]): boolean => items.length > 0 && items.every((i) => isObject(i) && typeof i['name'] === 'string');

/**
 * Three-way merge of kubectl apply: `live` changed by the difference between `last` (the file as
 * last applied) and `next` (the file now). Lists of named objects merge item by item (the pod's
 * containers, env, volumes have `name` as their patch merge key); other lists are replaced.
 */
function merge(live: Json | undefined, last: Json | undefined, next: Json | undefined): Json | undefined {
  if (next === undefined) return last === undefined ? live : undefined;
  if (isObject(next)) {
    const base = isObject(live) ? { ...live } : {};
    const before = isObject(last) ? last : {};
    for (const key of new Set([...Object.keys(before), ...Object.keys(next)])) {
      const merged = merge(base[key], before[key], next[key]);
      if (merged === undefined) delete base[key];
      else base[key] = merged;
    }
    return base;
  }
  if (Array.isArray(next) && named(next) && (live === undefined || (Array.isArray(live) && (live.length === 0 || named(live))))) {
    const byName = (items: Json | undefined, name: string): Json | undefined => (Array.isArray(items) ? items.find((i) => isObject(i) && i['name'] === name) : undefined);
    const nextNames = new Set(next.map((i) => (i as JsonObject)['name'] as string));
    const lastNames = new Set(Array.isArray(last) ? last.map((i) => (isObject(i) ? i['name'] : undefined)) : []);
    const result: Json[] = next.map((item) => {
      const name = (item as JsonObject)['name'] as string;
      return merge(byName(live, name), byName(last, name), item)!;
    });
    // Items the server added (in live, never in the file) stay; those the file dropped go.
    for (const item of Array.isArray(live) ? live : []) {
      const name = isObject(item) ? (item['name'] as string) : '';
      if (!nextNames.has(name) && !lastNames.has(name)) result.push(item as Exclude<Json, null>);
    }
    return result;
  }
  return isDeepStrictEqual(next, last) ? (live ?? next) : next;
}

/** The file's pod without the UID this simulator derives from the file's contents. */
function asWritten(pod: V1Pod): Json {
  const json = toJson(pod) as JsonObject;
  if (isObject(json['metadata'])) {
    const metadata = { ...json['metadata'] };
    delete metadata['uid'];
    json['metadata'] = metadata;
  }
  return json;
}

/** Whether the file changed since it was run (kubectl apply would send no patch otherwise). */
export function fileChanged(lastApplied: V1Pod, file: V1Pod): boolean {
  return !isDeepStrictEqual(asWritten(lastApplied), asWritten(file));
}

/** The object kubectl apply makes the API server store: live, changed as the file changed. */
export function appliedPod(live: V1Pod, lastApplied: V1Pod, file: V1Pod): V1Pod {
  const merged = merge(toJson(live), asWritten(lastApplied), asWritten(file)) as JsonObject;
  // Identity is the live object's: namespace, name and UID do not come from the file.
  merged['metadata'] = { ...(merged['metadata'] as JsonObject), uid: live.metadata?.uid ?? null };
  return merged as unknown as V1Pod;
}

/** The fields ValidatePodUpdate lets an update change (updatablePodSpecFields, v1.34.12). */
export const updatablePodSpecFields = [
  '`spec.containers[*].image`',
  '`spec.initContainers[*].image`',
  '`spec.activeDeadlineSeconds`',
  '`spec.tolerations` (only additions to existing tolerations)',
  '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
];

const maxInt32 = 2_147_483_647;

/** ValidateContainerUpdates: same number of containers, each with an image without surrounding blanks. */
function validateContainerUpdates(next: readonly V1Container[], old: readonly V1Container[], path: string): { errs: FieldError[]; stop: boolean } {
  if (next.length !== old.length) return { errs: [forbidden(path, 'pod updates may not add or remove containers')], stop: true };
  const errs: FieldError[] = [];
  next.forEach((c, i) => {
    const image = c.image ?? '';
    if (image.length === 0) errs.push(required(child(index(path, i), 'image')));
    if (image.trim().length !== image.length) errs.push(invalid(child(index(path, i), 'image'), image, 'must not have leading or trailing whitespace'));
  });
  return { errs, stop: false };
}

/** A toleration as Go's core.Toleration holds it: absent strings are empty. */
const tolerationFields = (t: V1Toleration) => ({ key: t.key ?? '', operator: t.operator ?? '', value: t.value ?? '', effect: t.effect ?? '' });

/**
 * validateOnlyAddedTolerations: every existing toleration is still there, unchanged but for its
 * tolerationSeconds (the first missing one is the only error); then the new list is validated.
 */
export function validateOnlyAddedTolerations(next: readonly V1Toleration[], old: readonly V1Toleration[], path: string): FieldError[] {
  for (const existing of old) {
    const kept = next.some((t) => isDeepStrictEqual(tolerationFields(t), tolerationFields(existing)));
    if (!kept) return [forbidden(path, 'existing toleration can not be modified except its tolerationSeconds')];
  }
  return validateTolerations(next, path);
}

/**
 * validateOnlyDeletedSchedulingGates: no gate the old pod did not have. Upstream walks a Go map,
 * so with several new gates its order varies; here they come in list order.
 */
export function validateOnlyDeletedSchedulingGates(next: readonly V1PodSchedulingGate[], old: readonly V1PodSchedulingGate[], path: string): FieldError[] {
  const oldNames = new Set(old.map((g) => g.name));
  // The map keeps the last index of a name given twice.
  const added = new Map<string, number>();
  next.forEach((g, i) => {
    if (!oldNames.has(g.name)) added.set(g.name, i);
  });
  return [...added].sort((a, b) => a[1] - b[1]).map(([name, i]) => forbidden(child(index(path, i), 'name'), `only deletion is allowed, but found new scheduling gate '${name}'`));
}

/** validateNodeSelectorMutation (gated pods): existing entries may be neither removed nor changed. */
function validateNodeSelectorMutation(next: Record<string, string> | undefined, old: Record<string, string> | undefined, path: string): FieldError[] {
  for (const [k, v] of Object.entries(old ?? {})) {
    // The value prints as JSON, and Go marshals a map with its keys sorted.
    const sorted = next === undefined ? null : Object.fromEntries(Object.entries(next).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    if (next?.[k] !== v) return [invalid(path, sorted, 'only additions to spec.nodeSelector are allowed (no mutations or deletions)')];
  }
  return [];
}

/** Semantic.DeepEqual treats an empty list as an absent one. */
function semantic(value: unknown): Json {
  const normalise = (v: Json): Json | undefined => {
    if (Array.isArray(v)) return v.length === 0 ? undefined : v.map((i) => normalise(i) ?? null);
    if (isObject(v)) {
      const out: JsonObject = {};
      for (const [k, x] of Object.entries(v)) {
        const n = normalise(x);
        if (n !== undefined) out[k] = n;
      }
      return out;
    }
    return v;
  };
  return normalise(toJson(value)) ?? null;
}

/** A unified diff with 3 lines of context and no file headers, as go-difflib writes it for diff.Diff. */
function unifiedDiff(a: string, b: string): string {
  const range = (start: number, length: number): string => (length === 1 ? `${start}` : `${length === 0 ? start - 1 : start},${length}`);
  const patch = structuredPatch('', '', a, b, '', '', { context: 3 });
  return patch.hunks.map((h) => `@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@\n${h.lines.map((l) => `${l}\n`).join('')}`).join('');
}

/**
 * ValidatePodUpdate (kubernetes v1.34.12): the new pod's own validation, the container updates,
 * activeDeadlineSeconds, tolerations (only added), scheduling gates (only removed), then the spec
 * compared with the old one after the updatable fields were set back. The first line of the last error is upstream's text; the diff under it is ours: a
 * unified diff of the v1 specs as JSON, where upstream diffs its internal types.
 */
export function validatePodUpdate(next: V1Pod, old: V1Pod, options: PodValidationOptions = defaultPodValidationOptions): FieldError[] {
  const errs = validatePod(next, options).filter((e) => !(e.path === 'spec.ephemeralContainers' && e.type === 'Forbidden'));
  const nextSpec: V1PodSpec = next.spec ?? { containers: [] };
  const oldSpec: V1PodSpec = old.spec ?? { containers: [] };
  for (const [list, path] of [['containers', 'spec.containers'], ['initContainers', 'spec.initContainers']] as const) {
    const result = validateContainerUpdates(nextSpec[list] ?? [], oldSpec[list] ?? [], path);
    errs.push(...result.errs);
    if (result.stop) return errs;
  }
  const deadlinePath = 'spec.activeDeadlineSeconds';
  const nextDeadline = nextSpec.activeDeadlineSeconds;
  const oldDeadline = oldSpec.activeDeadlineSeconds;
  if (nextDeadline !== undefined && nextDeadline !== null) {
    if (nextDeadline < 0 || nextDeadline > maxInt32) return [...errs, invalid(deadlinePath, nextDeadline, `must be between 0 and ${maxInt32}, inclusive`)];
    if (oldDeadline !== undefined && oldDeadline !== null && oldDeadline < nextDeadline) return [...errs, invalid(deadlinePath, nextDeadline, 'must be less than or equal to previous value')];
  } else if (oldDeadline !== undefined && oldDeadline !== null) {
    errs.push(invalid(deadlinePath, null, 'must not update from a positive integer to nil value'));
  }
  errs.push(...validateOnlyAddedTolerations(nextSpec.tolerations ?? [], oldSpec.tolerations ?? [], 'spec.tolerations'));
  errs.push(...validateOnlyDeletedSchedulingGates(nextSpec.schedulingGates ?? [], oldSpec.schedulingGates ?? [], 'spec.schedulingGates'));
  if (isDeepStrictEqual(semantic(nextSpec), semantic(oldSpec))) return errs;

  // Set the updatable fields back to the old values; what still differs may not change.
  const munged = structuredClone(nextSpec);
  munged.containers = munged.containers.map((c, i) => ({ ...c, image: oldSpec.containers[i]?.image ?? c.image }));
  if (munged.initContainers !== undefined) munged.initContainers = munged.initContainers.map((c, i) => ({ ...c, image: oldSpec.initContainers?.[i]?.image ?? c.image }));
  setOrDelete(munged, 'activeDeadlineSeconds', oldSpec.activeDeadlineSeconds);
  setOrDelete(munged, 'schedulingGates', oldSpec.schedulingGates);
  setOrDelete(munged, 'tolerations', oldSpec.tolerations);
  if ((oldSpec.terminationGracePeriodSeconds ?? 0) < 0 && munged.terminationGracePeriodSeconds === 1) munged.terminationGracePeriodSeconds = oldSpec.terminationGracePeriodSeconds!;
  // A gated pod (one that still has scheduling gates) may gain nodeSelector entries. (Its node
  // affinity rules, also relaxed upstream, are not reproduced: a change there is refused below.)
  if ((oldSpec.schedulingGates ?? []).length > 0 && !isDeepStrictEqual(semantic(munged.nodeSelector), semantic(oldSpec.nodeSelector))) {
    errs.push(...validateNodeSelectorMutation(munged.nodeSelector, oldSpec.nodeSelector, 'spec.nodeSelector'));
    setOrDelete(munged, 'nodeSelector', oldSpec.nodeSelector);
  }
  if (!isDeepStrictEqual(semantic(munged), semantic(oldSpec))) {
    const diff = unifiedDiff(`${JSON.stringify(semantic(oldSpec), null, 1)}\n`, `${JSON.stringify(semantic(munged), null, 1)}\n`);
    errs.push(forbidden('spec', `pod updates may not change fields other than ${updatablePodSpecFields.join(',')}\n${diff}`));
  }
  return errs;
}

function setOrDelete<K extends keyof V1PodSpec>(spec: V1PodSpec, key: K, value: V1PodSpec[K] | undefined): void {
  if (value === undefined) delete spec[key];
  else spec[key] = value;
}

/**
 * The UPDATE of `live` to `next` (the object appliedPod made), through the API server's steps in
 * order. Allowed: the pod to store. The first refusal answers.
 */
export function updatePod(next: V1Pod, live: V1Pod, context: AdmissionContext): AdmissionResult {
  try {
    const fields = validatePodUpdate(next, live, context.validation ?? defaultPodValidationOptions);
    if (fields.length > 0) throw invalidPodError(next.metadata?.name ?? '', fields);
    switch (context.design ?? defaultGmsaDesign) {
      case 'webhook':
        validateGmsaWebhookUpdate(next, live);
        break;
      case 'alpha-1.14':
        validateGmsaAlphaWebhookUpdate(next, live);
        break;
      case 'kep-configmap':
        // The KEP's GMSAAuthorizer had no update rule: the annotations were checked on create.
        break;
    }
    return { allowed: true, pod: next };
  } catch (err) {
    if (err instanceof AdmissionError) return { allowed: false, error: err };
    throw err;
  }
}
