import { createSocket } from 'node:dgram';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CommandContext } from '../command-registry.js';
import { listenInPod, untilSignalled } from '../pod-web-server.js';
import { signalNumber } from '../signals.js';
import { flagInt, goHttpError, goLog, goTimeNow, udpInPod } from './go-program.js';

/**
 * agnhost `netexec` (kubernetes v1.34 test/images/agnhost/netexec/netexec.go): an HTTP server on
 * --http-port (8080) and a UDP server on --udp-port (8081, -1: none) on the pod IP.
 *
 * HTTP endpoints as upstream serves them: `/` (the time), `/clientip`, `/dial` (http and udp, to
 * loopback addresses only: every pod IP of this node is one), `/echo?msg=&code=`, `/exit?code=&wait=&timeout=`,
 * `/healthz` (200 once the UDP server runs, 412 otherwise), `/hostname`, `/hostName`,
 * `/redirect?location=&code=`, `/shell?cmd=` (through the emulator's `/bin/sh -c`), `/shutdown`.
 * Not simulated: `/upload`, TLS (--tls-cert-file), SCTP (--sctp-port), --http-override.
 * UDP answers `hostname`, `echo <msg>` and `clientip`.
 */
export async function netexec(ctx: CommandContext, flags: Map<string, string>): Promise<number> {
  const httpPort = flagInt(flags, 'http-port', 8080);
  const udpPort = flagInt(flags, 'udp-port', 8081);
  const startedAtMs = Date.now();
  let ready = false;
  let exitWith: ((code: number) => void) | undefined;
  const exitRequested = new Promise<number>((resolve) => (exitWith = resolve));
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => void | Promise<void>> = {
    '/': (_req, res) => {
      goLog(ctx, 'GET /');
      res.end(`NOW: ${goTimeNow(startedAtMs)}`);
    },
    '/clientip': (req, res) => {
      goLog(ctx, 'GET /clientip');
      res.end(`${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? 0}`);
    },
    '/echo': (_req, res, query) => {
      const msg = query.get('msg') ?? '';
      const code = query.get('code') ?? '';
      goLog(ctx, `GET /echo?msg=${msg}&code=${code}`);
      if (code !== '') {
        if (!/^[+-]?\d+$/.test(code)) {
          res.end(`argument 'code' must be an integer or empty, got ${JSON.stringify(code)}\n`);
          return;
        }
        res.statusCode = Number(code);
      }
      res.end(msg);
    },
    '/healthz': (_req, res) => {
      goLog(ctx, 'GET /healthz');
      res.writeHead(ready ? 200 : 412).end();
    },
    '/hostname': (_req, res) => {
      goLog(ctx, 'GET /hostname');
      res.end(ctx.target.hostname);
    },
    '/hostName': (_req, res) => {
      goLog(ctx, 'GET /hostName');
      res.end(ctx.target.hostname);
    },
    '/redirect': (req, res, query) => {
      const location = query.get('location') ?? '';
      const code = query.get('code') ?? '';
      goLog(ctx, `${req.method ?? 'GET'} /redirect?msg=${location}&code=${code}`);
      if (code !== '' && !/^[+-]?\d+$/.test(code)) {
        res.end(`argument 'code' must be an integer or empty, got ${JSON.stringify(code)}\n`);
        return;
      }
      res.writeHead(code === '' ? 302 : Number(code), { Location: location }).end();
    },
    '/shell': async (_req, res, query) => {
      const cmd = query.get('shellCommand') || (query.get('cmd') ?? '');
      goLog(ctx, `GET /shell?cmd=${cmd}`);
      let out = '';
      const io = { stdout: (t: string) => (out += t), stderr: (t: string) => (out += t) };
      const code = await ctx.spawn(['/bin/sh', '-c', cmd], io);
      const result: Record<string, string> = {};
      if (out !== '') result['output'] = out;
      // exec.Cmd's error texts.
      if (typeof code !== 'number') result['error'] = 'fork/exec /bin/sh: no such file or directory';
      else if (code !== 0) result['error'] = `exit status ${code}`;
      res.end(JSON.stringify(result));
    },
    '/dial': async (_req, res, query) => dial(ctx, res, query),
    '/exit': async (req, res, query) => {
      const code = query.get('code') ?? '';
      const wait = query.get('wait') ?? '';
      const timeout = query.get('timeout') ?? '';
      goLog(ctx, `GET /exit?code=${code}&timeout=${timeout}&wait=${wait}`);
      const waitMs = goDurationMs(wait);
      const timeoutMs = goDurationMs(timeout);
      if (timeoutMs === undefined) return void res.end(`argument 'timeout' must be a valid golang duration or empty, got ${JSON.stringify(timeout)}\n`);
      if (waitMs === undefined) return void res.end(`argument 'wait' must be a valid golang duration or empty, got ${JSON.stringify(wait)}\n`);
      if (code !== '' && !/^[+-]?\d+$/.test(code)) return void res.end(`argument 'code' must be an integer [0-127] or empty, got ${JSON.stringify(code)}\n`);
      if (waitMs > 0) await ctx.sleep(waitMs);
      // Without a timeout the program exits at once (os.Exit): the request gets no answer.
      if (timeoutMs === 0) req.socket.destroy();
      else res.end();
      exitWith?.(code === '' ? 0 : Number(code));
    },
    '/shutdown': (req) => {
      goLog(ctx, 'GET /shutdown');
      req.socket.destroy();
      exitWith?.(0);
    },
  };
  const page = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://pod');
    const route = routes[url.pathname] ?? routes['/'];
    void Promise.resolve(route?.(req, res, url.searchParams)).catch(() => {
      if (!res.headersSent) goHttpError(res, 'internal error', 500);
      else res.destroy();
    });
  };

  const udp = udpPort === -1 ? undefined : await udpInPod(ctx, udpPort, (text, from) => udpAnswer(ctx, text, from));
  if (udp instanceof Error) {
    goLog(ctx, `Error occurred: failed to create listener for UDP address :${udpPort}:listen udp :${udpPort}: bind: address already in use`);
    return 1;
  }
  try {
    if (udp !== undefined) {
      goLog(ctx, `Started UDP server on port  ${udpPort}`);
      ready = true;
    }
    goLog(ctx, `Started HTTP server on port ${httpPort}`);
    const listener = await listenInPod(ctx, httpPort, page);
    if (listener instanceof Error) {
      goLog(ctx, `listen tcp :${httpPort}: bind: ${listener.code === 'EADDRINUSE' ? 'address already in use' : 'cannot assign requested address'}`);
      return 1;
    }
    try {
      const outcome = await Promise.race([untilSignalled(ctx), exitRequested]);
      // A signal: Go's default action ends the program (netexec handles none).
      return typeof outcome === 'number' ? outcome : 128 + signalNumber(outcome);
    } finally {
      listener.close();
    }
  } finally {
    udp?.close();
  }
}

function udpAnswer(ctx: CommandContext, received: string, from: string): string | undefined {
  const text = received.trim().toLowerCase();
  if (text === 'hostname') return ctx.target.hostname;
  if (text === 'clientip') return from;
  if (text.startsWith('echo ')) return text.slice(5);
  return undefined;
}

/** Go's time.ParseDuration for the forms callers use (`5s`, `100ms`, `1m30s`, `0`); '' is 0. */
function goDurationMs(text: string): number | undefined {
  if (text === '' || text === '0') return 0;
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let at = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    total += Number(m[1]) * (units[m[2] as string] ?? 0);
    at = re.lastIndex;
  }
  return at === text.length && at > 0 ? total : undefined;
}

/** `/dial`: requests to another pod, through real sockets; addresses off the loopback range are refused. */
async function dial(ctx: CommandContext, res: ServerResponse, query: URLSearchParams): Promise<void> {
  const host = query.get('host') ?? '';
  const port = query.get('port') ?? '';
  const request = query.get('request') ?? '';
  const protocol = (query.get('protocol') ?? '').toLowerCase();
  const triesParam = query.get('tries') ?? '';
  goLog(ctx, `GET /dial?host=${host}&protocol=${protocol}&port=${port}&request=${request}&tries=${triesParam}`);
  const tries = triesParam === '' ? 1 : Number(triesParam);
  if (!Number.isInteger(tries)) return goHttpError(res, `tries parameter is invalid. strconv.Atoi: parsing ${JSON.stringify(triesParam)}: invalid syntax`, 400);
  if (request === '') return goHttpError(res, 'request parameter not specified. <nil>', 400);
  if (!['', 'http', 'udp'].includes(protocol)) return goHttpError(res, `unsupported protocol. ${protocol}`, 400);
  const responses: string[] = [];
  const errors: string[] = [];
  let last = '';
  for (let i = 0; i < Math.min(tries, 100); i++) {
    try {
      last = protocol === 'udp' ? await dialUdp(host, Number(port), request) : await dialHttp(host, port, request);
      responses.push(last);
    } catch (err) {
      last = '';
      errors.push(err instanceof Error ? err.message : String(err));
    }
  }
  const output: Record<string, string[]> = {};
  if (last !== '') output['responses'] = responses;
  if (errors.length > 0) output['errors'] = errors;
  res.end(JSON.stringify(output));
}

/** Our own text: the simulated node reaches nothing outside 127.0.0.0/8. */
function refuseOffLoopback(host: string): void {
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) throw new Error(`dial ${host}: cri-winsim pods reach loopback addresses only`);
}

async function dialHttp(host: string, port: string, request: string): Promise<string> {
  refuseOffLoopback(host);
  const url = `http://${host}:${port}/${request}`;
  const response = await fetch(url, { signal: AbortSignal.timeout(5000), headers: { Connection: 'close' } });
  return await response.text();
}

function dialUdp(host: string, port: number, request: string): Promise<string> {
  refuseOffLoopback(host);
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    const timer = setTimeout(() => finish(new Error(`reading from udp connection failed. err:'read udp ${host}:${port}: i/o timeout'`)), 5000);
    const finish = (outcome: string | Error): void => {
      clearTimeout(timer);
      socket.close();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    socket.on('error', (err) => finish(new Error(`udp connection write failed. err:${err.message}`)));
    socket.on('message', (msg) => finish(msg.toString('utf8')));
    socket.send(request, port, host);
  });
}
