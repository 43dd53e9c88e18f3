import type { CommandContext } from './command-registry.js';
import { hasCapability } from './container-security.js';

/**
 * ping (as Windows and busybox print it; on Linux a raw socket, which needs CAP_NET_RAW) and
 * brctl (bridges, which need CAP_NET_ADMIN). curl and nc are in network-clients.ts.
 */

/** Windows-style `ping [-t] [-n N] host` (replies every second) or Linux `ping -c N host`. */
export async function ping(ctx: CommandContext): Promise<number> {
  const args = ctx.argv.slice(1);
  const forever = args.includes('-t') || args.includes('/t');
  const countFlag = args.findIndex((a) => a === '-n' || a === '-c' || a === '/n');
  const count = forever ? Infinity : countFlag >= 0 ? Number(args[countFlag + 1] ?? '4') : ctx.target.os === 'windows' ? 4 : Infinity;
  const host = args.filter((a, i) => !a.startsWith('-') && !a.startsWith('/') && !(countFlag >= 0 && i === countFlag + 1)).pop();
  if (host === undefined) {
    ctx.stderr('ping: usage error: Destination address required\n');
    return 1;
  }
  const windows = ctx.target.os === 'windows' || forever;
  const address = host === 'localhost' ? (windows ? '::1' : '127.0.0.1') : host;
  if (windows) ctx.stdout(`\r\nPinging ${host} [${address}] with 32 bytes of data:\r\n`);
  else ctx.stdout(`PING ${host} (${address}): 56 data bytes\n`);
  // Linux ping opens a raw socket: without CAP_NET_RAW busybox gives up (critest drops NET_RAW).
  if (!windows && ctx.target.ociSpec.process.capabilities !== undefined && !hasCapability(ctx.target.ociSpec, 'NET_RAW')) {
    ctx.stderr('ping: permission denied (are you root?)\n');
    return 1;
  }
  for (let seq = 0; seq < count; seq++) {
    if (seq > 0) await ctx.sleep(1000);
    if (windows) ctx.stdout(`Reply from ${address}: time<1ms \r\n`);
    else ctx.stdout(`64 bytes from ${address}: seq=${seq} ttl=64 time=0.050 ms\n`);
  }
  return 0;
}

/** `brctl addbr|delbr NAME` changes bridges, which needs CAP_NET_ADMIN. */
export function brctl(ctx: CommandContext): number {
  const [, verb, name] = ctx.argv;
  if ((verb !== 'addbr' && verb !== 'delbr') || name === undefined) {
    ctx.stderr('Usage: brctl COMMAND [BRIDGE] [ARGS]\n');
    return 1;
  }
  if (!hasCapability(ctx.target.ociSpec, 'NET_ADMIN')) {
    ctx.stderr(`brctl: bridge ${name}: Operation not permitted\n`);
    return 1;
  }
  return 0;
}
