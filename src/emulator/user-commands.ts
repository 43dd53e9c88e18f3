import type { CommandContext } from './command-registry.js';
import { hasCapability, syscallAllowed } from './container-security.js';
import { eol } from './text-commands.js';

/**
 * Who and where the process is: id (through the users every base image knows), whoami and
 * hostname, which sets the name only with CAP_SYS_ADMIN and a seccomp filter that allows
 * sethostname. The Windows path replaces whoami and hostname with its identity commands.
 */

/** The users every base image knows (what /etc/passwd would resolve). */
const PASSWD: Record<string, number> = { root: 0, daemon: 1, bin: 2, sys: 3, 'www-data': 33, nobody: 65534 };

export function id(ctx: CommandContext): number {
  const user = ctx.target.ociSpec.process.user;
  const named = ctx.target.user;
  // A user given by name resolves through the image's passwd (uid stays at the base 0 otherwise).
  const byName = user.username !== undefined ? PASSWD[user.username] : undefined;
  const uid = byName ?? user.uid ?? PASSWD[named] ?? (/^[0-9]+$/.test(named) ? Number(named) : 0);
  const gid = byName ?? user.gid ?? uid;
  const groups = [...new Set([gid, ...(user.additionalGids ?? [])])];
  const nameOf = (n: number): string | undefined => Object.entries(PASSWD).find(([, v]) => v === n)?.[0];
  const flags = ctx.argv.slice(1).filter((a) => a.startsWith('-')).join('').replace(/-/g, '');
  const names = flags.includes('n');
  if (flags.includes('u')) ctx.stdout(`${names ? (/^[0-9]+$/.test(named) ? nameOf(uid) ?? named : named) : uid}\n`);
  else if (flags.includes('G')) ctx.stdout(`${groups.map((g) => (names ? nameOf(g) ?? String(g) : String(g))).join(' ')}\n`);
  else if (flags.includes('g')) ctx.stdout(`${names ? nameOf(gid) ?? String(gid) : gid}\n`);
  else {
    const label = (n: number): string => (nameOf(n) === undefined ? '' : `(${nameOf(n)})`);
    ctx.stdout(`uid=${uid}${label(uid)} gid=${gid}${label(gid)} groups=${groups.map((g) => `${g}${label(g)}`).join(',')}\n`);
  }
  return 0;
}

export function whoami(ctx: CommandContext): number {
  if (ctx.target.os === 'windows') ctx.stdout(`user manager\\${ctx.target.user.toLowerCase()}\r\n`);
  else ctx.stdout(`${ctx.target.user}\n`);
  return 0;
}

/** `hostname` prints the name; `hostname NAME` needs sethostname: CAP_SYS_ADMIN and a seccomp filter that allows it. */
export function hostname(ctx: CommandContext): number {
  const name = ctx.argv.slice(1).find((a) => !a.startsWith('-'));
  if (name === undefined || ctx.target.os === 'windows') {
    ctx.stdout(`${ctx.target.hostname}${eol(ctx)}`);
    return 0;
  }
  const spec = ctx.target.ociSpec;
  if (!hasCapability(spec, 'SYS_ADMIN') || !syscallAllowed(spec, 'sethostname')) {
    ctx.stderr('hostname: sethostname: Operation not permitted\n');
    return 1;
  }
  return 0;
}
