import type { IncomingMessage, ServerResponse } from 'node:http';
import { untilSignal, type CommandContext, type CommandRegistry, type CommandIo, type WaitForSignal } from '../command-registry.js';
import { containerPath } from '../container-files.js';
import { listenInPod, untilSignalled, type PageHandler } from '../pod-web-server.js';
import { signalNumber } from '../signals.js';
import { netexec } from './agnhost-netexec.js';
import { flagBool, flagInt, goLog, goNotFound, parseFlags, udpInPod, type FlagKind } from './go-program.js';

/**
 * agnhost, the e2e tests' many-purpose image (kubernetes v1.34 test/images/agnhost): one binary
 * whose first argument picks a subcommand. Its image runs `/agnhost pause` by default
 * (Dockerfile and Dockerfile_windows: ENTRYPOINT ["/agnhost"], CMD ["pause"]); `agnhost-2` is the
 * same binary under a second name (entrypoint-tester tests use it).
 *
 * Simulated subcommands: entrypoint-tester, liveness, netexec, pause, porter (TCP ports),
 * serve-hostname (HTTP and UDP), test-webserver (the container's own files). Any other known
 * subcommand says it is not simulated; an unknown one fails as cobra does.
 */
export function registerAgnhost(registry: CommandRegistry): void {
  for (const name of ['agnhost', 'agnhost-2']) {
    registry.registerDefault(name, agnhost, { traps: ['SIGTERM', 'SIGINT'], cpuLoad: 0.001 });
  }
}

interface Subcommand {
  readonly short: string;
  readonly flags: Readonly<Record<string, FlagKind>>;
  /** Extra positional arguments allowed (cobra.MaximumNArgs); entrypoint-tester takes any. */
  readonly maxArgs: number;
  readonly run?: (ctx: CommandContext, flags: Map<string, string>) => Promise<number | WaitForSignal> | number | WaitForSignal;
}

/**
 * The subcommands agnhost.go registers; `run` where simulated. Short texts are upstream's for the
 * simulated ones (their cobra.Command), left empty for the others.
 */
const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  'audit-proxy': { short: '', flags: {}, maxArgs: 0 },
  connect: { short: '', flags: {}, maxArgs: 1 },
  'crd-conversion-webhook': { short: '', flags: {}, maxArgs: 0 },
  'dns-server-list': { short: '', flags: {}, maxArgs: 0 },
  'dns-suffix': { short: '', flags: {}, maxArgs: 0 },
  'entrypoint-tester': { short: 'Prints the args it\'s passed and exits', flags: {}, maxArgs: Infinity, run: entrypointTester },
  'etc-hosts': { short: '', flags: {}, maxArgs: 0 },
  'fake-gitserver': { short: '', flags: {}, maxArgs: 0 },
  guestbook: { short: '', flags: {}, maxArgs: 0 },
  'inclusterclient': { short: '', flags: {}, maxArgs: 0 },
  liveness: { short: 'Starts a server that is alive for 10 seconds', flags: {}, maxArgs: 0, run: liveness },
  'logs-generator': { short: '', flags: {}, maxArgs: 0 },
  mounttest: { short: '', flags: {}, maxArgs: 0 },
  net: { short: '', flags: {}, maxArgs: 0 },
  netexec: {
    short: 'Creates HTTP(S), UDP, and (optionally) SCTP servers with various endpoints',
    flags: { 'http-port': 'int', 'udp-port': 'int', 'sctp-port': 'int', 'tls-cert-file': 'string', 'tls-private-key-file': 'string', 'http-override': 'string', 'udp-listen-addresses': 'string' },
    maxArgs: 0,
    run: netexec,
  },
  nettest: { short: '', flags: {}, maxArgs: 0 },
  pause: { short: 'Pauses the execution', flags: {}, maxArgs: 0, run: pause },
  porter: { short: 'Serves requested data on ports specified in ENV variables', flags: { 'json-response': 'bool' }, maxArgs: 0, run: porter },
  'port-forward-tester': { short: '', flags: {}, maxArgs: 0 },
  'serve-hostname': { short: 'Serves the hostname', flags: { tcp: 'bool', udp: 'bool', http: 'bool', close: 'bool', port: 'int' }, maxArgs: 0, run: serveHostname },
  'test-webserver': { short: 'Starts a simple HTTP fileserver', flags: { port: 'int' }, maxArgs: 0, run: testWebserver },
  webhook: { short: '', flags: {}, maxArgs: 0 },
};

async function agnhost(ctx: CommandContext): Promise<number | WaitForSignal> {
  const [name, ...rest] = ctx.argv.slice(1);
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    ctx.stdout(usage());
    return 0;
  }
  const sub = SUBCOMMANDS[name];
  if (sub === undefined) {
    // cobra's texts for an unknown subcommand (root command `app`, agnhost.go).
    ctx.stderr(`Error: unknown command "${name}" for "app"\nRun 'app --help' for usage.\n`);
    return 1;
  }
  if (sub.run === undefined) {
    // cri-winsim's own text: the subcommand exists upstream but is not simulated.
    ctx.stderr(`agnhost ${name}: not simulated by cri-winsim\n`);
    return 1;
  }
  // cobra's and pflag's texts for bad flags and arguments.
  const parsed = parseFlags(rest, sub.flags);
  if ('error' in parsed) {
    ctx.stderr(`Error: ${parsed.error}\n`);
    return 1;
  }
  if (parsed.positional.length > sub.maxArgs) {
    ctx.stderr(`Error: accepts at most ${sub.maxArgs} arg(s), received ${parsed.positional.length}\n`);
    return 1;
  }
  return sub.run(ctx, parsed.flags);
}

/**
 * The root command's help: cobra's layout and agnhost's subcommands, abbreviated by cri-winsim
 * (no descriptions for the subcommands it does not simulate; klog's flags left out).
 */
function usage(): string {
  const names = Object.keys(SUBCOMMANDS).sort();
  const width = Math.max(...names.map((n) => n.length), 'completion'.length, 'help'.length) + 1;
  const lines = [...names, 'help'].map((n) => `  ${n.padEnd(width)}${n === 'help' ? 'Help about any command' : SUBCOMMANDS[n]?.short ?? ''}`.trimEnd());
  return `Usage:\n  app [command]\n\nAvailable Commands:\n${lines.join('\n')}\n\nFlags:\n  -h, --help      help for app\n  -v, --v Level   number for the log level verbosity\n      --version   version for app\n\nUse "app [command] --help" for more information about a command.\n`;
}

/** `pause` (pause/pause.go): prints "Paused"; SIGINT exits 1, SIGTERM 2. */
function pause(ctx: CommandContext): WaitForSignal {
  ctx.stdout('Paused\n');
  return untilSignal(pauseExit);
}

function pauseExit(signal: string, _io: CommandIo): number {
  return signal === 'SIGINT' ? 1 : 2;
}

/** `entrypoint-tester` (entrypoint-tester/ep.go): prints os.Args as Go's %v of a slice, exits 0. */
function entrypointTester(ctx: CommandContext): number {
  ctx.stdout(`[${ctx.argv.join(' ')}]\n`);
  return 0;
}

/** Go's net/http ends on a signal it does not handle with the signal's status. */
async function serveUntilSignal(ctx: CommandContext, ports: readonly number[], page: PageHandler, onBindError: (port: number, err: NodeJS.ErrnoException) => void): Promise<number> {
  const listeners = [];
  try {
    for (const port of ports) {
      const listener = await listenInPod(ctx, port, page);
      if (listener instanceof Error) {
        onBindError(port, listener);
        return 1;
      }
      listeners.push(listener);
    }
    return 128 + signalNumber(await untilSignalled(ctx));
  } finally {
    for (const listener of listeners) listener.close();
  }
}

const bindText = (err: NodeJS.ErrnoException): string => (err.code === 'EADDRINUSE' ? 'address already in use' : 'cannot assign requested address');

/**
 * `serve-hostname` (serve-hostname/serve_hostname.go): the hostname over HTTP (default) or UDP
 * on --port (9376). On SIGTERM it logs, then waits 60 s for its pod's deletion (a stop ends with
 * the kill at the grace period's end). Raw --tcp is not simulated.
 */
async function serveHostname(ctx: CommandContext, flags: Map<string, string>): Promise<number> {
  const port = flagInt(flags, 'port', 9376);
  const http = flagBool(flags, 'http', true);
  const udp = flagBool(flags, 'udp', false);
  const tcp = flagBool(flags, 'tcp', false);
  const close = flagBool(flags, 'close', false);
  if (http && (tcp || udp)) {
    goLog(ctx, "Can't server TCP/UDP mode and HTTP mode at the same time");
    return 1;
  }
  if (tcp) {
    ctx.stderr('agnhost serve-hostname --tcp: not simulated by cri-winsim\n');
    return 1;
  }
  const hostname = ctx.target.hostname;
  const closers: (() => void)[] = [];
  try {
    if (udp) {
      const socket = await udpInPod(ctx, port, (_text, from) => {
        goLog(ctx, `UDP request from ${from}`);
        return hostname;
      });
      if (socket instanceof Error) {
        goLog(ctx, `Error from ListenUDP(): listen udp :${port}: bind: ${bindText(socket)}`);
        return 1;
      }
      closers.push(() => socket.close());
    }
    if (http) {
      const listener = await listenInPod(ctx, port, (req, res) => {
        goLog(ctx, `HTTP request from ${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? 0}`);
        if (close) res.setHeader('Connection', 'close');
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end(hostname);
      });
      if (listener instanceof Error) {
        goLog(ctx, `listen tcp :${port}: bind: ${bindText(listener)}`);
        return 1;
      }
      closers.push(() => listener.close());
    }
    goLog(ctx, `Serving on port ${port}.`);
    const signal = await untilSignalled(ctx);
    if (signal !== 'SIGTERM') return 128 + signalNumber(signal);
    goLog(ctx, 'Shutting down after receiving signal: terminated.');
    goLog(ctx, 'Awaiting pod deletion.');
    await ctx.signal.sleepUntilKilled(60_000);
    return 0;
  } finally {
    for (const closeOne of closers) closeOne();
  }
}

/**
 * `porter` (porter/porter.go): for each SERVE_PORT_<n> / SERVE_TCP_PORT_<n> variable, HTTP on
 * port n answering the variable's value (as JSON {Method, Body} with --json-response). The UDP,
 * TLS and SCTP variables are not simulated (logged and skipped).
 */
async function porter(ctx: CommandContext, flags: Map<string, string>): Promise<number> {
  const json = flagBool(flags, 'json-response', false);
  const values = new Map<number, string>();
  for (const [key, value] of ctx.env) {
    const tcp = /^SERVE_(?:TCP_)?PORT_(\d+)$/.exec(key);
    if (tcp !== null) values.set(Number(tcp[1]), value);
    else if (/^SERVE_(UDP|TLS|SCTP)_PORT_\d+$/.test(key)) ctx.stderr(`agnhost porter: ${key} is not simulated by cri-winsim\n`);
  }
  const page: PageHandler = (req, res) => {
    const port = req.socket.localPort ?? 0;
    const value = values.get(port) ?? '';
    if (json) res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ Method: req.method ?? 'GET', Body: value }));
    else res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end(value);
  };
  return serveUntilSignal(ctx, [...values.keys()], page, (port, err) => goLog(ctx, `server on port "${port}" failed: listen tcp 0.0.0.0:${port}: bind: ${bindText(err)}`));
}

/**
 * `liveness` (liveness/server.go): HTTP on 8080; `/healthz` is 200 "ok" for its first 10 seconds
 * and 500 after, `/started` the time since start, `/redirect?loc=` a 302.
 */
async function liveness(ctx: CommandContext): Promise<number> {
  const started = Date.now();
  const page: PageHandler = (req, res) => {
    const url = new URL(req.url ?? '/', 'http://pod');
    const seconds = (Date.now() - started) / 1000;
    if (url.pathname === '/started') res.writeHead(200).end(`${seconds}s`);
    else if (url.pathname === '/healthz') {
      if (seconds > 10) res.writeHead(500).end(`error: ${seconds}`);
      else res.writeHead(200).end('ok');
    } else if (url.pathname === '/redirect') res.writeHead(302, { Location: url.searchParams.get('loc') ?? '' }).end();
    else goNotFound(res);
  };
  return serveUntilSignal(ctx, [8080], page, (_port, err) => goLog(ctx, `listen tcp :8080: bind: ${bindText(err)}`));
}

/**
 * `test-webserver` (test-webserver/test-webserver.go): a file server of the container's root on
 * --port (80), with its CORS headers. It serves the files the container has in the emulator.
 */
async function testWebserver(ctx: CommandContext, flags: Map<string, string>): Promise<number> {
  const port = flagInt(flags, 'port', 80);
  const page = (req: IncomingMessage, res: ServerResponse): void => {
    res.setHeader('Cache-Control', 'private');
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'DNT,X-Mx-ReqToken,Keep-Alive,User-Agent,X-Requested-With,Cache-Control,Content-Type');
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://pod').pathname);
    const content = ctx.target.files.get(containerPath(ctx.target, path));
    if (content === undefined) goNotFound(res);
    else res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end(content);
  };
  return serveUntilSignal(ctx, [port], page, (_port, err) => goLog(ctx, `listen tcp :${port}: bind: ${bindText(err)}`));
}
