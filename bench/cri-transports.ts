// The CRI transport between a kubelet and a runtime in the same process (not part of `npm test`):
// `node dist/bench/cri-transports.js [--pods N] [--rounds R] [--only grpc|inprocess]` (--only: one
// transport, for `node --cpu-prof`). One runtime, served on a socket
// (CriServer) and reached by two clients: the socket client (createCriClient) and the in-process
// client (createInProcessCriClient). Each round starts N pause pods through the kubelet's pod
// worker (runPodOnce: RunPodSandbox, image status, CreateContainer, StartContainer, …), reads them
// back as node mode's resync does (ListPodSandbox, ListContainers, a ContainerStatus each, the
// status check's Status) and removes them, once per transport in alternating order; the CPU time
// of the process per pod is the figure (both ends of every call are in this process). Rounds
// alternate because the machine is shared: only figures taken side by side compare.
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { createInProcessCriClient } from '../src/cri/in-process-client.js';
import { createCriClient, unaryCall, type CriClient } from '../src/cri/proto.js';
import { CriServer } from '../src/cri/server.js';
import { deleteNodePod, listNodePods } from '../src/kubelet/node-pods.js';
import { runPodOnce } from '../src/kubelet/pod-worker.js';
import { NodeRuntime } from '../src/runtime/node-runtime.js';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '300' }, rounds: { type: 'string', default: '4' }, only: { type: 'string' } } });
const pods = Number(values.pods);
const rounds = Number(values.rounds);

/** The Windows pause image, as bench/node-scale.ts runs it. */
const pause = { name: 'app', image: 'mcr.microsoft.com/oss/kubernetes/pause:3.10', imagePullPolicy: 'IfNotPresent' as const };

function pod(round: number, i: number): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `p-${round}-${i}`, namespace: 'default', uid: `00000000-0000-4000-8000-${String(round * 100_000 + i).padStart(12, '0')}` },
    spec: { containers: [pause], terminationGracePeriodSeconds: 0 },
  };
}

/** CPU milliseconds of the process (user + system) spent in `work`. */
async function cpuMs(work: () => Promise<void>): Promise<number> {
  const start = process.cpuUsage();
  await work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

async function cycle(cri: CriClient, round: number, podLogsRoot: string): Promise<void> {
  // Sixteen at a time, as the kubelet's pod workers run.
  for (let i = 0; i < pods; i += 16) {
    await Promise.all(Array.from({ length: Math.min(16, pods - i) }, (_, k) => runPodOnce(cri, pod(round, i + k), { podLogsRoot, callTimeoutMs: 30_000 })));
  }
  const listed = await listNodePods(cri);
  await Promise.all(listed.flatMap((p) => p.containers.map((c) => unaryCall(cri.runtime, 'ContainerStatus', { container_id: c.id, verbose: false }))));
  await unaryCall(cri.runtime, 'Status', { verbose: false });
  for (let i = 0; i < listed.length; i += 16) await Promise.all(listed.slice(i, i + 16).map((p) => deleteNodePod(cri, p, { gracePeriodSeconds: 0 })));
}

const dir = await mkdtemp(join(tmpdir(), 'cri-trb-'));
const runtime = await NodeRuntime.open({ stateDir: join(dir, 'state'), podCidr: '127.200.0.0/16' });
const server = new CriServer({ runtime });
const endpoint = await server.listen(`unix://${join(dir, 'cri.sock')}`);
const clients: Record<'grpc' | 'inprocess', CriClient> = { grpc: createCriClient(endpoint), inprocess: createInProcessCriClient({ runtime, endpoint }) };
const spent: Record<string, number[]> = { grpc: [], inprocess: [] };
const load = loadavg()[0];
try {
  // A warm-up round each (JIT, image pull), not counted.
  const transports = values.only === undefined ? (['grpc', 'inprocess'] as const) : ([values.only] as ('grpc' | 'inprocess')[]);
  for (const name of transports) await cycle(clients[name], -1 - (name === 'grpc' ? 0 : 1), join(dir, 'logs'));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (['grpc', 'inprocess'] as const) : (['inprocess', 'grpc'] as const);
    for (const name of order.filter((t) => transports.includes(t))) spent[name]!.push(await cpuMs(() => cycle(clients[name], round * 2 + (name === 'grpc' ? 0 : 1), join(dir, 'logs'))));
  }
} finally {
  for (const c of Object.values(clients)) c.close();
  await server.close();
  await runtime.close();
  await rm(dir, { recursive: true, force: true });
}
const perPod = (ms: number[]) => ms.map((m) => Math.round((m / pods) * 100) / 100);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(JSON.stringify({
  date: new Date().toISOString().slice(0, 10),
  pods,
  rounds,
  loadAverage: [load, loadavg()[0]].map((l) => Math.round(l! * 10) / 10),
  cpuMsPerPod: { grpc: perPod(spent.grpc!), inprocess: perPod(spent.inprocess!) },
  medianCpuMsPerPod: { grpc: median(perPod(spent.grpc!)), inprocess: median(perPod(spent.inprocess!)) },
}, null, 2));
