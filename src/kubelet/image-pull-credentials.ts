/**
 * Registry credentials from a pod's imagePullSecrets, as the kubelet finds them
 * (pkg/credentialprovider: secrets.MakeDockerKeyring, keyring.go BasicDockerKeyring, config.go
 * DockerConfigEntry; kubernetes v1.34): Secrets of type kubernetes.io/dockerconfigjson
 * (`.dockerconfigjson`, `{"auths": {…}}`) and kubernetes.io/dockercfg (`.dockercfg`, the map
 * itself); each entry keyed by registry host and optional path, `auth` (base64 `user:password`)
 * overriding username and password. A lookup matches the image's repository against every key —
 * the host by parts with `*` globs, the port exactly, the key's path as a prefix — most specific
 * key first, and falls back to Docker Hub's entry for Docker Hub images. Each match is one
 * PullImage attempt with that `auth` (username and password only, as the kubelet sends them).
 *
 * Credentials never leave this module except as PullImage's auth: nothing here logs.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { goJsonParse } from '../apiserver/go-json-errors.js';

/** runtimeapi.AuthConfig as the kubelet fills it from a keyring entry. */
export interface PullAuth {
  readonly username: string;
  readonly password: string;
}

interface KeyringEntry {
  readonly key: string;
  readonly auths: PullAuth[];
}

/** The credentials of a pod's pull secrets, by registry key, most specific key first. */
export class DockerKeyring {
  private constructor(private readonly entries: readonly KeyringEntry[]) {}

  static empty(): DockerKeyring {
    return new DockerKeyring([]);
  }

  /** MakeDockerKeyring: throws Go's JSON error for a secret whose config is not valid JSON. */
  static fromSecrets(secrets: readonly V1Secret[]): DockerKeyring {
    const byKey = new Map<string, PullAuth[]>();
    for (const secret of secrets) {
      for (const [location, entry] of Object.entries(dockerConfigOf(secret))) {
        const key = keyringKey(location);
        if (key === undefined) continue;
        byKey.set(key, [...(byKey.get(key) ?? []), entry]);
      }
    }
    // The index is reverse-sorted so more specific paths match first (quay.io/coreos before quay.io).
    const keys = [...byKey.keys()].sort().reverse();
    return new DockerKeyring(keys.map((key) => ({ key, auths: byKey.get(key)! })));
  }

  /** Lookup: every matching entry's credentials, in index order; none for an anonymous pull. */
  lookup(image: string): PullAuth[] {
    const repository = imageRepository(image);
    const found = this.entries.filter((e) => urlsMatch(e.key, repository)).flatMap((e) => e.auths);
    if (found.length > 0) return found;
    if (isDefaultRegistryMatch(repository)) return this.entries.find((e) => e.key === 'index.docker.io')?.auths ?? [];
    return [];
  }
}

const decodeBase64 = (value: string): string => Buffer.from(value, 'base64').toString('utf8');

/** DockerConfigEntry's UnmarshalJSON: `auth` decodes to user:password and wins over the fields. */
function entryOf(raw: unknown): PullAuth {
  const entry = (typeof raw === 'object' && raw !== null ? raw : {}) as { username?: unknown; password?: unknown; auth?: unknown };
  let username = typeof entry.username === 'string' ? entry.username : '';
  let password = typeof entry.password === 'string' ? entry.password : '';
  if (typeof entry.auth === 'string' && entry.auth !== '') {
    const decoded = decodeBase64(entry.auth);
    const colon = decoded.indexOf(':');
    if (colon === -1) throw new Error('Unable to parse auth field, must be formatted as base64(username:password)');
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
  }
  return { username, password };
}

/** The registry entries a pull secret holds (none for another type or an empty key). */
function dockerConfigOf(secret: V1Secret): Record<string, PullAuth> {
  const data = secret.data ?? {};
  let config: unknown;
  if (secret.type === 'kubernetes.io/dockerconfigjson' && (data['.dockerconfigjson'] ?? '') !== '') {
    config = (goJsonParse(decodeBase64(data['.dockerconfigjson']!)) as { auths?: unknown } | null)?.auths;
  } else if (secret.type === 'kubernetes.io/dockercfg' && (data['.dockercfg'] ?? '') !== '') {
    config = goJsonParse(decodeBase64(data['.dockercfg']!));
  }
  if (typeof config !== 'object' || config === null) return {};
  return Object.fromEntries(Object.entries(config).map(([location, raw]) => [location, entryOf(raw)]));
}

/** BasicDockerKeyring.Add: scheme dropped, /v1/ and /v2/ path prefixes dropped, host[/path]. */
function keyringKey(location: string): string | undefined {
  let url: URL;
  try {
    url = new URL(/^https?:\/\//.test(location) ? location : `https://${location}`);
  } catch {
    return undefined;
  }
  let path = url.pathname;
  if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
  return path.length > 0 && path !== '/' ? `${url.host}${path}` : url.host;
}

/**
 * parsers.ParseImageName's repository: tag and digest dropped, Docker Hub names completed
 * (`busybox` → docker.io/library/busybox), index.docker.io spelled docker.io.
 */
export function imageRepository(image: string): string {
  let name = image.split('@')[0]!;
  const lastSlash = name.lastIndexOf('/');
  const colon = name.indexOf(':', lastSlash + 1);
  if (colon !== -1) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  const first = slash === -1 ? '' : name.slice(0, slash);
  if (slash === -1) return `docker.io/library/${name}`;
  if (first === 'index.docker.io') name = `docker.io${name.slice(slash)}`;
  else if (!/[.:]/.test(first) && first !== 'localhost') return `docker.io/${name}`;
  return name;
}

/** isDefaultRegistryMatch: a repository Docker Hub serves. */
function isDefaultRegistryMatch(repository: string): boolean {
  const [first, rest] = [repository.split('/')[0]!, repository.includes('/')];
  if (first === '') return false;
  if (!rest) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first);
}

/** SplitURL of a schemeless URL: host parts, port, path. */
function splitSchemeless(value: string): { parts: string[]; port: string; path: string } | undefined {
  let url: URL;
  try {
    url = new URL(`https://${value}`);
  } catch {
    return undefined;
  }
  // url.host keeps a default port out; compare what was written.
  const authority = value.split('/')[0]!;
  const colon = authority.lastIndexOf(':');
  const port = colon === -1 ? '' : authority.slice(colon + 1);
  const host = colon === -1 ? authority : authority.slice(0, colon);
  return { parts: host.toLowerCase().split('.'), port, path: decodeURIComponent(url.pathname) };
}

/** filepath.Match for one host label: `*` any run of characters, `?` one; no separators in a label. */
function globMatch(pattern: string, text: string): boolean {
  const regex = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return regex.test(text);
}

/** URLsMatch: same port, same number of host parts each matching its glob, the key's path a prefix. */
function urlsMatch(glob: string, target: string): boolean {
  const g = splitSchemeless(glob);
  const t = splitSchemeless(target);
  if (g === undefined || t === undefined) return false;
  if (g.port !== t.port || g.parts.length !== t.parts.length) return false;
  if (!t.path.startsWith(g.path)) return false;
  return g.parts.every((part, i) => globMatch(part, t.parts[i]!));
}

/** The event the kubelet records when some pull secrets cannot be read (kubelet_pods.go getPullSecretsForPod). */
export function missingPullSecretsMessage(names: readonly string[]): string {
  return `Unable to retrieve some image pull secrets (${names.join(', ')}); attempting to pull the image may not succeed.`;
}
