import { RuntimeError } from '../errors.js';
import {
  completeConfig,
  indexDigest,
  platformManifest,
  SimulatedRegistry,
  type ImagePlatform,
  type ManifestIndex,
  type PlatformManifest,
  type RegistryImage,
} from './catalogue.js';
import type { DeclaredImage, ImagesSection, RegistryCredentials, UnknownImageRule } from './images-file.js';
import { formatReference, parseImageReference, type ImageReference } from './reference.js';
import { checkRegistryAuth, type PullAuth } from './registry-auth.js';
import { processIsolationCompatible } from './windows-compat.js';

/** What a pull asks for: the platform the node's containerd matches (see `pullPlatform`). */
export interface PullTarget {
  /** A Windows pull: only Windows entries the host may run match; otherwise any entry does. */
  windows: boolean;
  /** The node's build, `10.0.20348` (Windows pulls and the unknown-image rule). */
  hostBuild: string;
}

export interface ImageWorldOptions {
  /** The user's images: the `--images` file and the node file's `images:` section, in that order. */
  sections?: readonly ImagesSection[];
  /** `--unknown-images`; wins over the sections' `unknownImages`. Default windows. */
  unknownImages?: UnknownImageRule | undefined;
  /** The node's build, for the unknown-image rule's Windows images. */
  hostBuild: string;
  catalogue?: SimulatedRegistry;
}

/** A stable number from a text (sizes of images nobody sized). */
function stableNumber(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return h;
}

/** The last path component of a repository, for the default program's name (`webapp`). */
const baseName = (repository: string): string => repository.slice(repository.lastIndexOf('/') + 1);

/**
 * The images a runtime can pull, resolved in layers: the user's images (images file, node file),
 * then the built-in catalogue of real families, then the rule for references nobody described.
 * Immutable once built: a runtime holds one, two runtimes share nothing mutable.
 */
export class ImageWorld {
  private readonly declared = new SimulatedRegistry([]);
  private readonly catalogue: SimulatedRegistry;
  private readonly registries: readonly RegistryCredentials[];
  readonly unknownImages: UnknownImageRule;
  readonly hostBuild: string;

  constructor(options: ImageWorldOptions) {
    this.catalogue = options.catalogue ?? new SimulatedRegistry();
    this.hostBuild = options.hostBuild;
    const sections = options.sections ?? [];
    // The first section that says wins (the --images file before the node file).
    this.unknownImages = options.unknownImages ?? sections.find((s) => s.unknownImages !== undefined)?.unknownImages ?? 'windows';
    this.registries = sections.flatMap((s) => s.registries ?? []);
    // Later sections first, so the --images file's entries replace the node file's.
    for (const section of [...sections].reverse()) {
      for (const image of section.images ?? []) this.declared.add(this.declaredIndex(image));
    }
  }

  private declaredIndex(image: DeclaredImage): ManifestIndex {
    const ref = parseImageReference(image.reference);
    const repository = ref.name;
    const platforms: ImagePlatform[] = (image.platforms ?? [{ os: 'windows' }]).map((p) => ({
      os: p.os,
      architecture: p.architecture ?? 'amd64',
      ...(p.os === 'windows' ? { osVersion: p.osVersion ?? `${this.hostBuild}.1` } : {}),
    }));
    const size = image.size ?? 50_000_000 + (stableNumber(image.reference) % 400_000_000);
    const manifests = platforms.map((platform) => platformManifest(repository, platform, size, completeConfig({
      os: platform.os,
      ...(image.user === undefined ? { user: platform.os === 'windows' ? 'ContainerUser' : '' } : { user: image.user }),
      entrypoint: image.entrypoint ?? (image.cmd === undefined ? [defaultProgramPath(platform.os, repository)] : []),
      ...(image.cmd === undefined ? {} : { cmd: image.cmd }),
      ...(image.env === undefined ? {} : { env: image.env }),
      ...(image.workingDir === undefined ? {} : { workingDir: image.workingDir }),
      exposedPorts: image.exposedPorts ?? [],
      program: image.program ?? {},
      ...(platform.osVersion === undefined ? {} : { osVersion: platform.osVersion }),
      ...(image.labels === undefined ? {} : { labels: image.labels }),
    })));
    const tags = [...(ref.tag === undefined ? [] : [ref.tag]), ...(image.tags ?? [])];
    const digest = ref.digest ?? indexDigest(repository, manifests);
    // One platform: one manifest, as `docker push` of a single-platform build gives.
    return { repository, tags, digest, list: manifests.length > 1, manifests };
  }

  /** The rule's image for a reference nobody described (undefined: not-found). */
  private unknownIndex(ref: ImageReference): ManifestIndex | undefined {
    if (this.unknownImages === 'not-found') return undefined;
    const os = this.unknownImages;
    const platform: ImagePlatform = os === 'windows' ? { os, architecture: 'amd64', osVersion: `${this.hostBuild}.1` } : { os, architecture: 'amd64' };
    const size = 50_000_000 + (stableNumber(ref.name) % 400_000_000);
    const config = completeConfig({
      os,
      user: os === 'windows' ? 'ContainerUser' : '',
      entrypoint: [defaultProgramPath(os, ref.name)],
      exposedPorts: [],
      program: {},
      ...(platform.osVersion === undefined ? {} : { osVersion: platform.osVersion }),
    });
    // Stable per reference: the manifest of `name:tag` (or the digest asked for) and its content.
    const manifest: PlatformManifest = platformManifest(`${ref.name}:${ref.tag ?? ''}`, platform, size, config);
    const digest = ref.digest ?? indexDigest(ref.name, [manifest]);
    return { repository: ref.name, tags: ref.tag === undefined ? [] : [ref.tag], digest, list: false, manifests: [manifest] };
  }

  /** The index a reference names, from the first layer that knows it; undefined: not found. */
  lookup(reference: string): { index: ManifestIndex; layer: 'images file' | 'catalogue' | 'unknown-image rule' } | undefined {
    const ref = parseImageReference(reference);
    const normalised = formatReference(ref);
    const declared = this.declared.resolve(normalised);
    if (declared !== undefined) return { index: declared, layer: 'images file' };
    const known = this.catalogue.resolve(normalised);
    if (known !== undefined) return { index: known, layer: 'catalogue' };
    // A repository someone described serves its tags only: another tag is not found, as its
    // registry would answer (the rule is for repositories nobody described).
    if (this.declared.hasRepository(ref.name) || this.catalogue.hasRepository(ref.name)) return undefined;
    const unknown = this.unknownIndex(ref);
    return unknown === undefined ? undefined : { index: unknown, layer: 'unknown-image rule' };
  }

  /** The bytes a pull of `reference` downloads (the first platform's size), for pull latency. */
  sizeOf(reference: string): number | undefined {
    return this.lookup(reference)?.index.manifests[0]?.size;
  }

  /** Whether `host` (a registry host) needs credentials, and if so whether `auth` carries them. */
  authorize(host: string, repository: string, normalised: string, auth: PullAuth | null): void {
    const registry = this.registries.find((r) => r.host === host);
    if (registry !== undefined) checkRegistryAuth(registry, repository, normalised, auth);
  }

  /**
   * The platform manifest a pull takes from `index`, as containerd's platform matcher picks it
   * (windows-compat.ts): a Windows pull takes a Windows entry the host may run, the highest
   * os.version first, and fails when a list has none; a single manifest is taken as it is
   * (containerd matches the platform of list entries only). Any other pull takes the linux/amd64
   * entry, else the first Windows entry the host may run, else the first.
   */
  select(index: ManifestIndex, target: PullTarget, normalised: string): RegistryImage {
    const chosen = index.list ? pickFromList(index.manifests, target) : index.manifests[0];
    if (chosen === undefined) {
      // containerd core/images/handlers.go LimitManifests, wrapped by the CRI's PullImage.
      throw new RuntimeError('NotFound', `failed to pull and unpack image "${normalised}": no match for platform in manifest: not found`);
    }
    return { repository: index.repository, tags: index.tags, digest: index.digest, id: chosen.id, size: chosen.size, config: chosen.config };
  }
}

function pickFromList(manifests: readonly PlatformManifest[], target: PullTarget): PlatformManifest | undefined {
  const runnable = manifests
    .filter((m) => m.platform.os === 'windows' && m.platform.architecture === 'amd64' && processIsolationCompatible(target.hostBuild, m.platform.osVersion ?? ''))
    .sort((a, b) => (b.platform.osVersion ?? '').localeCompare(a.platform.osVersion ?? '', 'en', { numeric: true }));
  if (target.windows) return runnable[0];
  return manifests.find((m) => m.platform.os === 'linux' && m.platform.architecture === 'amd64') ?? runnable[0] ?? manifests[0];
}

/** The program path of an image nobody gave an entrypoint: one the emulator does not know, so the image's program runs. */
function defaultProgramPath(os: 'linux' | 'windows', repository: string): string {
  const name = baseName(repository);
  return os === 'windows' ? `C:\\app\\${name}.exe` : `/app/${name}`;
}
