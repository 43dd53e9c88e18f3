/**
 * May this user do this: the kubelet's request attributes (pkg/kubelet/server/auth.go
 * GetRequestAttributes, v1.34, with KubeletFineGrainedAuthz on as it is by default since 1.33)
 * and its authorizer (cmd/kubelet/app/auth.go BuildAuthz): AlwaysAllow, or a SubjectAccessReview
 * (authorization.k8s.io/v1) per attribute set, allowed answers cached 5 minutes and refused ones
 * 30 seconds (KubeletWebhookAuthorization defaults).
 */
import type { AuthorizationV1Api } from '@kubernetes/client-node';
import type { UserInfo } from './authentication.js';
import { ReviewCache } from './review-cache.js';

export interface RequestAttributes {
  readonly user: UserInfo;
  readonly verb: string;
  readonly namespace: '';
  readonly apiGroup: '';
  readonly apiVersion: 'v1';
  readonly resource: 'nodes';
  readonly subresource: string;
  readonly name: string;
  readonly path: string;
}

/** The HTTP method's API verb (empty for methods the kubelet does not map, as upstream). */
export function apiVerb(method: string | undefined): string {
  switch (method) {
    case 'POST': return 'create';
    case 'GET': return 'get';
    case 'PUT': return 'update';
    case 'PATCH': return 'patch';
    case 'DELETE': return 'delete';
    default: return '';
  }
}

/** isSubpath of auth.go: the path itself or anything below it. */
export function isSubpath(subpath: string, path: string): boolean {
  const p = path.endsWith('/') ? path.slice(0, -1) : path;
  return subpath === p || (subpath.startsWith(p) && subpath[p.length] === '/');
}

/**
 * The attribute sets of a request, most specific first; the request is allowed when any of them
 * is. /pods, /healthz, /configz and /runningpods ask for their own subresource and then `proxy`;
 * /stats, /metrics, /logs, /checkpoint, /statusz, /flagz for theirs alone; anything else `proxy`.
 */
export function requestAttributes(user: UserInfo, method: string | undefined, path: string, nodeName: string): RequestAttributes[] {
  const subresources: string[] = [];
  if (isSubpath(path, '/pods')) subresources.push('pods');
  else if (isSubpath(path, '/healthz')) subresources.push('healthz');
  else if (isSubpath(path, '/configz')) subresources.push('configz');
  else if (isSubpath(path, '/runningpods/')) subresources.push('pods');

  if (isSubpath(path, '/stats/')) subresources.push('stats');
  else if (isSubpath(path, '/metrics')) subresources.push('metrics');
  else if (isSubpath(path, '/logs/')) subresources.push('log');
  else if (isSubpath(path, '/checkpoint/')) subresources.push('checkpoint');
  else if (isSubpath(path, '/statusz')) subresources.push('statusz');
  else if (isSubpath(path, '/flagz')) subresources.push('configz');
  else subresources.push('proxy');

  const verb = apiVerb(method);
  return subresources.map((subresource) => ({
    user, verb, namespace: '', apiGroup: '', apiVersion: 'v1', resource: 'nodes', subresource, name: nodeName, path,
  }));
}

export type Decision = 'allow' | 'deny';

export interface Authorizer {
  /** Rejects when the decision could not be made (the server answers 500). */
  authorize(attributes: RequestAttributes): Promise<Decision>;
}

export class AlwaysAllowAuthorizer implements Authorizer {
  async authorize(): Promise<Decision> {
    return 'allow';
  }
}

export interface SubjectAccessReviewOptions {
  /** authorization.webhook.cacheAuthorizedTTL, default 5 minutes. */
  readonly cacheAuthorizedTtlMs?: number;
  /** authorization.webhook.cacheUnauthorizedTTL, default 30 seconds. */
  readonly cacheUnauthorizedTtlMs?: number;
  readonly now?: () => number;
}

const AUTHORIZER_CACHE_ENTRIES = 1024;

/** pkg/authorization/authorizerfactory DelegatingAuthorizerConfig → webhook authorizer. */
export class SubjectAccessReviewAuthorizer implements Authorizer {
  private readonly cache: ReviewCache<Decision>;
  private readonly allowTtlMs: number;
  private readonly denyTtlMs: number;

  constructor(private readonly api: AuthorizationV1Api, options: SubjectAccessReviewOptions = {}) {
    this.allowTtlMs = options.cacheAuthorizedTtlMs ?? 5 * 60_000;
    this.denyTtlMs = options.cacheUnauthorizedTtlMs ?? 30_000;
    this.cache = new ReviewCache(AUTHORIZER_CACHE_ENTRIES, options.now);
  }

  async authorize(a: RequestAttributes): Promise<Decision> {
    const spec = {
      user: a.user.name,
      ...(a.user.uid ? { uid: a.user.uid } : {}),
      groups: [...a.user.groups],
      ...(a.user.extra ? { extra: Object.fromEntries(Object.entries(a.user.extra).map(([k, v]) => [k, [...v]])) } : {}),
      resourceAttributes: {
        namespace: a.namespace, verb: a.verb, group: a.apiGroup, version: a.apiVersion, resource: a.resource, subresource: a.subresource, name: a.name,
      },
    };
    const key = JSON.stringify(spec);
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const review = await this.api.createSubjectAccessReview({
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
    });
    // Allowed → allow; denied or no opinion → the kubelet refuses.
    const decision: Decision = review.status?.allowed === true ? 'allow' : 'deny';
    this.cache.set(key, decision, decision === 'allow' ? this.allowTtlMs : this.denyTtlMs);
    return decision;
  }
}
