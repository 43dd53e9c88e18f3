// Streaming benchmark (not part of `npm test`): `node dist/bench/streaming.js`.
// 1. Exec round trip through the streaming server (Exec RPC + WebSocket v5 session of `echo x`)
//    against ExecSync of the same command, both on an in-process runtime.
// 2. Port-forward throughput: 64 MiB from a TCP listener on the pod IP, read directly over
//    loopback and through PortForward (the kubelet's WebSocket channels); target >= 0.5x direct.
import { createServer, connect, type Server } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CriServer } from '../src/cri/server.js';
import { NodeRuntime } from '../src/runtime/node-runtime.js';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const ROUNDS = 200;
const PAYLOAD = 64 * 1024 * 1024;
const PORT = 9000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

function wsExec(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v5.channel.k8s.io']);
    ws.on('error', reject);
    ws.on('close', () => resolve());
  });
}

function readAll(open: (onData: (n: number) => void, onEnd: () => void) => void): Promise<number> {
  return new Promise((resolve) => {
    let bytes = 0;
    const started = process.hrtime.bigint();
    open((n) => { bytes += n; }, () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      resolve(bytes / (1024 * 1024) / seconds);
    });
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-bench-streaming-'));
  const runtime = await NodeRuntime.open({ stateDir: join(dir, 'state'), pullDelayMs: 0, podCidr: '127.90.0.0/16' });
  let server: Server | undefined;
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
    for (let i = 0; i < ROUNDS; i++) {
      let t = process.hrtime.bigint();
      await runtime.execSync({ container_id: container, cmd: ['echo', 'x'], timeout: '5' });
      sync.push(Number(process.hrtime.bigint() - t) / 1e6);
      t = process.hrtime.bigint();
      const { url = '' } = await runtime.exec({ container_id: container, cmd: ['echo', 'x'], stdin: false, stdout: true, stderr: false, tty: false });
      await wsExec(url);
      streamed.push(Number(process.hrtime.bigint() - t) / 1e6);
    }

    const ip = (await runtime.podSandboxStatus({ pod_sandbox_id: sandbox, verbose: false })).status?.network?.ip ?? '';
    const chunk = Buffer.alloc(256 * 1024, 120);
    server = createServer((socket) => {
      let sent = 0;
      const pump = (): void => {
        while (sent < PAYLOAD) {
          sent += chunk.length;
          if (!socket.write(chunk)) {
            socket.once('drain', pump);
            return;
          }
        }
        socket.end();
      };
      pump();
    });
    await new Promise<void>((r) => server?.listen(PORT, ip, r));
    const direct = await readAll((onData, onEnd) => {
      const s = connect({ host: ip, port: PORT });
      s.on('data', (b: Buffer) => onData(b.length));
      s.on('end', onEnd);
    });
    const { url = '' } = await runtime.portForward({ pod_sandbox_id: sandbox, port: [PORT] });
    const forwarded = await readAll((onData, onEnd) => {
      const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v4.channel.k8s.io']);
      let first = true;
      ws.on('message', (raw: Buffer) => {
        if (raw[0] !== 0) return;
        // The first message of the data channel is its port.
        if (first) {
          first = false;
          onData(raw.length - 3);
          return;
        }
        onData(raw.length - 1);
      });
      ws.on('close', onEnd);
    });
    // crictl port-forward (SPDY, a process of its own), when .tools/bin has crictl.
    let crictlMBps: number | undefined;
    const crictl = join(process.cwd(), '.tools', 'bin', 'crictl');
    if (existsSync(crictl)) {
      const cri = new CriServer({ runtime, shutdownTimeoutMs: 1000 });
      const endpoint = await cri.listen(`unix://${join(dir, 'cri.sock')}`);
      const localPort = 18000 + Math.floor(Math.random() * 1000);
      const child = spawn(crictl, ['-r', endpoint, 'port-forward', sandbox, `${localPort}:${PORT}`], { stdio: ['ignore', 'pipe', 'ignore'] });
      try {
        await new Promise<void>((resolve) => {
          let out = '';
          child.stdout.on('data', (c: Buffer) => {
            out += c.toString();
            if (out.includes('Forwarding from 127.0.0.1')) resolve();
          });
        });
        crictlMBps = await readAll((onData, onEnd) => {
          const s = connect({ host: '127.0.0.1', port: localPort });
          s.on('data', (b: Buffer) => onData(b.length));
          s.on('end', onEnd);
        });
      } finally {
        child.kill('SIGKILL');
        await cri.close();
      }
    }
    const result = {
      execRoundTripMs: { execSyncMedian: median(sync), streamingExecMedian: median(streamed), rounds: ROUNDS },
      portForward: {
        payloadMiB: PAYLOAD / (1024 * 1024),
        directMBps: direct,
        webSocketInProcessMBps: forwarded,
        webSocketRatio: forwarded / direct,
        ...(crictlMBps === undefined ? {} : { crictlSpdyMBps: crictlMBps, crictlSpdyRatio: crictlMBps / direct }),
        target: 0.5,
      },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    server?.close();
    await runtime.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
