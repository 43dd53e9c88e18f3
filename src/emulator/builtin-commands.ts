import { readdir, readFile } from 'node:fs/promises';
import { untilSignal, type CommandContext, type CommandIo, type CommandRegistry, type WaitForSignal } from './command-registry.js';
import { serveInPod, staticPage } from './pod-web-server.js';
import { capabilityMask, hasCapability, syscallAllowed } from './container-security.js';
import { containerPath, mountFor, writeRefused } from './container-files.js';
import { shellCommand } from './shell/index.js';
import { registerWindowsShells } from './windows-shells.js';
import { registerAgnhost } from './e2e-images/agnhost.js';
import { registerNetworkClients } from './network-clients.js';

/**
 * A file of the image a container was created from (`reference` as its
 * `io.kubernetes.cri.image-name`), from the runtime's image catalogue; undefined when the image
 * has no such file. nginx reads its site configuration there when the container has none.
 */
export type ImageFileLookup = (reference: string, path: string) => string | undefined;

const noImageFile: ImageFileLookup = () => undefined;

/**
 * The programs a simulated container can run: shell utilities, the long-running servers of the
 * usual images, and the critest helpers. Identity commands for the Windows path are registered
 * by their own module and replace the plain `whoami`/`hostname` here.
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

const eol = (ctx: CommandContext): string => (ctx.target.os === 'windows' ? '\r\n' : '\n');

/** Waits until the process is signalled (a server's main loop). */
function untilSignalled(ctx: CommandContext): Promise<string> {
  return new Promise((resolve) => {
    if (ctx.signal.aborted) resolve(String(ctx.signal.reason));
    else ctx.signal.addEventListener('abort', () => resolve(String(ctx.signal.reason)), { once: true });
  });
}

function echo(ctx: CommandContext): number {
  let args = ctx.argv.slice(1);
  let newline = true;
  let escapes = false;
  while (args[0] !== undefined && /^-[neE]+$/.test(args[0])) {
    const flags = args[0];
    if (flags.includes('n')) newline = false;
    if (flags.includes('e')) escapes = true;
    if (flags.includes('E')) escapes = false;
    args = args.slice(1);
  }
  let text = args.join(' ');
  if (escapes) {
    const cut = text.indexOf('\\c');
    if (cut >= 0) {
      text = text.slice(0, cut);
      newline = false;
    }
    text = unescape(text);
  }
  ctx.stdout(newline ? `${text}\n` : text);
  return 0;
}

function unescape(text: string): string {
  return text.replace(/\\([nt\\rae0]|x[0-9a-fA-F]{1,2})/g, (_, c: string) => {
    switch (c[0]) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'a': return '\x07';
      case 'e': return '\x1b';
      case '0': return '\0';
      case 'x': return String.fromCharCode(parseInt(c.slice(1), 16));
      default: return '\\';
    }
  });
}

function printf(ctx: CommandContext): number {
  const [format, ...args] = ctx.argv.slice(1);
  if (format === undefined) {
    ctx.stderr('printf: usage: printf FORMAT [ARGUMENT]...\n');
    return 2;
  }
  let i = 0;
  let out = '';
  // The format is reused while arguments remain, as POSIX printf does; bounded by the argument count.
  do {
    out += unescape(format).replace(/%([sdi%])/g, (_, spec: string) => {
      if (spec === '%') return '%';
      const arg = args[i++] ?? '';
      return spec === 's' ? arg : String(Math.trunc(Number(arg) || 0));
    });
  } while (i < args.length && /%[sdi]/.test(format));
  ctx.stdout(out);
  return 0;
}

function test(ctx: CommandContext, args: string[]): number {
  const fileExists = (p: string): boolean => {
    const path = containerPath(ctx.target, p);
    return ctx.target.files.has(path) || ['/', '/tmp', '/etc', '/bin', '/usr', '/var', '/proc', '/dev'].includes(path);
  };
  const evaluate = (a: string[]): boolean => {
    if (a[0] === '!') return !evaluate(a.slice(1));
    if (a.length === 0) return false;
    if (a.length === 1) return (a[0] as string) !== '';
    if (a.length === 2) {
      const [op, v = ''] = a;
      switch (op) {
        case '-n': return v !== '';
        case '-z': return v === '';
        case '-e':
        case '-f':
        case '-d':
        case '-r':
          return fileExists(v);
        default:
          throw new Error(`${op}: unary operator expected`);
      }
    }
    const [l = '', op, r = ''] = a;
    const num = (s: string): number => {
      if (!/^-?[0-9]+$/.test(s.trim())) throw new Error(`${s}: integer expression expected`);
      return Number(s);
    };
    switch (op) {
      case '=':
      case '==': return l === r;
      case '!=': return l !== r;
      case '-eq': return num(l) === num(r);
      case '-ne': return num(l) !== num(r);
      case '-lt': return num(l) < num(r);
      case '-le': return num(l) <= num(r);
      case '-gt': return num(l) > num(r);
      case '-ge': return num(l) >= num(r);
      default: throw new Error(`${op ?? ''}: binary operator expected`);
    }
  };
  try {
    return evaluate(args) ? 0 : 1;
  } catch (err) {
    ctx.stderr(`test: ${(err as Error).message}\n`);
    return 2;
  }
}

/** `sleep 5`, `sleep 0.5`, `sleep 1m`, `sleep 1 2` (sum), `sleep infinity`. */
async function sleep(ctx: CommandContext): Promise<number | WaitForSignal> {
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
async function top(ctx: CommandContext): Promise<number> {
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

function pause(): WaitForSignal {
  return untilSignal(pauseShutdown);
}

function pauseShutdown(signal: string, io: CommandIo): number {
  io.stderr(`Shutting down, got signal: ${signal === 'SIGINT' ? 'Interrupt' : 'Terminated'}\n`);
  return 0;
}

/** errno numbers and texts of Linux, as servers print them. */
function errnoOf(err: NodeJS.ErrnoException): { n: number; text: string } {
  if (err.code === 'EADDRINUSE') return { n: 98, text: 'Address already in use' };
  if (err.code === 'EACCES') return { n: 13, text: 'Permission denied' };
  return { n: 99, text: 'Cannot assign requested address' };
}

const HTTPD_PAGE = '<html><body><h1>It works!</h1></body></html>\n';

/** Apache httpd in the foreground: serves its default page on podIP:80 until a signal. */
async function httpd(ctx: CommandContext): Promise<number> {
  const ip = String(ctx.target.platform['podIp'] ?? '127.0.0.1');
  const stamp = (): string => new Date().toUTCString().replace(',', '');
  const name = "AH00558: httpd: Could not reliably determine the server's fully qualified domain name, using " +
    `${ip}. Set the 'ServerName' directive globally to suppress this message\n`;
  ctx.stderr(name);
  const outcome = await serveInPod(ctx, 80, staticPage('Apache/2.4.39 (Unix)', 'text/html', { '/': () => HTTPD_PAGE, '/index.html': () => HTTPD_PAGE }), () => {
    ctx.stderr(name);
    ctx.stderr(`[${stamp()}] [mpm_event:notice] [pid ${ctx.pid}:tid 140000000000000] AH00489: Apache/2.4.39 (Unix) configured -- resuming normal operations\n`);
    ctx.stderr(`[${stamp()}] [core:notice] [pid ${ctx.pid}:tid 140000000000000] AH00094: Command line: 'httpd -D FOREGROUND'\n`);
  });
  if (typeof outcome !== 'string') {
    const { n, text } = errnoOf(outcome);
    ctx.stderr(`(${n})${text}: AH00072: make_sock: could not bind to address ${ip}:80\nno listening sockets available, shutting down\nAH00015: Unable to open logs\n`);
    return 1;
  }
  const graceful = outcome === 'SIGWINCH';
  ctx.stderr(`[${stamp()}] [mpm_event:notice] [pid ${ctx.pid}:tid 140000000000000] AH00492: caught ${outcome}, shutting down${graceful ? ' gracefully' : ''}\n`);
  return 0;
}

const NGINX_PAGE = '<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n</head>\n<body>\n<h1>Welcome to nginx!</h1>\n' +
  '<p>If you see this page, the nginx web server is successfully installed and working.</p>\n</body>\n</html>\n';

const NGINX_SITE_CONF = '/etc/nginx/conf.d/default.conf';

/**
 * The port of nginx's server: the `listen` of the site configuration (the container's, else its
 * image's), 80 as in the stock images.
 */
function nginxListenPort(ctx: CommandContext, imageFile: ImageFileLookup): number {
  const conf = ctx.target.files.get(NGINX_SITE_CONF) ?? imageFile(ctx.target.ociSpec.annotations['io.kubernetes.cri.image-name'] ?? '', NGINX_SITE_CONF);
  // The first `listen [address:]port …;` outside comments.
  const port = Number(/(?:^|[\s{;])listen\s+(?:[^\s;]+:)?(\d{1,5})\b[^;]*;/.exec((conf ?? '').replace(/#.*$/gm, ''))?.[1] ?? 80);
  return port >= 1 && port <= 65535 ? port : 80;
}

/** nginx in the foreground: serves its welcome page on podIP:<listen port> until a signal. */
async function nginx(ctx: CommandContext, imageFile: ImageFileLookup): Promise<number> {
  const version = ctx.env.get('NGINX_VERSION') ?? '1.14.2';
  if (ctx.argv.includes('-v')) {
    ctx.stderr(`nginx version: nginx/${version}\n`);
    return 0;
  }
  const port = nginxListenPort(ctx, imageFile);
  const outcome = await serveInPod(ctx, port, staticPage(`nginx/${version}`, 'text/html', { '/': () => NGINX_PAGE, '/index.html': () => NGINX_PAGE }));
  if (typeof outcome !== 'string') {
    const { n, text } = errnoOf(outcome);
    ctx.stderr(`nginx: [emerg] bind() to ${String(ctx.target.platform['podIp'] ?? '')}:${port} failed (${n}: ${text})\n`);
    return 1;
  }
  return 0;
}

const IIS_PAGE = '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\r\n' +
  '<html xmlns="http://www.w3.org/1999/xhtml">\r\n<head>\r\n<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1" />\r\n' +
  '<title>IIS Windows Server</title>\r\n</head>\r\n<body>\r\n<div id="container"><a href="http://go.microsoft.com/fwlink/?linkid=66138&amp;clcid=0x409">IIS</a></div>\r\n</body>\r\n</html>';

/** What a Windows container's identity says, read from the record (see windows/identity-command-registration.ts). */
interface IdentityView {
  userName: string;
  userDomain: string;
  networkIdentity?: string;
}

/**
 * The identity page of the simulated IIS (our own page, not IIS's): the account requests run
 * under (the container's runAsUserName) and the one they use on the network (with a gMSA, the
 * domain account, `DEMO\WebApplication1$`; without, the computer's own).
 */
function iisIdentityPage(ctx: CommandContext): string {
  const identity = ctx.target.platform['windowsIdentity'] as IdentityView | undefined;
  const user = identity === undefined ? ctx.target.user : `${identity.userDomain}\\${identity.userName}`;
  const network = identity?.networkIdentity ?? `WORKGROUP\\${ctx.target.hostname.toUpperCase().slice(0, 15)}$`;
  return `User: ${user}\r\nNetwork identity: ${network}\r\n`;
}

/** IIS's ServiceMonitor.exe: starts the watched service (w3svc serves on podIP:80) and runs until the container stops. */
async function serviceMonitor(ctx: CommandContext): Promise<number> {
  const service = ctx.argv[1];
  if (service === undefined) {
    ctx.stderr('ERROR: Service name not specified.\r\n');
    return 1;
  }
  ctx.stdout(`\r\n Service '${service}' has been stopped\r\n\r\n`);
  if (service.toLowerCase() !== 'w3svc') {
    ctx.stdout(` Service '${service}' started\r\n`);
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    return 0;
  }
  const page = staticPage('Microsoft-IIS/10.0', 'text/html', { '/': () => IIS_PAGE, '/iisstart.htm': () => IIS_PAGE });
  const outcome = await serveInPod(ctx, 80, (req, res) => {
    if ((req.url ?? '').split('?')[0] === '/identity') {
      const body = iisIdentityPage(ctx);
      res.writeHead(200, { Server: 'Microsoft-IIS/10.0', 'Content-Type': 'text/plain' }).end(body);
      return;
    }
    page(req, res);
  }, () => ctx.stdout(` Service '${service}' started\r\n`));
  if (typeof outcome !== 'string') {
    ctx.stderr(`ERROR: Failed to start or query status of service '${service}' error [80070420]\r\n`);
    return 1;
  }
  return 0;
}

/** Windows-style `ping [-t] [-n N] host` (replies every second) or Linux `ping -c N host`. */
async function ping(ctx: CommandContext): Promise<number> {
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

async function tail(ctx: CommandContext): Promise<number> {
  if (ctx.argv.includes('-f') || ctx.argv.includes('-F')) {
    await untilSignalled(ctx);
    return 0;
  }
  const n = ctx.argv.includes('-n') ? Number(ctx.argv[ctx.argv.indexOf('-n') + 1]) : 10;
  const lines = ctx.stdin.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const out = lines.slice(-n);
  if (out.length > 0) ctx.stdout(`${out.join('\n')}\n`);
  return 0;
}

function pgrep(ctx: CommandContext): number {
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

function ps(ctx: CommandContext): number {
  const user = ctx.target.user;
  ctx.stdout('PID   USER     TIME  COMMAND\n');
  for (const p of ctx.target.processes.list()) ctx.stdout(`${String(p.pid).padEnd(5)} ${user.padEnd(8)} 0:00 ${p.argv.join(' ')}\n`);
  return 0;
}

/** Maps a container path onto a host path through the container's bind mounts, if one covers it. */
function hostPathOf(ctx: CommandContext, path: string): string | undefined {
  return mountFor(ctx.target, path)?.hostPath;
}

/**
 * A file as a process in the container reads it: /proc entries of its PID namespace, the
 * container's own files, and host files behind bind mounts.
 */
async function readContainerFile(ctx: CommandContext, f: string): Promise<string | undefined> {
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

async function cat(ctx: CommandContext): Promise<number> {
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

async function ls(ctx: CommandContext): Promise<number> {
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

/** The users every base image knows (what /etc/passwd would resolve). */
const PASSWD: Record<string, number> = { root: 0, daemon: 1, bin: 2, sys: 3, 'www-data': 33, nobody: 65534 };

/** `hostname` prints the name; `hostname NAME` needs sethostname: CAP_SYS_ADMIN and a seccomp filter that allows it. */
function hostname(ctx: CommandContext): number {
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

/** `brctl addbr|delbr NAME` changes bridges, which needs CAP_NET_ADMIN. */
function brctl(ctx: CommandContext): number {
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

/** chmod is refused by a seccomp filter that blocks chmod/fchmodat, and on a read-only root. */
function chmod(ctx: CommandContext): number {
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

function id(ctx: CommandContext): number {
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

function whoami(ctx: CommandContext): number {
  if (ctx.target.os === 'windows') ctx.stdout(`user manager\\${ctx.target.user.toLowerCase()}\r\n`);
  else ctx.stdout(`${ctx.target.user}\n`);
  return 0;
}

function printenv(ctx: CommandContext): number {
  const names = ctx.argv.slice(1);
  if (names.length > 0) {
    let status = 0;
    for (const n of names) {
      const v = ctx.env.get(n);
      if (v === undefined) status = 1;
      else ctx.stdout(`${v}\n`);
    }
    return status;
  }
  for (const [k, v] of ctx.env) ctx.stdout(`${k}=${v}\n`);
  return 0;
}

function seq(ctx: CommandContext): number {
  const nums = ctx.argv.slice(1).map(Number);
  const [first, inc, last] = nums.length === 1 ? [1, 1, nums[0]] : nums.length === 2 ? [nums[0], 1, nums[1]] : nums;
  if ([first, inc, last].some((n) => n === undefined || !Number.isFinite(n)) || inc === 0) {
    ctx.stderr('seq: invalid argument\n');
    return 1;
  }
  const out: string[] = [];
  for (let n = first as number; (inc as number) > 0 ? n <= (last as number) : n >= (last as number); n += inc as number) {
    out.push(String(n));
    if (out.length > 1_000_000) break;
  }
  if (out.length > 0) ctx.stdout(`${out.join('\n')}\n`);
  return 0;
}

function filterLines(ctx: CommandContext, test: (line: string) => boolean, quiet: boolean): number {
  const lines = ctx.stdin.split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  const hits = lines.filter(test);
  if (!quiet) for (const l of hits) ctx.stdout(`${l}${eol(ctx)}`);
  return hits.length > 0 ? 0 : 1;
}

async function grep(ctx: CommandContext): Promise<number> {
  const args = ctx.argv.slice(1);
  const flags = args.filter((a) => a.startsWith('-')).join('');
  const [pattern, ...files] = args.filter((a) => !a.startsWith('-'));
  if (pattern === undefined) {
    ctx.stderr('grep: no pattern\n');
    return 2;
  }
  const re = new RegExp(flags.includes('F') ? pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : pattern, flags.includes('i') ? 'i' : '');
  const invert = flags.includes('v');
  let input = ctx.stdin;
  if (files.length > 0) {
    input = '';
    for (const f of files) {
      const content = await readContainerFile(ctx, f);
      if (content === undefined) {
        ctx.stderr(`grep: ${f}: No such file or directory\n`);
        return 2;
      }
      input += content;
    }
  }
  return filterLines({ ...ctx, stdin: input }, (l) => re.test(l) !== invert, flags.includes('q'));
}

function findstr(ctx: CommandContext): number {
  const args = ctx.argv.slice(1);
  const insensitive = args.some((a) => a.toLowerCase() === '/i');
  const words = args.filter((a) => !a.startsWith('/')).flatMap((a) => a.split(' ')).filter((w) => w !== '');
  if (words.length === 0) {
    ctx.stderr('FINDSTR: Bad command line\r\n');
    return 2;
  }
  const norm = (s: string): string => (insensitive ? s.toLowerCase() : s);
  return filterLines(ctx, (l) => words.some((w) => norm(l).includes(norm(w))), false);
}

/** Windows `timeout /t N [/nobreak]`. */
async function windowsTimeout(ctx: CommandContext): Promise<number> {
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
