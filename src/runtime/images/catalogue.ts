import { createHash } from 'node:crypto';
import { E2E_IMAGES, E2E_WINDOWS_BUILDS, WINDOWS_FAMILIES, type CatalogueEntry } from './catalogue-families.js';
import type { ImageConfig } from './image-config.js';
import { formatReference, parseImageReference } from './reference.js';
import { LTSC_BUILDS } from './windows-compat.js';

/** One platform of a manifest list (OCI image index `manifests[].platform`). */
export interface ImagePlatform {
  os: 'linux' | 'windows';
  architecture: 'amd64' | 'arm64';
  /** Windows: the build the image was made for. */
  osVersion?: string;
}

/** One platform's image of a manifest list: its config and size. */
export interface PlatformManifest {
  platform: ImagePlatform;
  /** Image id: the digest of this platform's config. */
  id: string;
  size: number;
  config: ImageConfig;
}

/**
 * What a registry serves for a reference: a manifest list (an OCI index) of platform manifests,
 * or one manifest (`list: false`, what `docker build` and `docker push` of one platform give).
 */
export interface ManifestIndex {
  repository: string;
  tags: string[];
  /** The digest of the index (or of the single manifest): the repo digest clients pin. */
  digest: string;
  list: boolean;
  manifests: PlatformManifest[];
}

/** One image as a pull stores it: the platform manifest the pull chose, under its index's digest. */
export interface RegistryImage {
  /** Normalised repository, e.g. `mcr.microsoft.com/windows/nanoserver`. */
  repository: string;
  tags: string[];
  /** Manifest digest (`sha256:…`): the repo digest clients pin. */
  digest: string;
  /** Image id: the digest of the image config. */
  id: string;
  size: number;
  config: ImageConfig;
}


const LINUX_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const WINDOWS_PATH = 'PATH=C:\\Windows\\system32;C:\\Windows;C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\';
const STAGING = 'gcr.io/k8s-staging-cri-tools';
const E2E = 'registry.k8s.io/e2e-test-images';

const busybox = (): CatalogueEntry['config'] => ({ os: 'linux', cmd: ['sh'] });

/**
 * The images the simulated registry knows: the Windows base images the node exists for, the
 * pause images, and the images critest pulls (cri-tools pkg/validate constants).
 */
const ENTRIES: CatalogueEntry[] = [
  ...WINDOWS_FAMILIES,
  // Linux pause and everyday images.
  { repository: 'registry.k8s.io/pause', tags: ['3.9', '3.10', '3.10.1'], size: 320_368,
    config: { os: 'linux', user: '65535:65535', entrypoint: ['/pause'] },
    windows: { builds: E2E_WINDOWS_BUILDS, config: { user: 'ContainerUser', entrypoint: ['/pause.exe'] } } },
  { repository: 'docker.io/library/busybox', tags: ['latest', '1.36', '1.37'], size: 2_166_802, config: { os: 'linux', cmd: ['sh'] } },
  { repository: 'docker.io/library/nginx', tags: ['latest', '1.27'], size: 72_099_410,
    config: { os: 'linux', cmd: ['nginx', '-g', 'daemon off;'], stopSignal: 'SIGQUIT' } },
  { repository: 'docker.io/library/httpd', tags: ['latest', '2.4'], size: 58_162_300,
    config: { os: 'linux', cmd: ['httpd-foreground'], stopSignal: 'SIGWINCH', workingDir: '/usr/local/apache2' } },
  // critest images (cri-tools pkg/validate/consts.go, pkg/framework).
  { repository: `${E2E}/busybox`, tags: ['1.29-2', '1.29-4'], size: 1_361_700, config: busybox() },
  { repository: `${E2E}/nginx`, tags: ['1.14-2', '1.15-4'], size: 6_914_060,
    config: { os: 'linux', cmd: ['nginx', '-g', 'daemon off;'] } },
  { repository: `${E2E}/httpd`, tags: ['2.4.39-4', '2.4.38-4'], size: 45_102_140,
    config: { os: 'linux', cmd: ['httpd-foreground'], workingDir: '/usr/local/apache2' },
    windows: { builds: E2E_WINDOWS_BUILDS, config: { user: 'ContainerAdministrator', cmd: ['httpd.exe'], workingDir: 'C:\\Apache24' } } },
  { repository: `${E2E}/nonewprivs`, tags: ['1.3'], size: 3_289_644, config: { os: 'linux', entrypoint: ['/usr/local/bin/nnp'] } },
  { repository: `${STAGING}/test-image-latest`, tags: ['latest'], size: 1_362_000, config: busybox() },
  { repository: `${STAGING}/test-image-tag`, tags: ['test'], size: 1_362_100, config: busybox() },
  { repository: `${STAGING}/test-image-tag`, tags: ['all'], size: 1_362_200, config: busybox() },
  { repository: `${STAGING}/test-image-digest`, tags: [],
    digest: 'sha256:9700f9a2f5bf2c45f2f605a0bd3bce7cf37420ec9d3ed50ac2758413308766bf', size: 1_362_300, config: busybox() },
  { repository: `${STAGING}/test-image-1`, tags: ['latest'], size: 1_362_401, config: busybox() },
  { repository: `${STAGING}/test-image-2`, tags: ['latest'], size: 1_362_402, config: busybox() },
  { repository: `${STAGING}/test-image-3`, tags: ['latest'], size: 1_362_403, config: busybox() },
  { repository: `${STAGING}/test-image-tags`, tags: ['1', '2', '3'], size: 1_362_500, config: busybox() },
  { repository: `${STAGING}/test-image-user-uid`, tags: ['latest'], size: 1_362_601, config: { os: 'linux', cmd: ['sh'], user: '1002' } },
  { repository: `${STAGING}/test-image-user-username`, tags: ['latest'], size: 1_362_602, config: { os: 'linux', cmd: ['sh'], user: 'www-data' } },
  { repository: `${STAGING}/test-image-user-uid-group`, tags: ['latest'], size: 1_362_603, config: { os: 'linux', cmd: ['sh'], user: '1003:1003' } },
  { repository: `${STAGING}/test-image-user-username-group`, tags: ['latest'], size: 1_362_604,
    config: { os: 'linux', cmd: ['sh'], user: 'www-data:www-data' } },
  // critest's hostnet-nginx (cri-tools images/hostnet-nginx): nginx 1.25.0 whose server listens
  // on 12003, so that it can run in the node's network (pkg/validate/streaming_linux.go).
  ...['amd64', 'arm64'].map((arch): CatalogueEntry => ({ repository: `${STAGING}/hostnet-nginx-${arch}`, tags: ['latest'], size: 70_567_890,
    config: { os: 'linux', cmd: ['nginx', '-g', 'daemon off;'], stopSignal: 'SIGQUIT', env: [LINUX_PATH, 'NGINX_VERSION=1.25.0'] },
    files: { '/etc/nginx/conf.d/default.conf': 'server {\n    listen       12003;\n    server_name  localhost;\n\n    location / {\n        root   /usr/share/nginx/html;\n        index  index.html index.htm;\n    }\n}\n' } })),
  { repository: `${STAGING}/test-image-predefined-group`, tags: ['latest'], size: 1_362_605, config: { os: 'linux', cmd: ['sh'], user: '1000' } },
  // The upstream e2e images at the tags kubernetes' e2e suite uses.
  ...E2E_IMAGES,
];

export const sha256 = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/** The `os.version` of a Windows LTSC build (`10.0.20348.2849`). */
export function ltscOsVersion(build: number): string {
  return LTSC_BUILDS.find((b) => b.build === build)?.osVersion ?? `10.0.${build}.1`;
}

/** A platform's config with the defaults of its OS filled in. */
export function completeConfig(partial: Partial<ImageConfig> & Pick<ImageConfig, 'os'>): ImageConfig {
  const windows = partial.os === 'windows';
  const config: ImageConfig = {
    os: partial.os,
    user: partial.user ?? '',
    entrypoint: partial.entrypoint ?? [],
    cmd: partial.cmd ?? [],
    env: partial.env ?? [windows ? WINDOWS_PATH : LINUX_PATH],
    workingDir: partial.workingDir ?? (windows ? 'C:\\' : '/'),
  };
  // Only the fields an image has: a Linux catalogue image's config (and so its id) is what it was
  // before these fields existed.
  if (partial.stopSignal !== undefined) config.stopSignal = partial.stopSignal;
  if (partial.exposedPorts !== undefined) config.exposedPorts = [...partial.exposedPorts];
  if (partial.program !== undefined) config.program = partial.program;
  if (partial.osVersion !== undefined) config.osVersion = partial.osVersion;
  if (partial.labels !== undefined) config.labels = { ...partial.labels };
  return config;
}

/** A platform manifest: the id is the digest of the config (the repository and size go in, so distinct images never share one by accident). */
export function platformManifest(repository: string, platform: ImagePlatform, size: number, config: ImageConfig): PlatformManifest {
  return { platform, id: sha256(JSON.stringify({ repository, size, config })), size, config };
}

/** The digest of a list: of its repository, tags and manifests' ids. */
export function indexDigest(repository: string, manifests: readonly PlatformManifest[]): string {
  if (manifests.length === 1) return sha256(`manifest:${manifests[0]!.id}`);
  return sha256(`index:${repository}:${manifests.map((m) => m.id).join(',')}`);
}

function toManifestIndex(entry: CatalogueEntry): ManifestIndex {
  const manifests: PlatformManifest[] = [];
  if (entry.config.os === 'linux') {
    manifests.push(platformManifest(entry.repository, { os: 'linux', architecture: 'amd64' }, entry.size, completeConfig(entry.config)));
  }
  for (const build of entry.windows?.builds ?? []) {
    const osVersion = ltscOsVersion(build);
    const config = completeConfig({ ...entry.config, ...entry.windows?.config, os: 'windows', osVersion, ...(entry.config.os === 'linux' ? { env: undefined, workingDir: entry.windows?.config?.workingDir } : {}) });
    manifests.push(platformManifest(entry.repository, { os: 'windows', architecture: 'amd64', osVersion }, entry.size, config));
  }
  // A Linux image of one platform keeps the digest it had as a single manifest (critest pins
  // test-image-digest's); a list with Windows entries gets an index digest.
  const digest = entry.digest ?? indexDigest(entry.repository, manifests);
  return { repository: entry.repository, tags: entry.tags, digest, list: true, manifests };
}

/** The built-in catalogue: manifest lists by normalised reference (`name:tag`, `name@digest`). */
export class SimulatedRegistry {
  private readonly byRef = new Map<string, ManifestIndex>();
  private readonly repositories = new Set<string>();

  constructor(entries: readonly CatalogueEntry[] = ENTRIES) {
    for (const entry of entries) this.add(toManifestIndex(entry));
  }

  /** Whether the registry serves any tag of `repository` (normalised name). */
  hasRepository(repository: string): boolean {
    return this.repositories.has(repository);
  }

  /** Serves `index` under its tags and digest (a later one replaces an earlier one). */
  add(index: ManifestIndex): void {
    this.repositories.add(index.repository);
    for (const tag of index.tags) this.byRef.set(`${index.repository}:${tag}`, index);
    this.byRef.set(`${index.repository}@${index.digest}`, index);
  }

  /** The list a reference (`name:tag` or `name@digest`, normalised or not) points to, if any. */
  resolve(reference: string): ManifestIndex | undefined {
    const ref = parseImageReference(reference);
    return this.byRef.get(formatReference(ref));
  }

  /** Every `name:tag` the registry serves (for docs and the demo). */
  references(): string[] {
    return [...this.byRef.keys()].filter((k) => !k.includes('@'));
  }
}

/**
 * A file of a catalogue image (`reference` as a container's `io.kubernetes.cri.image-name`), for
 * the simulated programs that read their image's configuration.
 */
export function imageFile(reference: string, path: string, entries: readonly CatalogueEntry[] = ENTRIES): string | undefined {
  if (reference === '') return undefined;
  let wanted: string;
  try {
    wanted = formatReference(parseImageReference(reference));
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (entry.files?.[path] === undefined) continue;
    if (entry.tags.some((tag) => `${entry.repository}:${tag}` === wanted) || (entry.digest !== undefined && `${entry.repository}@${entry.digest}` === wanted)) {
      return entry.files[path];
    }
  }
  return undefined;
}

export type { CatalogueEntry, ImageConfig };
