import { untilSignal, type CommandContext, type CommandIo, type WaitForSignal } from './command-registry.js';
import { untilSignalled } from './pod-web-server.js';

/**
 * Commands about processes and time: sleep, pause, top, ps, pgrep and Windows' timeout. Those
 * that wait do it through the process (ctx.sleep, untilSignal), so a signal ends them as it ends
 * the real programs.
 */

/** `sleep 5`, `sleep 0.5`, `sleep 1m`, `sleep 1 2` (sum), `sleep infinity`. */
export async function sleep(ctx: CommandContext): Promise<number | WaitForSignal> {
  const args = ctx.argv.slice(1);
  if (args.length === 0) {
    ctx.stderr('sleep: missing operand\n');
    return 1;
  }
  let total = 0;
  for (const a of args) {
    if (a === 'infinity' || a === 'inf') return untilSignal();
    const m = /^([0-9]*\.?[0-9]+)([smhd]?)$/.exec(a);
    if (m === null) {
      ctx.stderr(`sleep: invalid number '${a}'\n`);
      return 1;
    }
    const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
    total += Number(m[1]) * unit * 1000;
  }
  // Node timers hold at most ~24.8 days; wait in bounded slices beyond that.
  const MAX_SLICE = 2_000_000_000;
  for (let left = total; left > 0; left -= MAX_SLICE) await ctx.sleep(Math.min(left, MAX_SLICE));
  return 0;
}

/** busybox top without a terminal: a process snapshot every 5 seconds until signalled. */
export async function top(ctx: CommandContext): Promise<number> {
  const once = ctx.argv.includes('-n') && ctx.argv[ctx.argv.indexOf('-n') + 1] === '1';
  for (let i = 0; ; i++) {
    const procs = ctx.target.processes.list();
    ctx.stdout(`Mem: 1048576K used, 7340032K free, 0K shrd, 0K buff, 524288K cached\n`);
    ctx.stdout(`CPU:   0% usr   0% sys   0% nic 100% idle   0% io   0% irq   0% sirq\n`);
    ctx.stdout(`Load average: 0.00 0.00 0.00 1/${procs.length} ${procs[procs.length - 1]?.pid ?? 1}\n`);
    ctx.stdout(`  PID  PPID USER     STAT   VSZ %VSZ CPU %CPU COMMAND\n`);
    for (const p of procs) ctx.stdout(`${String(p.pid).padStart(5)}     0 root     R     1300   0%   0   0% ${p.argv.join(' ')}\n`);
    if (once) return 0;
    await ctx.sleep(5000);
  }
}

export function pause(): WaitForSignal {
  return untilSignal(pauseShutdown);
}

function pauseShutdown(signal: string, io: CommandIo): number {
  io.stderr(`Shutting down, got signal: ${signal === 'SIGINT' ? 'Interrupt' : 'Terminated'}\n`);
  return 0;
}

export function ps(ctx: CommandContext): number {
  const user = ctx.target.user;
  ctx.stdout('PID   USER     TIME  COMMAND\n');
  for (const p of ctx.target.processes.list()) ctx.stdout(`${String(p.pid).padEnd(5)} ${user.padEnd(8)} 0:00 ${p.argv.join(' ')}\n`);
  return 0;
}

export function pgrep(ctx: CommandContext): number {
  const args = ctx.argv.slice(1);
  const full = args.includes('-f');
  const list = args.includes('-l');
  const pattern = args.filter((a) => !a.startsWith('-')).pop();
  if (pattern === undefined) {
    ctx.stderr('pgrep: no matching criteria specified\n');
    return 2;
  }
  let re: RegExp;
  try {
    re = new RegExp(pattern);
  } catch {
    ctx.stderr(`pgrep: invalid regular expression: ${pattern}\n`);
    return 2;
  }
  const hits = ctx.target.processes.list().filter((p) => p.pid !== ctx.pid && re.test(full ? p.argv.join(' ') : p.comm));
  for (const p of hits) ctx.stdout(list ? `${p.pid} ${p.comm}\n` : `${p.pid}\n`);
  return hits.length > 0 ? 0 : 1;
}

/** Windows `timeout /t N [/nobreak]`. */
export async function windowsTimeout(ctx: CommandContext): Promise<number> {
  const i = ctx.argv.findIndex((a) => a.toLowerCase() === '/t');
  const seconds = Number(ctx.argv[i + 1]);
  if (i < 0 || !Number.isFinite(seconds)) {
    ctx.stderr('ERROR: Invalid syntax. Default option is not allowed more than \'1\' time(s).\r\n');
    return 1;
  }
  if (seconds < 0) {
    await untilSignalled(ctx);
    return 0;
  }
  ctx.stdout(`\r\nWaiting for ${seconds} seconds, press a key to continue ...\r\n`);
  await ctx.sleep(seconds * 1000);
  return 0;
}
