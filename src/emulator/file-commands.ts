import { readdir, readFile } from 'node:fs/promises';
import type { CommandContext } from './command-registry.js';
import { containerPath, mountFor, writeRefused } from './container-files.js';
import { capabilityMask, syscallAllowed } from './container-security.js';

/**
 * Commands that read and change the container's files: cat, ls and chmod, and the reading of a
 * file as a process sees it (/proc of its PID namespace, the container's own files, host files
 * behind bind mounts) that grep shares.
 */

/** Maps a container path onto a host path through the container's bind mounts, if one covers it. */
function hostPathOf(ctx: CommandContext, path: string): string | undefined {
  return mountFor(ctx.target, path)?.hostPath;
}

/**
 * A file as a process in the container reads it: /proc entries of its PID namespace, the
 * container's own files, and host files behind bind mounts.
 */
export async function readContainerFile(ctx: CommandContext, f: string): Promise<string | undefined> {
  const path = containerPath(ctx.target, f);
  const proc = /^\/proc\/(\d+|self)\/(cmdline|status)$/.exec(path);
  if (proc !== null) {
    const pid = proc[1] === 'self' ? ctx.pid : Number(proc[1]);
    const entry = ctx.target.processes.get(pid);
    if (entry === undefined) return undefined;
    if (proc[2] === 'cmdline') return entry.title ?? `${entry.argv.join('\0')}\0`;
    const user = ctx.target.ociSpec.process.user;
    const seccomp = ctx.target.ociSpec.linux?.seccomp === undefined ? 0 : 2;
    const caps = ctx.target.ociSpec.process.capabilities;
    return `Name:\t${entry.comm}\nState:\tS (sleeping)\nPid:\t${pid}\nUid:\t${user.uid ?? 0}\t${user.uid ?? 0}\t${user.uid ?? 0}\t${user.uid ?? 0}\n` +
      `Gid:\t${user.gid ?? 0}\t${user.gid ?? 0}\t${user.gid ?? 0}\t${user.gid ?? 0}\nNoNewPrivs:\t${ctx.target.ociSpec.process.noNewPrivileges ? 1 : 0}\n` +
      `CapInh:\t${capabilityMask([])}\nCapPrm:\t${capabilityMask(caps?.permitted)}\nCapEff:\t${capabilityMask(caps?.effective)}\n` +
      `CapBnd:\t${capabilityMask(caps?.bounding)}\nCapAmb:\t${capabilityMask([])}\nSeccomp:\t${seccomp}\n`;
  }
  const local = ctx.target.files.get(path);
  if (local !== undefined) return local;
  const host = hostPathOf(ctx, f);
  if (host === undefined) return undefined;
  try {
    return await readFile(host, 'utf8');
  } catch {
    return undefined;
  }
}

export async function cat(ctx: CommandContext): Promise<number> {
  const files = ctx.argv.slice(1).filter((a) => !a.startsWith('-') || a === '-');
  if (files.length === 0) {
    ctx.stdout(ctx.stdin);
    return 0;
  }
  let status = 0;
  for (const f of files) {
    if (f === '-') {
      ctx.stdout(ctx.stdin);
      continue;
    }
    const content = await readContainerFile(ctx, f);
    if (content === undefined) {
      ctx.stderr(`cat: can't open '${f}': No such file or directory\n`);
      status = 1;
    } else {
      ctx.stdout(content);
    }
  }
  return status;
}

const ROOT_ENTRIES = ['bin', 'dev', 'etc', 'home', 'proc', 'root', 'sys', 'tmp', 'usr', 'var'];

export async function ls(ctx: CommandContext): Promise<number> {
  const args = ctx.argv.slice(1);
  const all = args.some((a) => /^-[a-zA-Z]*[aA]/.test(a));
  const paths = args.filter((a) => !a.startsWith('-'));
  if (paths.length === 0) paths.push(ctx.target.ociSpec.process.cwd || '/');
  let status = 0;
  for (const path of paths) {
    const host = hostPathOf(ctx, path);
    let names: string[] | undefined;
    if (host !== undefined) {
      try {
        names = (await readdir(host)).sort();
      } catch {
        names = undefined;
      }
    } else if (containerPath(ctx.target, path) === '/') {
      names = ROOT_ENTRIES;
    } else {
      const full = containerPath(ctx.target, path);
      const prefix = full.endsWith('/') ? full : `${full}/`;
      const inDir = [...ctx.target.files.keys()].filter((f) => f.startsWith(prefix)).map((f) => f.slice(prefix.length).split('/')[0] as string);
      if (inDir.length > 0) names = [...new Set(inDir)].sort();
      else if (ctx.target.files.has(full)) names = [path];
    }
    if (names === undefined) {
      ctx.stderr(`ls: ${path}: No such file or directory\n`);
      status = 1;
      continue;
    }
    const shown = names.filter((n) => all || !n.startsWith('.'));
    if (shown.length > 0) ctx.stdout(`${shown.join('\n')}\n`);
  }
  return status;
}

/** chmod is refused by a seccomp filter that blocks chmod/fchmodat, and on a read-only root. */
export function chmod(ctx: CommandContext): number {
  const [, mode, ...paths] = ctx.argv;
  if (mode === undefined || paths.length === 0) {
    ctx.stderr('chmod: missing operand\n');
    return 1;
  }
  let status = 0;
  for (const p of paths) {
    if (!syscallAllowed(ctx.target.ociSpec, 'fchmodat') || !syscallAllowed(ctx.target.ociSpec, 'chmod')) {
      ctx.stderr(`chmod: ${p}: Operation not permitted\n`);
      status = 1;
    } else if (writeRefused(ctx.target, p)) {
      ctx.stderr(`chmod: ${p}: Read-only file system\n`);
      status = 1;
    }
  }
  return status;
}
