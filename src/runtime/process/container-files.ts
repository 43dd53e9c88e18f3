import { posix } from 'node:path';
import type { ExecutionTarget } from './command-registry.js';

/**
 * Paths inside a container: relative paths start at the process's working directory; a path
 * under a bind mount maps to the host; a write elsewhere fails when the root is read-only.
 */
export function containerPath(target: ExecutionTarget, path: string): string {
  if (target.os === 'windows') return path;
  return posix.resolve(target.ociSpec.process.cwd || '/', path);
}

/** The bind mount covering a container path, with the host path it maps to. */
export function mountFor(target: ExecutionTarget, path: string): { hostPath: string; readonly: boolean } | undefined {
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
export function writeRefused(target: ExecutionTarget, path: string): boolean {
  const normal = containerPath(target, path);
  if (normal.startsWith('/dev/') || normal.startsWith('/proc/')) return false;
  const mount = mountFor(target, normal);
  if (mount !== undefined) return mount.readonly;
  return target.ociSpec.root.readonly === true;
}
