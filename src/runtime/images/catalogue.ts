import { createHash } from 'node:crypto';
import type { ImageProgram } from './image-program.js';
import { formatReference, parseImageReference } from './reference.js';

/** What an image's config says about how to run it (the OCI image config fields the CRI uses). */
export interface ImageConfig {
  os: 'linux' | 'windows';
  /** The image's USER: a name, a uid, `uid:gid` or `name:group`; '' means root. */
  user: string;
  entrypoint: string[];
  cmd: string[];
  env: string[];
  workingDir: string;
  stopSignal?: string;
  /** The config's `ExposedPorts` (TCP port numbers): where the image's program answers. */
  exposedPorts?: number[];
  /**
   * The image's own program, run when the container's command is none the emulator knows: present
   * for images from the user's images file and for references nobody described.
   */
  program?: ImageProgram;
}

/** One image as the simulated registry serves it. */
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

interface CatalogueEntry {
  repository: string;
  tags: string[];
  digest?: string;
  size: number;
  config: Partial<ImageConfig> & Pick<ImageConfig, 'os'>;
  /** Files of the image that its simulated programs read (an nginx configuration). */
  files?: Readonly<Record<string, string>>;
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
  // Windows base images with their default users (nanoserver runs as ContainerUser,
  // servercore as ContainerAdministrator).
  { repository: 'mcr.microsoft.com/windows/nanoserver', tags: ['ltsc2019', '1809'], size: 104_857_600,
    config: { os: 'windows', user: 'ContainerUser', cmd: ['c:\\windows\\system32\\cmd.exe'], workingDir: 'C:\\' } },
  { repository: 'mcr.microsoft.com/windows/nanoserver', tags: ['ltsc2022'], size: 121_634_816,
    config: { os: 'windows', user: 'ContainerUser', cmd: ['c:\\windows\\system32\\cmd.exe'], workingDir: 'C:\\' } },
  { repository: 'mcr.microsoft.com/windows/servercore', tags: ['ltsc2019', '1809'], size: 2_714_763_264,
    config: { os: 'windows', user: 'ContainerAdministrator', cmd: ['c:\\windows\\system32\\cmd.exe'], workingDir: 'C:\\' } },
  { repository: 'mcr.microsoft.com/windows/servercore', tags: ['ltsc2022'], size: 2_362_232_012,
    config: { os: 'windows', user: 'ContainerAdministrator', cmd: ['c:\\windows\\system32\\cmd.exe'], workingDir: 'C:\\' } },
  { repository: 'mcr.microsoft.com/windows/servercore/iis', tags: ['windowsservercore-ltsc2019'], size: 2_952_790_016,
    config: { os: 'windows', user: 'ContainerAdministrator', entrypoint: ['C:\\ServiceMonitor.exe', 'w3svc'], workingDir: 'C:\\' } },
  { repository: 'mcr.microsoft.com/windows/servercore/iis', tags: ['windowsservercore-ltsc2022', 'latest'], size: 2_523_922_432,
    config: { os: 'windows', user: 'ContainerAdministrator', entrypoint: ['C:\\ServiceMonitor.exe', 'w3svc'], workingDir: 'C:\\' } },
  { repository: 'mcr.microsoft.com/oss/kubernetes/pause', tags: ['3.9', '3.10'], size: 126_877_696,
    config: { os: 'windows', user: 'ContainerUser', entrypoint: ['/pause.exe'] } },
  // Linux pause and everyday images.
  { repository: 'registry.k8s.io/pause', tags: ['3.9', '3.10', '3.10.1'], size: 320_368,
    config: { os: 'linux', user: '65535:65535', entrypoint: ['/pause'] } },
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
    config: { os: 'linux', cmd: ['httpd-foreground'], workingDir: '/usr/local/apache2' } },
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
];

const sha256 = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

function toRegistryImage(entry: CatalogueEntry): RegistryImage {
  const config: ImageConfig = {
    os: entry.config.os,
    user: entry.config.user ?? '',
    entrypoint: entry.config.entrypoint ?? [],
    cmd: entry.config.cmd ?? [],
    env: entry.config.env ?? [entry.config.os === 'windows' ? WINDOWS_PATH : LINUX_PATH],
    workingDir: entry.config.workingDir ?? (entry.config.os === 'windows' ? 'C:\\' : '/'),
  };
  if (entry.config.stopSignal !== undefined) config.stopSignal = entry.config.stopSignal;
  // The id is the digest of the config; the repository and size go in so that distinct
  // catalogue entries never share an id by accident, while tags of one entry always do.
  const id = sha256(JSON.stringify({ repository: entry.repository, size: entry.size, config }));
  const digest = entry.digest ?? sha256(`manifest:${id}`);
  return { repository: entry.repository, tags: entry.tags, digest, id, size: entry.size, config };
}

/** A registry that serves a fixed catalogue of images, resolving tags and digests. */
export class SimulatedRegistry {
  private readonly byRef = new Map<string, RegistryImage>();

  constructor(entries: readonly CatalogueEntry[] = ENTRIES) {
    for (const entry of entries) {
      const image = toRegistryImage(entry);
      for (const tag of image.tags) this.byRef.set(`${image.repository}:${tag}`, image);
      this.byRef.set(`${image.repository}@${image.digest}`, image);
    }
  }

  /** The image a normalised reference (`name:tag` or `name@digest`) points to, if any. */
  resolve(reference: string): RegistryImage | undefined {
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

export type { CatalogueEntry };
