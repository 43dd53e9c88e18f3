// Streaming benchmark (not part of `npm test`): `node dist/bench/streaming.js [--rounds N]
// [--exec-rounds N] [--payload-mib N] [--forward-only]`.
// 1. Exec round trip through the streaming server (Exec RPC + WebSocket v5 session of `echo x`)
//    against ExecSync of the same command, both on an in-process runtime.
// 2. Port-forward throughput: a TCP listener on the pod IP (bench/streaming-peer.ts, a process of
//    its own) sends the payload; a reader (another process) takes it directly over loopback,
//    through PortForward with the kubelet's WebSocket channels, and through `crictl port-forward`
//    (SPDY, when .tools/bin/crictl exists). The runtime, in this process, only forwards. Each
//    round runs the three in a rotating order, and each forwarded figure is divided by the
//    direct one of its round: the machine is shared, so only figures taken side by side compare.
//    Target: >= 0.5x direct. `node --cpu-prof dist/bench/streaming.js --forward-only` profiles
//    the runtime's side of the data paths.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { WebSocket } from 'ws';
import { CriServer } from '../src/cri/server.js';
import { NodeRuntime } from '../src/runtime/node-runtime.js';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const PORT = 9000;
const PEER = fileURLToPath(new URL('./streaming-peer.js', import.meta.url));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return NaN;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const round2 = (n: number): number => Math.round(n * 100) / 100;
const round3 = (n: number): number => Math.round(n * 1000) / 1000;

function wsExec(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v5.channel.k8s.io']);
    ws.on('error', reject);
    ws.on('close', () => resolve());
  });
}

/** Runs a reader of streaming-peer.js; resolves with MB/s (MiB per second). */
function peerRead(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PEER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('exit', (code) => {
      if (code !== 0) {
        reject(new Error(`streaming-peer ${args[0]} exited ${code}: ${err}`));
        return;
      }
      const { bytes, seconds } = JSON.parse(out) as { bytes: number; seconds: number };
      resolve(bytes / (1024 * 1024) / seconds);
    });
  });
}

function waitForLine(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes(text)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${child.spawnfile} exited ${code} before "${text}"`)));
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      'exec-rounds': { type: 'string', default: '200' },
      'payload-mib': { type: 'string', default: '64' },
      'forward-only': { type: 'boolean', default: false },
    },
  });
  const rounds = Number(values.rounds);
  const execRounds = values['forward-only'] ? 0 : Number(values['exec-rounds']);
  const payload = Number(values['payload-mib']) * 1024 * 1024;
  const loadBefore = loadavg().map(round2);
  const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-bench-streaming-'));
  const runtime = await NodeRuntime.open({ stateDir: join(dir, 'state'), pullDelayMs: 0, podCidr: '127.90.0.0/16' });
  const children: ChildProcess[] = [];
  let cri: CriServer | undefined;
  try {
    await runtime.pullImage({ image: { image: BUSYBOX, annotations: {}, user_specified_image: BUSYBOX, runtime_handler: '', image_ref: '' }, auth: null, sandbox_config: null });
    const config = { metadata: { name: 'bench', namespace: 'default', uid: 'bench', attempt: 0 }, hostname: '', log_directory: '', dns_config: null, port_mappings: [], labels: {}, annotations: {}, linux: null, windows: null };
    const { pod_sandbox_id: sandbox = '' } = await runtime.runPodSandbox({ config, runtime_handler: '' });
    const { container_id: container = '' } = await runtime.createContainer({
      pod_sandbox_id: sandbox,
      sandbox_config: config,
      config: { metadata: { name: 'box', attempt: 0 }, image: { image: BUSYBOX, annotations: {}, user_specified_image: '', runtime_handler: '', image_ref: '' }, command: ['sleep', '3600'], args: [], working_dir: '', envs: [], mounts: [], devices: [], labels: {}, annotations: {}, log_path: '', stdin: false, stdin_once: false, tty: false, linux: null, windows: null, CDI_devices: [], stop_signal: 0 } as never,
    });
    await runtime.startContainer({ container_id: container });

    const sync: number[] = [];
    const streamed: number[] = [];
    for (let i = 0; i < execRounds; i++) {
      let t = process.hrtime.bigint();
      await runtime.execSync({ container_id: container, cmd: ['echo', 'x'], timeout: '5' });
      sync.push(Number(process.hrtime.bigint() - t) / 1e6);
      t = process.hrtime.bigint();
      const { url = '' } = await runtime.exec({ container_id: container, cmd: ['echo', 'x'], stdin: false, stdout: true, stderr: false, tty: false });
      await wsExec(url);
      streamed.push(Number(process.hrtime.bigint() - t) / 1e6);
    }

    const ip = (await runtime.podSandboxStatus({ pod_sandbox_id: sandbox, verbose: false })).status?.network?.ip ?? '';
    const listener = spawn(process.execPath, [PEER, 'serve', ip, String(PORT), String(payload)], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(listener);
    await waitForLine(listener, 'listening');

    // crictl port-forward (SPDY, a process of its own), when .tools/bin has crictl.
    const crictl = join(process.cwd(), '.tools', 'bin', 'crictl');
    let localPort = 0;
    if (existsSync(crictl)) {
      cri = new CriServer({ runtime, shutdownTimeoutMs: 1000 });
      const endpoint = await cri.listen(`unix://${join(dir, 'cri.sock')}`);
      localPort = 18000 + Math.floor(Math.random() * 1000);
      const child = spawn(crictl, ['-r', endpoint, 'port-forward', sandbox, `${localPort}:${PORT}`], { stdio: ['ignore', 'pipe', 'ignore'] });
      children.push(child);
      await waitForLine(child, 'Forwarding from 127.0.0.1');
    }

    const runs: Record<'direct' | 'webSocket' | 'crictlSpdy', () => Promise<number>> = {
      direct: () => peerRead(['read-tcp', ip, String(PORT)]),
      webSocket: async () => {
        const { url = '' } = await runtime.portForward({ pod_sandbox_id: sandbox, port: [PORT] });
        return peerRead(['read-ws', url]);
      },
      crictlSpdy: () => peerRead(['read-tcp', '127.0.0.1', String(localPort)]),
    };
    const kinds = (['direct', 'webSocket', 'crictlSpdy'] as const).filter((k) => k !== 'crictlSpdy' || localPort !== 0);
    const table: Record<string, number[]> = { direct: [], webSocket: [], crictlSpdy: [] };
    // CPU time of this process (the runtime) per run: the forwarding's cost, which the load of a
    // shared machine moves much less than it moves MB/s. The direct run's is the bench's own
    // (spawning the reader), which the forwarded runs include as well.
    const cpuMs: Record<string, number[]> = { direct: [], webSocket: [], crictlSpdy: [] };
    const ratios: Record<string, number[]> = { webSocket: [], crictlSpdy: [] };
    for (let r = 0; r < rounds; r++) {
      const order = kinds.map((_, i) => kinds[(i + r) % kinds.length] as (typeof kinds)[number]);
      const got: Partial<Record<string, number>> = {};
      for (const kind of order) {
        const cpu = process.cpuUsage();
        got[kind] = await runs[kind]();
        const used = process.cpuUsage(cpu);
        cpuMs[kind]?.push(Math.round((used.user + used.system) / 1000));
      }
      for (const kind of kinds) table[kind]?.push(round2(got[kind] as number));
      for (const kind of kinds) if (kind !== 'direct') ratios[kind]?.push(round2((got[kind] as number) / (got['direct'] as number)));
    }
    const result = {
      loadAverage: { before: loadBefore, after: loadavg().map(round2) },
      ...(execRounds > 0 ? { execRoundTripMs: { execSyncMedian: round3(median(sync)), streamingExecMedian: round3(median(streamed)), rounds: execRounds } } : {}),
      portForward: {
        payloadMiB: payload / (1024 * 1024),
        rounds,
        MBps: table,
        runtimeCpuMs: cpuMs,
        ratioToDirect: ratios,
        median: {
          directMBps: round2(median(table['direct'] ?? [])),
          webSocketMBps: round2(median(table['webSocket'] ?? [])),
          webSocketRatio: round2(median(ratios['webSocket'] ?? [])),
          ...(localPort === 0 ? {} : { crictlSpdyMBps: round2(median(table['crictlSpdy'] ?? [])), crictlSpdyRatio: round2(median(ratios['crictlSpdy'] ?? [])) }),
          runtimeCpuMs: Object.fromEntries(kinds.map((k) => [k, median(cpuMs[k] ?? [])])),
        },
        target: 0.5,
      },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await cri?.close();
    await runtime.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
