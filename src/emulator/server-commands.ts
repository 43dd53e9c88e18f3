import type { CommandContext } from './command-registry.js';
import { serveInPod, staticPage } from './pod-web-server.js';
import { identityOf } from './windows-identity.js';

/**
 * The long-running servers of the usual images: Apache httpd, nginx and IIS's ServiceMonitor
 * (w3svc). Each serves its stock page on the pod's IP until a signal stops it, and says what the
 * real server says when it cannot bind.
 */

/**
 * A file of the image a container was created from (`reference` as its
 * `io.kubernetes.cri.image-name`), from the runtime's image catalogue; undefined when the image
 * has no such file. nginx reads its site configuration there when the container has none.
 */
export type ImageFileLookup = (reference: string, path: string) => string | undefined;

/** errno numbers and texts of Linux, as servers print them. */
function errnoOf(err: NodeJS.ErrnoException): { n: number; text: string } {
  if (err.code === 'EADDRINUSE') return { n: 98, text: 'Address already in use' };
  if (err.code === 'EACCES') return { n: 13, text: 'Permission denied' };
  return { n: 99, text: 'Cannot assign requested address' };
}

const HTTPD_PAGE = '<html><body><h1>It works!</h1></body></html>\n';

/** Apache httpd in the foreground: serves its default page on podIP:80 until a signal. */
export async function httpd(ctx: CommandContext): Promise<number> {
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
export async function nginx(ctx: CommandContext, imageFile: ImageFileLookup): Promise<number> {
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
  const identity: IdentityView | undefined = identityOf(ctx);
  const user = identity === undefined ? ctx.target.user : `${identity.userDomain}\\${identity.userName}`;
  const network = identity?.networkIdentity ?? `WORKGROUP\\${ctx.target.hostname.toUpperCase().slice(0, 15)}$`;
  return `User: ${user}\r\nNetwork identity: ${network}\r\n`;
}

/** IIS's ServiceMonitor.exe: starts the watched service (w3svc serves on podIP:80) and runs until the container stops. */
export async function serviceMonitor(ctx: CommandContext): Promise<number> {
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
