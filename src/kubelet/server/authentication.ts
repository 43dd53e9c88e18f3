/**
 * Who is asking: the kubelet's delegating authenticator (cmd/kubelet/app/auth.go BuildAuthn and
 * apiserver pkg/authentication/authenticatorfactory/delegating.go, v1.34). In order: a client
 * certificate verified against --client-ca-file (user = CN, groups = O), then a bearer token
 * reviewed by the API server (TokenReview, authentication.k8s.io/v1, answers cached 2 minutes).
 * The first that says who it is wins; `system:authenticated` is added to its groups. With
 * --anonymous-auth a request that none recognises is `system:anonymous` in
 * `system:unauthenticated`, but one that presented bad credentials is still refused.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { AuthenticationV1Api } from '@kubernetes/client-node';
import { ReviewCache } from './review-cache.js';

export interface UserInfo {
  readonly name: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** ok: the user; not ok with no error: the request carried nothing this method knows; error: bad credentials. */
export type Authentication =
  | { readonly ok: true; readonly user: UserInfo }
  | { readonly ok: false; readonly error?: string };

export interface RequestAuthenticator {
  authenticate(req: IncomingMessage): Promise<Authentication>;
}

/** apiserver pkg/authentication/user (v1.34). */
export const Anonymous = 'system:anonymous';
export const AllUnauthenticated = 'system:unauthenticated';
export const AllAuthenticated = 'system:authenticated';

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';
const ANY_EXTENDED_KEY_USAGE_OID = '2.5.29.37.0';

/**
 * x509.CommonNameUserConversion: the verified client certificate's CN is the user, its O the
 * groups. The TLS server asked for a certificate and verified its chain against the client CA
 * bundle (without refusing the connection: a request may still authenticate by token).
 */
export class ClientCertificateAuthenticator implements RequestAuthenticator {
  async authenticate(req: IncomingMessage): Promise<Authentication> {
    const socket = req.socket as TLSSocket;
    if (typeof socket.getPeerCertificate !== 'function') return { ok: false };
    const peer = socket.getPeerCertificate(false);
    if (peer === null || peer === undefined || Object.keys(peer).length === 0) return { ok: false };
    if (!socket.authorized) {
      // apiserver pkg/authentication/request/x509: "verifying certificate %s failed: %w".
      return { ok: false, error: `verifying certificate SN=${BigInt(`0x${peer.serialNumber}`)} failed: ${String(socket.authorizationError)}` };
    }
    const usages = (peer as { ext_key_usage?: string[] }).ext_key_usage;
    if (usages !== undefined && !usages.includes(CLIENT_AUTH_OID) && !usages.includes(ANY_EXTENDED_KEY_USAGE_OID)) {
      return { ok: false, error: 'verifying certificate failed: x509: certificate specifies an incompatible key usage' };
    }
    const name = first(peer.subject?.CN);
    if (name === undefined || name === '') return { ok: false, error: 'common name of the certificate is empty' };
    return { ok: true, user: { name, groups: all(peer.subject?.O) } };
  }
}

const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
const all = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? [...value] : [value]);

/** Settings of the webhook token authenticator (KubeletAuthentication.Webhook). */
export interface TokenReviewOptions {
  /** authentication.webhook.cacheTTL, default 2 minutes. */
  readonly cacheTtlMs?: number;
  readonly now?: () => number;
}

const DEFAULT_TOKEN_CACHE_TTL_MS = 2 * 60_000;
const TOKEN_CACHE_ENTRIES = 4096;

/**
 * A bearer token (`Authorization: Bearer <token>`, pkg/authentication/request/bearertoken)
 * reviewed by the API server. Authenticated and refused answers are both cached for the TTL
 * (cache.New(tokenAuth, false, ttl, ttl)); failures to ask are not.
 */
export class TokenReviewAuthenticator implements RequestAuthenticator {
  private readonly cache: ReviewCache<Authentication>;
  private readonly ttlMs: number;

  constructor(private readonly api: AuthenticationV1Api, options: TokenReviewOptions = {}) {
    this.ttlMs = options.cacheTtlMs ?? DEFAULT_TOKEN_CACHE_TTL_MS;
    this.cache = new ReviewCache(TOKEN_CACHE_ENTRIES, options.now);
  }

  async authenticate(req: IncomingMessage): Promise<Authentication> {
    const header = req.headers.authorization;
    if (header === undefined) return { ok: false };
    const parts = header.trim().split(' ');
    if (parts.length < 2 || parts[0]!.toLowerCase() !== 'bearer') return { ok: false };
    const token = parts[1]!;
    // bearertoken.invalidToken: an empty token is an error, not an absence.
    if (token === '') return { ok: false, error: 'invalid bearer token' };
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const answer = await this.review(token);
    if (answer !== undefined) this.cache.set(key, answer, this.ttlMs);
    return answer ?? { ok: false, error: 'token review failed' };
  }

  /** undefined when the API server could not be asked. */
  private async review(token: string): Promise<Authentication | undefined> {
    let review;
    try {
      review = await this.api.createTokenReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      });
    } catch {
      return undefined;
    }
    const status = review.status;
    if (status?.authenticated !== true || status.user === undefined) {
      // bearertoken.New: a token nobody recognises is an invalid token (an error), so anonymous
      // access does not cover it.
      return { ok: false, error: status?.error ? status.error : 'invalid bearer token' };
    }
    const u = status.user;
    return {
      ok: true,
      user: {
        name: u.username ?? '',
        ...(u.uid ? { uid: u.uid } : {}),
        groups: u.groups ?? [],
        ...(u.extra ? { extra: u.extra } : {}),
      },
    };
  }
}

/** unionauth + AuthenticatedGroupAdder, then anonymous with FailOnError when enabled. */
export class KubeletAuthenticator implements RequestAuthenticator {
  constructor(private readonly methods: readonly RequestAuthenticator[], private readonly anonymousAuth: boolean) {}

  async authenticate(req: IncomingMessage): Promise<Authentication> {
    const errors: string[] = [];
    for (const method of this.methods) {
      const result = await method.authenticate(req);
      if (result.ok) return { ok: true, user: withAuthenticatedGroup(result.user) };
      if (result.error !== undefined) errors.push(result.error);
    }
    if (errors.length > 0) return { ok: false, error: errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]` };
    if (this.anonymousAuth) return { ok: true, user: { name: Anonymous, groups: [AllUnauthenticated] } };
    return { ok: false };
  }
}

function withAuthenticatedGroup(user: UserInfo): UserInfo {
  if (user.groups.includes(AllAuthenticated) || user.groups.includes(AllUnauthenticated)) return user;
  return { ...user, groups: [...user.groups, AllAuthenticated] };
}
