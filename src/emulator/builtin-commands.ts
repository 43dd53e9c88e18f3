import type { CommandRegistry } from './command-registry.js';
import { containerPath, writeRefused } from './container-files.js';
import { shellCommand } from './shell/index.js';
import { registerWindowsShells } from './windows-shells.js';
import { registerAgnhost } from './e2e-images/agnhost.js';
import { registerNetworkClients } from './network-clients.js';
import { cat, chmod, ls } from './file-commands.js';
import { brctl, ping } from './network-commands.js';
import { pause, pgrep, ps, sleep, top, windowsTimeout } from './process-commands.js';
import { httpd, nginx, serviceMonitor, type ImageFileLookup } from './server-commands.js';
import { echo, findstr, grep, printenv, printf, seq, tail, test } from './text-commands.js';
import { hostname, id, whoami } from './user-commands.js';

const noImageFile: ImageFileLookup = () => undefined;

/**
 * The programs a simulated container can run: shell utilities, the long-running servers of the
 * usual images, and the critest helpers. Identity commands for the Windows path are registered
 * by their own module and replace the plain `whoami`/`hostname` here. `imageFile` finds a file
 * of the container's image (the runtime passes its catalogue's); without it images have none.
 */
export function registerBuiltinCommands(target: CommandRegistry, imageFile: ImageFileLookup = noImageFile): void {
  // Defaults only: a command some module registered already (identity commands) is kept.
  const registry = { register: target.registerDefault.bind(target) };
  const shell = shellCommand(target);
  for (const name of ['sh', 'bash', 'ash', 'dash']) registry.register(name, shell, { cpuLoad: 0.0005 });
  registerWindowsShells(target);
  registerAgnhost(target);
  registerNetworkClients(target);

  registry.register('echo', echo, { shellBuiltin: true });
  registry.register('printf', printf, { shellBuiltin: true });
  registry.register('true', () => 0, { shellBuiltin: true });
  registry.register('false', () => 1, { shellBuiltin: true });
  registry.register('test', (ctx) => test(ctx, ctx.argv.slice(1)), { shellBuiltin: true });
  registry.register('[', (ctx) => {
    const args = ctx.argv.slice(1);
    if (args[args.length - 1] !== ']') {
      ctx.stderr('[: missing ]\n');
      return 2;
    }
    return test(ctx, args.slice(0, -1));
  }, { shellBuiltin: true });

  registry.register('sleep', sleep);
  registry.register('top', top, { traps: ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'], cpuLoad: 0.002 });
  registry.register('pause', pause, { traps: ['SIGTERM', 'SIGINT'], cpuLoad: 0.00001 });
  for (const name of ['httpd', 'httpd-foreground']) {
    registry.register(name, httpd, { traps: ['SIGTERM', 'SIGINT', 'SIGWINCH', 'SIGHUP', 'SIGUSR1'], cpuLoad: 0.003 });
  }
  registry.register('nginx', (ctx) => nginx(ctx, imageFile), {
    traps: ['SIGTERM', 'SIGINT', 'SIGQUIT', 'SIGHUP'],
    cpuLoad: 0.002,
    processTitle: (argv) => `nginx: master process ${argv.join(' ')}`,
  });
  registry.register('ServiceMonitor', serviceMonitor, { traps: ['SIGTERM', 'SIGINT'], cpuLoad: 0.004 });
  registry.register('ping', ping);
  registry.register('tail', tail);
  registry.register('pgrep', pgrep);
  registry.register('ps', ps);
  registry.register('cat', cat);
  registry.register('ls', ls);
  registry.register('id', id);
  registry.register('whoami', whoami);
  registry.register('hostname', hostname);
  registry.register('chmod', chmod);
  registry.register('brctl', brctl);
  for (const name of ['env', 'printenv']) registry.register(name, printenv);
  registry.register('date', (ctx) => {
    ctx.stdout(`${new Date().toUTCString()}\n`);
    return 0;
  });
  registry.register('seq', seq);
  registry.register('grep', grep);
  registry.register('findstr', findstr);
  registry.register('touch', (ctx) => {
    let status = 0;
    for (const f of ctx.argv.slice(1).filter((a) => !a.startsWith('-'))) {
      const path = containerPath(ctx.target, f);
      if (writeRefused(ctx.target, path)) {
        ctx.stderr(`touch: ${f}: Read-only file system\n`);
        status = 1;
      } else if (!ctx.target.files.has(path)) {
        ctx.target.files.set(path, '');
      }
    }
    return status;
  });
  registry.register('uname', (ctx) => {
    ctx.stdout(ctx.argv.includes('-a') ? `Linux ${ctx.target.hostname} 6.1.0 #1 SMP x86_64 GNU/Linux\n` : 'Linux\n');
    return 0;
  });
  registry.register('nnp', (ctx) => {
    const user = ctx.target.ociSpec.process.user;
    ctx.stdout(`Effective uid: ${user.uid ?? 0}\n`);
    return 0;
  });
  registry.register('timeout', windowsTimeout);
}
