import { RuntimeError } from '../errors.js';
import type { RegistryCredentials } from './images-file.js';

/** PullImageRequest.auth (runtime.v1.AuthConfig) as the pull sees it. */
export interface PullAuth {
  username: string;
  password: string;
  auth: string;
  server_address: string;
  identity_token: string;
  registry_token: string;
}

/**
 * The username and secret containerd sends for `host` (containerd 2.x internal/cri/server/images
 * image_pull.go ParseAuth): nothing when server_address names another host; username/password;
 * else identity_token as the secret; else `auth` decoded as `user:password`.
 */
export function credentialsFor(auth: PullAuth | null, host: string): { username: string; secret: string } | undefined {
  if (auth === null) return undefined;
  if (auth.server_address !== '') {
    let named: string;
    try {
      named = new URL(auth.server_address).host;
    } catch {
      // ParseAuth's url.Parse accepts a bare host as a path: its Host is then empty.
      named = '';
    }
    if (named !== host) return undefined;
  }
  if (auth.username !== '') return { username: auth.username, secret: auth.password };
  if (auth.identity_token !== '') return { username: '', secret: auth.identity_token };
  if (auth.auth !== '') {
    const decoded = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new RuntimeError('Unknown', 'invalid decoded auth: the auth field is not base64 of user:password');
    return { username: decoded.slice(0, colon), secret: decoded.slice(colon + 1).replace(/\0+$/, '') };
  }
  return undefined;
}

/** What the registry accepts: a username with its password, or an identity token. */
function accepted(registry: RegistryCredentials): { username: string; secret: string }[] {
  const out: { username: string; secret: string }[] = [];
  if (registry.username !== undefined && registry.password !== undefined) out.push({ username: registry.username, secret: registry.password });
  if (registry.auth !== undefined) {
    const decoded = Buffer.from(registry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) out.push({ username: decoded.slice(0, colon), secret: decoded.slice(colon + 1) });
  }
  if (registry.identityToken !== undefined) out.push({ username: '', secret: registry.identityToken });
  return out;
}

/**
 * A pull from a registry that refuses anonymous pulls, as containerd 2.x's docker resolver meets
 * the registry's 401 (core/remotes/docker/authorizer.go): without credentials the anonymous token
 * fetch (GET on the token realm) is refused — `failed to fetch anonymous token: unexpected status
 * from GET request to <realm>?scope=repository%3A<repo>%3Apull&service=<host>: 401 Unauthorized`;
 * with wrong ones the OAuth POST is refused, containerd falls back to GET with basic auth, and that
 * 401 comes back as it is. Both are wrapped by the resolver (`failed to authorize: `,
 * `failed to resolve reference %q: `) and PullImage (`failed to pull and unpack image %q: `);
 * the gRPC code is Unknown. The credentials never appear in a message.
 */
export function checkRegistryAuth(registry: RegistryCredentials, repository: string, normalised: string, auth: PullAuth | null): void {
  const given = credentialsFor(auth, registry.host);
  if (given !== undefined && accepted(registry).some((a) => a.username === given.username && a.secret === given.secret)) return;
  const realm = registry.tokenRealm ?? `https://${registry.host}/oauth2/token`;
  const path = repository.slice(repository.indexOf('/') + 1);
  const query = new URLSearchParams({ scope: `repository:${path}:pull`, service: registry.host }).toString();
  const refused = `unexpected status from GET request to ${realm}?${query}: 401 Unauthorized`;
  const why = given === undefined ? `failed to fetch anonymous token: ${refused}` : refused;
  throw new RuntimeError('Unknown', `failed to pull and unpack image "${normalised}": failed to resolve reference "${normalised}": failed to authorize: ${why}`);
}
