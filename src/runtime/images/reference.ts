import { RuntimeError } from '../errors.js';

/**
 * Image reference normalisation as in the distribution/reference grammar that containerd and
 * crictl use: a missing registry means docker.io, a single-component docker.io name lives under
 * `library/`, and a reference with neither tag nor digest means `:latest`.
 */
export interface ImageReference {
  /** Registry and path, e.g. `docker.io/library/busybox`. */
  name: string;
  tag?: string;
  digest?: string;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const DOMAIN = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?$/;

export const DEFAULT_DOMAIN = 'docker.io';

/** True for a full image id (`sha256:<64 hex>`) or its bare hex form. */
export function isImageId(text: string): boolean {
  return DIGEST.test(text) || /^[0-9a-f]{64}$/.test(text);
}

export function parseImageReference(input: string): ImageReference {
  const invalid = (why: string): RuntimeError =>
    new RuntimeError('InvalidArgument', `invalid image reference "${input}": ${why}`);
  if (input === '') throw invalid('it is empty');
  if (input.length > 255 + 128 + 72) throw invalid('it is too long');
  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw invalid(`digest "${digest}" is not sha256:<64 lowercase hex>`);
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw invalid(`tag "${tag}" is not valid`);
  }
  const parts = rest.split('/');
  let domain = DEFAULT_DOMAIN;
  const first = parts[0] ?? '';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase())) {
    if (!DOMAIN.test(first)) throw invalid(`registry "${first}" is not a valid host`);
    domain = first;
    parts.shift();
  }
  if (parts.length === 0 || parts.some((p) => !COMPONENT.test(p))) {
    throw invalid('repository names must be lowercase letters, digits and separators');
  }
  if (domain === DEFAULT_DOMAIN && parts.length === 1) parts.unshift('library');
  if (tag === undefined && digest === undefined) tag = 'latest';
  const ref: ImageReference = { name: `${domain}/${parts.join('/')}` };
  if (tag !== undefined) ref.tag = tag;
  if (digest !== undefined) ref.digest = digest;
  return ref;
}

/** `name:tag`, or `name@digest` when the reference is pinned by digest. */
export function formatReference(ref: ImageReference): string {
  if (ref.digest !== undefined) return `${ref.name}@${ref.digest}`;
  return `${ref.name}:${ref.tag ?? 'latest'}`;
}

/** The normalised form of a user reference (`busybox` → `docker.io/library/busybox:latest`). */
export function normaliseImageReference(input: string): string {
  return formatReference(parseImageReference(input));
}
