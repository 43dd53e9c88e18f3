import { posix } from 'node:path';
import type { OciSpec } from '../runtime/oci/spec.js';

/**
 * What path resolution reads of the container a command runs in (an ExecutionTarget has it): its
 * OS and the OCI spec's working directory, bind mounts and root.
 */
export interface ContainerFilesystem {
  readonly os: 'linux' | 'windows';
  readonly ociSpec: OciSpec;
}

/**
 * Paths inside a container: relative paths start at the process's working directory; a path
 * under a bind mount maps to the host; a write elsewhere fails when the root is read-only.
 */
export function containerPath(target: ContainerFilesystem, path: string): string {
  if (target.os === 'windows') return path;
  return posix.resolve(target.ociSpec.process.cwd || '/', path);
}

/** The bind mount covering a container path, with the host path it maps to. */
export function mountFor(target: ContainerFilesystem, path: string): { hostPath: string; readonly: boolean } | undefined {
  const normal = containerPath(target, path);
  let best: { destination: string; source: string; readonly: boolean } | undefined;
  for (const m of target.ociSpec.mounts) {
    if (m.type !== undefined && m.type !== 'bind') continue;
    const dest = posix.normalize(m.destination);
    if ((normal === dest || normal.startsWith(`${dest}/`)) && (best === undefined || dest.length > best.destination.length)) {
      best = { destination: dest, source: m.source, readonly: (m.options ?? []).includes('ro') };
    }
  }
  if (best === undefined) return undefined;
  return { hostPath: posix.join(best.source, normal.slice(best.destination.length)), readonly: best.readonly };
}

/** Whether writing the path fails with "Read-only file system". */
export function writeRefused(target: ContainerFilesystem, path: string): boolean {
  const normal = containerPath(target, path);
  if (normal.startsWith('/dev/') || normal.startsWith('/proc/')) return false;
  const mount = mountFor(target, normal);
  if (mount !== undefined) return mount.readonly;
  return target.ociSpec.root.readonly === true;
}

/**
 * The files private to a container: what the runtime bind-mounts from the pod (`/etc/hosts`,
 * `/etc/resolv.conf`, …), shared by every container of the pod and built on first use, plus what
 * the container's own processes wrote (created with the first write). A container nobody execs
 * into holds neither.
 */
export class ContainerFiles {
  private base: ReadonlyMap<string, string> | undefined;
  private own: Map<string, string> | undefined;

  private constructor(
    private readonly pod: object,
    private readonly podFiles: (pod: object) => ReadonlyMap<string, string>,
  ) {}

  /** `podFiles(pod)` gives the pod's files: called on first use (module-level, not a closure per container). */
  static forPod<S extends object>(pod: S, podFiles: (pod: S) => ReadonlyMap<string, string>): ContainerFiles {
    return new ContainerFiles(pod, podFiles as (pod: object) => ReadonlyMap<string, string>);
  }

  /** Files of a container of no pod (tests, tools): the given map as the pod's files. */
  static of(files: ReadonlyMap<string, string> = new Map()): ContainerFiles {
    return ContainerFiles.forPod(files, (map) => map);
  }

  get(path: string): string | undefined {
    const written = this.own?.get(path);
    return written !== undefined ? written : this.podMap().get(path);
  }

  has(path: string): boolean {
    return this.own?.has(path) === true || this.podMap().has(path);
  }

  set(path: string, content: string): this {
    (this.own ??= new Map()).set(path, content);
    return this;
  }

  /** Every path, the pod's first. */
  keys(): IterableIterator<string> {
    const own = this.own;
    if (own === undefined) return this.podMap().keys();
    return new Set([...this.podMap().keys(), ...own.keys()]).values();
  }

  private podMap(): ReadonlyMap<string, string> {
    return (this.base ??= this.podFiles(this.pod));
  }
}
