import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import type { ServerResponse } from 'node:http';
import type { CommandContext } from '../command-registry.js';

/**
 * What the Go programs of the e2e images (agnhost's subcommands) share as they appear from outside:
 * the `log` package's line prefix, cobra/pflag's flag parsing and its error texts, and Go's
 * net/http default answers.
 */

/** Go's log.Printf: `2009/11/10 23:00:00 text` on stderr (a container's clock is UTC). */
export function goLog(ctx: CommandContext, text: string): void {
  const d = new Date();
  const pad = (n: number): string => String(n).padStart(2, '0');
  const stamp = `${d.getUTCFullYear()}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  ctx.stderr(`${stamp} ${text}\n`);
}

/** Go's `fmt.Print(time.Now())`: `2009-11-10 23:00:00.123456789 +0000 UTC m=+0.000000001`. */
export function goTimeNow(startedAtMs: number): string {
  const d = new Date();
  const iso = d.toISOString();
  const monotonic = ((Date.now() - startedAtMs) / 1000).toFixed(9);
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}000000 +0000 UTC m=+${monotonic}`;
}

/** net/http's answer for a path no handler serves. */
export function goNotFound(res: ServerResponse): void {
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' }).end('404 page not found\n');
}

/** net/http's http.Error: the text and a newline, as text/plain. */
export function goHttpError(res: ServerResponse, text: string, status: number): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' }).end(`${text}\n`);
}

export type FlagKind = 'int' | 'bool' | 'string';

/** Flags as pflag reads them: `--name=value`, `--name value`, `-name=value`; bools also bare. */
export function parseFlags(args: readonly string[], spec: Readonly<Record<string, FlagKind>>): { flags: Map<string, string>; positional: string[] } | { error: string } {
  const flags = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (!arg.startsWith('-') || arg === '-') {
      positional.push(arg);
      continue;
    }
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    // klog's flags, which agnhost accepts on every subcommand (agnhost.go).
    const kind = spec[name] ?? (KLOG_FLAGS.has(name) ? 'string' : undefined);
    if (kind === undefined) return { error: `unknown flag: ${arg.startsWith('--') ? `--${name}` : `-${name}`}` };
    let value: string | undefined = eq < 0 ? undefined : body.slice(eq + 1);
    if (value === undefined) {
      if (kind === 'bool') value = 'true';
      else {
        value = args[++i];
        if (value === undefined) return { error: `flag needs an argument: --${name}` };
      }
    }
    if (kind === 'int' && !/^[+-]?\d+$/.test(value)) {
      return { error: `invalid argument "${value}" for "--${name}" flag: strconv.ParseInt: parsing "${value}": invalid syntax` };
    }
    if (kind === 'bool' && !/^(1|0|t|f|true|false|TRUE|FALSE|True|False)$/.test(value)) {
      return { error: `invalid argument "${value}" for "--${name}" flag: strconv.ParseBool: parsing "${value}": invalid syntax` };
    }
    flags.set(name, value);
  }
  return { flags, positional };
}

const KLOG_FLAGS: ReadonlySet<string> = new Set(['v', 'vmodule', 'logtostderr', 'alsologtostderr', 'log_dir', 'log_file', 'stderrthreshold', 'add_dir_header', 'skip_headers', 'skip_log_headers', 'one_output', 'log_backtrace_at', 'log_file_max_size']);

export function flagInt(flags: Map<string, string>, name: string, fallback: number): number {
  const value = flags.get(name);
  return value === undefined ? fallback : Number(value);
}

export function flagBool(flags: Map<string, string>, name: string, fallback: boolean): boolean {
  const value = flags.get(name);
  return value === undefined ? fallback : /^(1|t|true)$/i.test(value);
}

/**
 * A UDP socket on podIP:port answering each datagram with `answer(text, from)` (undefined: no
 * reply). Resolves with an Error when the address cannot be bound. Replies only go back to the
 * sender, which on this node is always a loopback address.
 */
export async function udpInPod(ctx: CommandContext, port: number, answer: (text: string, from: string) => string | undefined): Promise<UdpSocket | Error> {
  const ip = String(ctx.target.platform['podIp'] ?? '');
  if (ip === '') return Object.assign(new Error('the pod has no IP'), { code: 'EADDRNOTAVAIL' });
  const socket = createSocket({ type: 'udp4', reuseAddr: false });
  const bound = await new Promise<Error | undefined>((resolve) => {
    socket.once('error', resolve);
    socket.bind({ address: ip, port, exclusive: true }, () => {
      socket.off('error', resolve);
      resolve(undefined);
    });
  });
  if (bound !== undefined) {
    socket.close();
    return bound;
  }
  socket.on('message', (msg, rinfo) => {
    const reply = answer(msg.toString('utf8'), `${rinfo.address}:${rinfo.port}`);
    if (reply !== undefined && rinfo.address.startsWith('127.')) socket.send(reply, rinfo.port, rinfo.address);
  });
  // A failed send or a closed socket is the program's loss, not the runtime's.
  socket.on('error', () => undefined);
  return socket;
}
