import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ImageProgram } from '../runtime/images/image-program.js';
import type { CredentialSpecDocument } from '../runtime/windows/credential-spec.js';
import { commandKey, untilSignal, type CommandContext, type RegisteredCommand, type WaitForSignal } from './command-registry.js';
import { listenInPod, untilSignalled, type PodListener } from './pod-web-server.js';
import { signalNumber } from './signals.js';
import { identityOf } from './windows-identity.js';

/**
 * The annotation in which the kubelet hands a container's `ports` to the runtime, as JSON
 * (kubernetes v1.34 pkg/kubelet/kuberuntime/labels.go, containerPortsAnnotationKey).
 */
export const CONTAINER_PORTS_ANNOTATION = 'io.kubernetes.container.ports';

/** What the image's program of one container needs: the image's name, what it declares, where it listens. */
export interface ImageProgramLaunch {
  /** The image reference the container was created from (shown in the start line and the page). */
  readonly image: string;
  readonly program: ImageProgram;
  /** TCP ports it answers HTTP on (imageProgramPorts); empty: it serves nothing. */
  readonly ports: readonly number[];
}

const MAX_TIMER_MS = 2_000_000_000;

/** Signals the program handles: a stop ends it with 0, as a well-behaved server's shutdown does. */
const STOP_SIGNALS: readonly string[] = ['SIGTERM', 'SIGINT'];

/**
 * The ports the image's program answers on: the image's exposed ports, the program's own `ports`,
 * and the container's declared TCP `containerPort`s from the kubelet's annotation; none when the
 * program says `ports: false`. Sorted, each once. A malformed annotation adds nothing (the kubelet
 * writes it; a hand-made CRI request may not).
 */
export function imageProgramPorts(program: ImageProgram, exposedPorts: readonly number[] | undefined, portsAnnotation: string | undefined): number[] {
  if (program.ports === false) return [];
  const ports = new Set<number>([...(exposedPorts ?? []), ...(program.ports ?? [])]);
  for (const port of declaredTcpPorts(portsAnnotation)) ports.add(port);
  return [...ports].filter((p) => Number.isInteger(p) && p >= 1 && p <= 65535).sort((a, b) => a - b);
}

function declaredTcpPorts(annotation: string | undefined): number[] {
  if (annotation === undefined || annotation === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(annotation);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const out: number[] = [];
  for (const entry of parsed as unknown[]) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { containerPort, protocol } = entry as { containerPort?: unknown; protocol?: unknown };
    // The API defaults protocol to TCP; UDP and SCTP ports get no HTTP server.
    if (typeof containerPort === 'number' && (protocol === undefined || protocol === 'TCP')) out.push(containerPort);
  }
  return out;
}

/**
 * The image's program as the command a container's main process runs when its argv[0] is none the
 * emulator knows (SimulatedProcess StartOptions.imageProgram): named as invoked, so `ps` and
 * `tasklist` show `webapp`.
 */
export function imageProgramCommand(program: string, launch: ImageProgramLaunch): RegisteredCommand {
  return {
    name: commandKey(program),
    handler: (ctx) => runImageProgram(ctx, launch),
    options: { traps: STOP_SIGNALS, cpuLoad: 0.002 },
  };
}

async function runImageProgram(ctx: CommandContext, launch: ImageProgramLaunch): Promise<number | WaitForSignal> {
  const eol = ctx.target.os === 'windows' ? '\r\n' : '\n';
  const { program } = launch;
  const exitAfterMs = program.exitAfterSeconds === undefined ? undefined : Math.max(0, program.exitAfterSeconds) * 1000;
  const name = ctx.argv[0] ?? '';
  const listeners: PodListener[] = [];
  try {
    for (const port of launch.ports) {
      const listener = await listenInPod(ctx, port, (req, res) => identityPage(ctx, launch, port, req, res));
      if (listener instanceof Error) {
        // Our own wording: the image's real program would say it its own way.
        ctx.stderr(`${name}: cannot listen on ${String(ctx.target.platform['podIp'] ?? '')}:${port}: ${listener.code ?? listener.message}${eol}`);
        return 1;
      }
      listeners.push(listener);
      if (ctx.signal.aborted) return stopCode(ctx);
    }
    for (const line of program.output ?? [startLine(ctx, launch, listeners)]) ctx.stdout(`${line}${eol}`);
    // Nothing to serve and nothing to time: wait the way pause does, holding no promise.
    if (listeners.length === 0 && exitAfterMs === undefined) return untilSignal(() => 0);
    if (exitAfterMs === undefined) await untilSignalled(ctx);
    // Node timers hold at most ~24.8 days: longer runs wait in slices.
    else for (let left = exitAfterMs; left > 0; left -= MAX_TIMER_MS) await ctx.sleep(Math.min(left, MAX_TIMER_MS));
    return ctx.signal.aborted ? stopCode(ctx) : program.exitCode ?? 0;
  } catch (err) {
    if (ctx.signal.aborted) return stopCode(ctx);
    throw err;
  } finally {
    for (const listener of listeners) listener.close();
  }
}

/** A stop signal ends the program cleanly; any other ends it as the kernel would (128+n). */
function stopCode(ctx: CommandContext): number {
  const signal = String(ctx.signal.reason);
  return STOP_SIGNALS.includes(signal) ? 0 : 128 + signalNumber(signal);
}

/** The start line (cri-winsim's own text, not any real program's): what runs, from which image, where. */
function startLine(ctx: CommandContext, launch: ImageProgramLaunch, listeners: readonly PodListener[]): string {
  const where = listeners.length === 0 ? 'serving no ports' : `serving HTTP on ${listeners.map((l) => `${l.address}:${l.port}`).join(', ')}`;
  return `${ctx.argv.join(' ')}: the image program of ${launch.image} started (simulated by cri-winsim); ${where}`;
}

/** Who the container is, as its page shows it (a JSON document of cri-winsim's own shape). */
export interface ContainerIdentityPage {
  program: string;
  image: string;
  hostname: string;
  podIP: string;
  port: number;
  user: string;
  /** The account's domain (`User Manager`, `NT AUTHORITY`); null for Linux containers. */
  domain: string | null;
  /** The account the container uses on the network (`CONTOSO\WebApp1$`), when it has one. */
  networkIdentity: string | null;
  /** The gMSA of the credential spec the container started with. */
  gmsa: { account: string; domain: string; netbiosName: string } | null;
  request: { method: string; path: string };
}

/**
 * The program's HTTP answer: `/healthz` says `ok` (so probes pass), every other path the
 * container's identity as JSON, 200, so a probe or Service on any path of the app behaves.
 */
function identityPage(ctx: CommandContext, launch: ImageProgramLaunch, port: number, req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const body = path === '/healthz' ? 'ok\n' : `${JSON.stringify(identityOfContainer(ctx, launch, port, req.method ?? 'GET', path), null, 2)}\n`;
  res.writeHead(200, {
    'Content-Type': path === '/healthz' ? 'text/plain; charset=utf-8' : 'application/json',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

export function identityOfContainer(ctx: CommandContext, launch: ImageProgramLaunch, port: number, method: string, path: string): ContainerIdentityPage {
  const identity = identityOf(ctx);
  const spec = ctx.target.ociSpec.windows?.credentialSpec as CredentialSpecDocument | undefined;
  const join = spec?.DomainJoinConfig;
  return {
    program: ctx.argv[0] ?? '',
    image: launch.image,
    hostname: ctx.target.hostname,
    podIP: String(ctx.target.platform['podIp'] ?? ''),
    port,
    user: identity?.userName ?? ctx.target.user,
    domain: identity?.userDomain ?? null,
    networkIdentity: identity?.networkIdentity ?? null,
    gmsa: join === undefined ? null : { account: join.MachineAccountName, domain: join.DnsName, netbiosName: join.NetBiosName },
    request: { method, path },
  };
}
