/**
 * The kubelet's authentication and authorization of every request (cmd/kubelet/app/auth.go
 * BuildAuthn/BuildAuthz and server.go InstallAuthFilter, v1.34), with the kubelet's answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import { ClientCertificateAuthenticator, KubeletAuthenticator, TokenReviewAuthenticator, type RequestAuthenticator } from './authentication.js';
import { AlwaysAllowAuthorizer, requestAttributes, SubjectAccessReviewAuthorizer, type Authorizer } from './authorization.js';
import { text } from './http-replies.js';

export interface AuthOptions {
  /** --client-ca-file was given: client certificates signed by it authenticate. */
  readonly clientCertificates: boolean;
  readonly anonymousAuth: boolean;
  readonly authorizationMode: 'Webhook' | 'AlwaysAllow';
  readonly kubeConfig?: KubeConfig;
  readonly tokenReviewCacheTtlMs?: number;
  readonly authorizedCacheTtlMs?: number;
  readonly unauthorizedCacheTtlMs?: number;
}

export class AuthFilter {
  private readonly authenticator: KubeletAuthenticator;
  private readonly authorizer: Authorizer;

  /**
   * Throws the kubelet's start-up error when the options cannot authenticate or authorize (what
   * the constructor throws, without making the API clients: a server makes its filter on its
   * first connection).
   */
  static check(options: AuthOptions): void {
    if (!options.clientCertificates && options.kubeConfig === undefined && !options.anonymousAuth) throw new Error('no authentication method configured');
    if (options.authorizationMode === 'Webhook' && options.kubeConfig === undefined) throw new Error('no client provided, cannot use webhook authorization');
    if (options.authorizationMode !== 'Webhook' && options.authorizationMode !== 'AlwaysAllow') throw new Error(`unknown authorization mode ${String(options.authorizationMode)}`);
  }

  /** Throws the kubelet's start-up error when the options cannot authenticate or authorize. */
  constructor(options: AuthOptions, private readonly nodeName: string, private readonly log: Logger) {
    AuthFilter.check(options);
    const authenticators: RequestAuthenticator[] = [];
    if (options.clientCertificates) authenticators.push(new ClientCertificateAuthenticator());
    if (options.kubeConfig !== undefined) {
      authenticators.push(new TokenReviewAuthenticator(options.kubeConfig.makeApiClient(AuthenticationV1Api), { ...(options.tokenReviewCacheTtlMs !== undefined ? { cacheTtlMs: options.tokenReviewCacheTtlMs } : {}) }));
    }
    if (authenticators.length === 0 && !options.anonymousAuth) throw new Error('no authentication method configured');
    this.authenticator = new KubeletAuthenticator(authenticators, options.anonymousAuth);
    if (options.authorizationMode === 'AlwaysAllow') {
      this.authorizer = new AlwaysAllowAuthorizer();
    } else if (options.authorizationMode === 'Webhook') {
      if (options.kubeConfig === undefined) throw new Error('no client provided, cannot use webhook authorization');
      this.authorizer = new SubjectAccessReviewAuthorizer(options.kubeConfig.makeApiClient(AuthorizationV1Api), {
        ...(options.authorizedCacheTtlMs !== undefined ? { cacheAuthorizedTtlMs: options.authorizedCacheTtlMs } : {}),
        ...(options.unauthorizedCacheTtlMs !== undefined ? { cacheUnauthorizedTtlMs: options.unauthorizedCacheTtlMs } : {}),
      });
    } else {
      throw new Error(`unknown authorization mode ${String(options.authorizationMode)}`);
    }
  }

  /**
   * InstallAuthFilter: authenticate, then authorize every attribute set until one is allowed.
   * True when the request may go on; otherwise the 401/403/500 answer has been written.
   */
  async admit(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<boolean> {
    const authn = await this.authenticator.authenticate(req);
    if (!authn.ok) {
      if (authn.error !== undefined) this.log.info({ reason: authn.error, path: pathname }, 'Unable to authenticate the request due to an error');
      text(res, 401, 'Unauthorized');
      return false;
    }
    const attributes = requestAttributes(authn.user, req.method, pathname, this.nodeName);
    for (const a of attributes) {
      let decision;
      try {
        decision = await this.authorizer.authorize(a);
      } catch (err) {
        this.log.error({ err, user: a.user.name, verb: a.verb, resource: a.resource, subresource: a.subresource }, 'Authorization error');
        text(res, 500, `Authorization error (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource=${a.subresource})`);
        return false;
      }
      if (decision === 'allow') return true;
    }
    const a = attributes[0]!;
    this.log.debug({ user: a.user.name, verb: a.verb, resource: a.resource, subresources: attributes.map((x) => x.subresource) }, 'Forbidden');
    // Go's %v of a []string: [a b].
    text(res, 403, `Forbidden (user=${a.user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=[${attributes.map((x) => x.subresource).join(' ')}])\n`);
    return false;
  }
}
