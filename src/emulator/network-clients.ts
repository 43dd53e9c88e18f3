import { request } from 'node:http';
import { connect } from 'node:net';
import type { CommandContext, CommandRegistry } from './command-registry.js';
import { containerPath, writeRefused } from './container-files.js';

/**
 * The network clients test suites run inside containers: `curl` (the Windows e2e tests'
 * `cmd /c curl.exe <address> --connect-timeout 10 --fail`, kubernetes v1.34
 * test/e2e/windows/hybrid_network.go) and OpenBSD `nc` (`nc -vz <address> <port> -w 10`, the
 * same file; both are in the agnhost image). They open real connections, to loopback addresses
 * only: every pod IP and the node's own address are loopback on a simulated node. A name other
 * than `localhost` does not resolve (the simulated node has no cluster DNS in the container).
 */
export function registerNetworkClients(registry: CommandRegistry): void {
  registry.registerDefault('curl', curl, { cpuLoad: 0.005 });
  registry.registerDefault('nc', nc, { cpuLoad: 0.002 });
}

/** Our own text for what a simulated pod cannot reach. */
const OFF_LOOPBACK = 'cri-winsim pods reach loopback addresses only';

type Resolved = { address: string } | { error: 'unresolved' | 'off-loopback' };

function resolveHost(host: string): Resolved {
  if (host === 'localhost') return { address: '127.0.0.1' };
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return { address: host };
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(':')) return { error: 'off-loopback' };
  return { error: 'unresolved' };
}

interface CurlOptions {
  url: string;
  silent: boolean;
  showError: boolean;
  fail: boolean;
  output?: string;
  method?: string;
  headers: Record<string, string>;
  data?: string;
  head: boolean;
  include: boolean;
  connectTimeoutMs?: number;
  maxTimeMs?: number;
}

function parseCurl(args: readonly string[]): CurlOptions | string {
  const o: CurlOptions = { url: '', silent: false, showError: false, fail: false, headers: {}, head: false, include: false };
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const value = (): string => args[++i] ?? '';
    if (a === '--fail' || a === '-f') o.fail = true;
    else if (a === '--silent' || a === '-s') o.silent = true;
    else if (a === '--show-error' || a === '-S') o.showError = true;
    else if (a === '-sS' || a === '-Ss') o.silent = o.showError = true;
    else if (a === '-fsS' || a === '-sSf' || a === '-fs' || a === '-sf') {
      o.fail = true;
      o.silent = true;
      o.showError = a.includes('S');
    } else if (a === '-o' || a === '--output') o.output = value();
    else if (a === '-X' || a === '--request') o.method = value();
    else if (a === '-H' || a === '--header') {
      const [name = '', ...rest] = value().split(':');
      o.headers[name.trim()] = rest.join(':').trim();
    } else if (a === '-d' || a === '--data') o.data = value();
    else if (a === '-I' || a === '--head') o.head = true;
    else if (a === '-i' || a === '--include') o.include = true;
    else if (a === '--connect-timeout') o.connectTimeoutMs = Number(value()) * 1000;
    else if (a === '-m' || a === '--max-time') o.maxTimeMs = Number(value()) * 1000;
    else if (a.startsWith('-')) return `curl: option ${a}: is unknown\ncurl: try 'curl --help' for more information\n`;
    else o.url = a;
  }
  if (o.url === '') return "curl: no URL specified\ncurl: try 'curl --help' for more information\n";
  return o;
}

/** curl: one HTTP request; the body on stdout (or `-o` file), curl's exit codes and `curl: (n)` texts. */
async function curl(ctx: CommandContext): Promise<number> {
  const parsed = parseCurl(ctx.argv.slice(1));
  if (typeof parsed === 'string') {
    ctx.stderr(parsed);
    return 2;
  }
  const o = parsed;
  const fail = (code: number, text: string): number => {
    if (!o.silent || o.showError) ctx.stderr(`curl: (${code}) ${text}\n`);
    return code;
  };
  let url: URL;
  try {
    url = new URL(/^[a-z]+:\/\//i.test(o.url) ? o.url : `http://${o.url}`);
  } catch {
    return fail(3, 'URL rejected: Malformed input to a URL function');
  }
  if (url.protocol !== 'http:') return fail(1, `Protocol "${url.protocol.slice(0, -1)}" not supported`);
  const host = url.hostname;
  const port = Number(url.port || 80);
  const resolved = resolveHost(host);
  if ('error' in resolved) {
    return resolved.error === 'unresolved' ? fail(6, `Could not resolve host: ${host}`) : fail(7, `Failed to connect to ${host} port ${port} after 0 ms: ${OFF_LOOPBACK}`);
  }
  const started = Date.now();
  const method = o.method ?? (o.head ? 'HEAD' : o.data !== undefined ? 'POST' : 'GET');
  const outcome = await new Promise<{ status: number; head: string; body: string } | { error: number; text: string }>((resolve) => {
    const req = request({ host: resolved.address, port, path: `${url.pathname}${url.search}`, method, headers: { Host: url.host, 'User-Agent': 'curl/8.5.0', Accept: '*/*', ...o.headers } });
    let connected = false;
    const connectTimer = setTimeout(() => {
      if (connected) return;
      done({ error: 28, text: `Connection timed out after ${Date.now() - started} milliseconds` });
      req.destroy();
    }, Math.min(o.connectTimeoutMs ?? 300_000, 2_000_000_000));
    const maxTimer = o.maxTimeMs === undefined ? undefined : setTimeout(() => {
      done({ error: 28, text: `Operation timed out after ${Date.now() - started} milliseconds with 0 bytes received` });
      req.destroy();
    }, Math.min(o.maxTimeMs, 2_000_000_000));
    const abort = (): void => {
      done({ error: 130, text: 'interrupted' });
      req.destroy();
    };
    ctx.signal.addEventListener('abort', abort);
    function done(value: { status: number; head: string; body: string } | { error: number; text: string }): void {
      clearTimeout(connectTimer);
      clearTimeout(maxTimer);
      ctx.signal.removeEventListener('abort', abort);
      resolve(value);
    }
    req.on('socket', (socket) => socket.once('connect', () => (connected = true)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') done({ error: 7, text: `Failed to connect to ${host} port ${port} after ${Date.now() - started} ms: Couldn't connect to server` });
      else done({ error: 56, text: `Recv failure: ${err.message}` });
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const lines = [`HTTP/${res.httpVersion} ${res.statusCode ?? 0} ${res.statusMessage ?? ''}`.trimEnd()];
        for (let i = 0; i < res.rawHeaders.length; i += 2) lines.push(`${res.rawHeaders[i] ?? ''}: ${res.rawHeaders[i + 1] ?? ''}`);
        done({ status: res.statusCode ?? 0, head: `${lines.join('\r\n')}\r\n\r\n`, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', () => done({ error: 56, text: 'Recv failure: Connection reset by peer' }));
    });
    if (o.data !== undefined) req.write(o.data);
    req.end();
  });
  if ('error' in outcome) return outcome.error === 130 ? 130 : fail(outcome.error, outcome.text);
  if (o.fail && outcome.status >= 400) return fail(22, `The requested URL returned error: ${outcome.status}`);
  const text = (o.include || o.head ? outcome.head : '') + (o.head ? '' : outcome.body);
  if (o.output === undefined || o.output === '-') ctx.stdout(text);
  else if (!/^(\/dev\/null|nul)$/i.test(o.output)) {
    const path = containerPath(ctx.target, o.output);
    if (writeRefused(ctx.target, path)) return fail(23, `Failure writing output to destination`);
    ctx.target.files.set(path, text);
  }
  return 0;
}

/** Well-known names nc -v prints for a port (/etc/services). */
const SERVICES: Readonly<Record<number, string>> = { 22: 'ssh', 53: 'domain', 80: 'http', 443: 'https', 8080: 'http-alt' };

/**
 * OpenBSD netcat, TCP: `nc -z` checks that the port accepts a connection; without `-z` it sends
 * its standard input and prints what comes back until the peer closes or `-w` seconds pass.
 * `-u` (UDP) is not simulated.
 */
async function nc(ctx: CommandContext): Promise<number> {
  let verbose = false;
  let zero = false;
  let waitMs: number | undefined;
  const positional: string[] = [];
  const args = ctx.argv.slice(1);
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-w') waitMs = Number(args[++i] ?? '0') * 1000;
    else if (/^-[vzn]+$/.test(a)) {
      verbose ||= a.includes('v');
      zero ||= a.includes('z');
    } else if (a.startsWith('-')) {
      ctx.stderr(`nc: option ${a} is not simulated by cri-winsim\n`);
      return 1;
    } else positional.push(a);
  }
  const [host = '', portText = ''] = positional;
  const port = Number(portText);
  if (host === '' || !Number.isInteger(port)) {
    ctx.stderr('usage: nc [-46CDdFhklNnrStUuvZz] [-I length] [-i interval] [-M ttl]\n');
    return 1;
  }
  const resolved = resolveHost(host);
  if ('error' in resolved) {
    ctx.stderr(resolved.error === 'unresolved' ? `nc: getaddrinfo for host "${host}" port ${port}: Name or service not known\n` : `nc: connect to ${host} port ${port} (tcp) failed: ${OFF_LOOPBACK}\n`);
    return 1;
  }
  return new Promise<number>((resolve) => {
    const socket = connect({ host: resolved.address, port });
    let received = '';
    const timer = waitMs === undefined ? undefined : setTimeout(() => finish(zero ? 1 : 0, zero ? `nc: connect to ${host} port ${port} (tcp) timed out: Operation now in progress\n` : ''), waitMs);
    const onAbort = (): void => finish(130, '');
    ctx.signal.addEventListener('abort', onAbort);
    let finished = false;
    function finish(code: number, message: string): void {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      socket.destroy();
      if (received !== '') ctx.stdout(received);
      if (message !== '') ctx.stderr(message);
      resolve(code);
    }
    socket.on('connect', () => {
      if (verbose) ctx.stderr(`Connection to ${host} ${port} port [tcp/${SERVICES[port] ?? '*'}] succeeded!\n`);
      if (zero) return finish(0, '');
      socket.end(ctx.stdin);
    });
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('end', () => finish(0, ''));
    socket.on('error', (err: NodeJS.ErrnoException) => finish(1, `nc: connect to ${host} port ${port} (tcp) failed: ${err.code === 'ECONNREFUSED' ? 'Connection refused' : err.message}\n`));
  });
}
