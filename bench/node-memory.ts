/**
 * What an idle simulated node costs in memory: `cri-winsim node --nodes N` built in process
 * (startNodes, the command's own code and its default flags) against the test harness's real
 * kube-apiserver, once per node count, each count in a child process of its own started with
 * the launcher's Node flags and `--expose-gc`. After the nodes are Ready and have renewed their
 * leases (`--settle`), the child collects garbage and reports RSS and the heap; the growth from
 * the smallest count to each larger one, over the nodes added, is the cost of a node without the
 * process's fixed part. With `--snapshot` each child also writes a heap snapshot, and the growth
 * per node is broken down by constructor (what a node holds on the JavaScript heap).
 *
 *   node dist/bench/node-memory.js [--nodes 20,220] [--settle 15] [--snapshot] [--top 30]
 *                                  [--node-args "…"] [--out FILE]
 *
 * `--parts N` measures instead what each part of a node costs alone: N of it made in one process
 * (the built-in image catalogue, an open metadata-database connection, a TLS context with a
 * node's certificate, a runtime as node mode opens it, ephemeral and durable, its CRI server
 * listening, a kubelet server listening), heap and RSS growth per item after full collections.
 *
 * bench/README.md ("What an idle node costs") has the figures.
 */
import { spawn } from 'node:child_process';
import { createReadStream, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeHeapSnapshot } from 'node:v8';
import { NODE_FLAGS } from '../src/tuning/node-flags.js';

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RESULT_PREFIX = 'NODE-MEMORY ';

interface ChildResult {
  nodes: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** Open file descriptors of the process. */
  fds: number;
  /** Ready after, ms. */
  readyMs: number;
  snapshot?: string;
}

interface Entry {
  count: number;
  size: number;
}

const log = (text: string): void => {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)} load ${loadavg()[0]!.toFixed(1)}] ${text}\n`);
};

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) gc();
}

/** The child: N nodes as `cri-winsim node` starts them, measured once idle. */
async function child(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      child: { type: 'boolean' },
      nodes: { type: 'string' },
      kubeconfig: { type: 'string' },
      'state-dir': { type: 'string' },
      settle: { type: 'string', default: '15' },
      snapshot: { type: 'string' },
      'node-args': { type: 'string', default: '' },
    },
  });
  const { nodeCommand, startNodes } = await import('../src/commands/node.js');
  const { createLogger } = await import('../src/log.js');
  const nodes = Number(values.nodes);
  // The command's own option parsing, so every default is the command's.
  const command = nodeCommand();
  let parsed: Parameters<typeof startNodes>[0] | undefined;
  command.exitOverride().action((options: Parameters<typeof startNodes>[0]) => {
    parsed = options;
  });
  const extra = values['node-args'].split(/\s+/).filter((a) => a !== '');
  await command.parseAsync(['--kubeconfig', values.kubeconfig!, '--nodes', String(nodes), '--node-name-prefix', `mem${nodes}`, '--port', '0', '--state-dir', values['state-dir']!, '--log-level', 'warn', ...extra], { from: 'user' });
  const logger = createLogger({ level: parsed!.logLevel, name: 'cri-winsim-node', format: 'json' });
  const start = Date.now();
  const started = await startNodes(parsed!, logger);
  const readyMs = Date.now() - start;
  // Leases renewed and node statuses checked at least once (both every 10 s).
  await sleep(Number(values.settle) * 1000);
  collect();
  await sleep(500);
  collect();
  const usage = process.memoryUsage();
  const result: ChildResult = { nodes, rss: usage.rss, heapUsed: usage.heapUsed, heapTotal: usage.heapTotal, external: usage.external, arrayBuffers: usage.arrayBuffers, fds: readdirSync('/proc/self/fd').length, readyMs };
  if (values.snapshot !== undefined) result.snapshot = writeHeapSnapshot(values.snapshot);
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
  await started.stop();
  await new Promise<void>((done) => logger.flush(() => done()));
  process.exit(0);
}

const PARTS = ['catalogue', 'metadata-connection', 'tls-context', 'runtime', 'runtime-durable', 'cri-server', 'kubelet-server'] as const;

/** The child of `--parts`: `count` of one part in this process. */
async function partChild(part: string, count: number): Promise<void> {
  const { SimulatedRegistry } = await import('../src/runtime/images/catalogue.js');
  const { MetadataDb } = await import('../src/runtime/store/metadata-db.js');
  const { NodeRuntime } = await import('../src/runtime/node-runtime.js');
  const { CriServer } = await import('../src/cri/server.js');
  const { startKubeletServer } = await import('../src/kubelet/server/index.js');
  const { selfSignedServingCertificate } = await import('../src/kubelet/server/serving-certificate.js');
  const { createInProcessCriClient } = await import('../src/cri/in-process-client.js');
  const { createSecureContext } = await import('node:tls');
  const { createLogger } = await import('../src/log.js');
  const logger = createLogger({ level: 'warn', format: 'json' });
  const dir = await mkdtemp(join(tmpdir(), 'nmp-'));
  const catalogue = new SimulatedRegistry();
  const kept: unknown[] = [];
  const one = async (i: number): Promise<void> => {
    const stateDir = join(dir, `n${i}`);
    const open = (durable: boolean): ReturnType<typeof NodeRuntime.open> =>
      NodeRuntime.open({ stateDir: join(stateDir, 'runtime'), logger: logger.child({ node: `n${i}` }), durable, registry: catalogue, streamingOnFirstUse: true, podCidr: `127.11.${i % 250}.0/24` });
    if (part === 'catalogue') kept.push(new SimulatedRegistry());
    else if (part === 'metadata-connection') kept.push(MetadataDb.open(stateDir, logger));
    else if (part === 'tls-context') kept.push(createSecureContext(await selfSignedServingCertificate(`n${i}`, ['127.0.1.1'])));
    else if (part === 'runtime' || part === 'runtime-durable') kept.push(await open(part === 'runtime-durable'));
    else if (part === 'cri-server') {
      const runtime = await open(true);
      const server = new CriServer({ runtime, logger });
      await server.listen(`unix://${join(stateDir, 'cri.sock')}`);
      kept.push(runtime, server);
    } else if (part === 'kubelet-server') {
      const runtime = await open(true);
      const cri = await createInProcessCriClient({ runtime, endpoint: 'unix:///unused', logger });
      kept.push(runtime, cri, await startKubeletServer({ address: `127.0.1.${(i % 250) + 1}`, port: 0, anonymousAuth: true, authorizationMode: 'AlwaysAllow', nodeName: `n${i}`, cri, pods: () => [], logger }));
    } else throw new Error(`--parts: no part ${part} (${PARTS.join(', ')})`);
  };
  await one(0);
  await one(1);
  collect();
  await sleep(200);
  collect();
  const before = process.memoryUsage();
  for (let i = 2; i < count + 2; i++) await one(i);
  collect();
  await sleep(200);
  collect();
  const after = process.memoryUsage();
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify({ part, heapKiB: (after.heapUsed - before.heapUsed) / count / 1024, rssKiB: (after.rss - before.rss) / count / 1024 })}\n`);
  // Measured: the parts are dropped with the process, their directory first.
  await rm(dir, { recursive: true, force: true });
  process.exit(0);
}

/** Self size and count per node type and name (constructor), from a heap snapshot file. */
async function snapshotSummary(file: string): Promise<Map<string, Entry>> {
  const chunks: Buffer[] = [];
  for await (const chunk of createReadStream(file)) chunks.push(chunk as Buffer);
  const snap = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snap.snapshot.meta.node_fields;
  const stride = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const types = snap.snapshot.meta.node_types[0];
  const out = new Map<string, Entry>();
  for (let i = 0; i < snap.nodes.length; i += stride) {
    const type = types[snap.nodes[i + typeAt]!] ?? '?';
    let name = snap.strings[snap.nodes[i + nameAt]!] ?? '?';
    // Strings and code by kind only: their names are their contents.
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string' || type === 'number' || type === 'code') name = '';
    if (type === 'native' && name.length > 60) name = `${name.slice(0, 60)}…`;
    const key = `${type} ${name}`.trim();
    const e = out.get(key) ?? { count: 0, size: 0 };
    e.count++;
    e.size += snap.nodes[i + sizeAt]!;
    out.set(key, e);
  }
  return out;
}

function runChild<T = ChildResult>(args: string[]): Promise<T> {
  return new Promise((resolveRun, reject) => {
    const proc = spawn(process.execPath, [...NODE_FLAGS, '--expose-gc', fileURLToPath(import.meta.url), '--child', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.length > 200_000) err = err.slice(-100_000);
    });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20 * 60_000);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
      if (code !== 0 || line === undefined) reject(new Error(`child ${args.join(' ')}: exit ${String(code)}\n${err.slice(-4000)}`));
      else resolveRun(JSON.parse(line.slice(RESULT_PREFIX.length)) as T);
    });
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      nodes: { type: 'string', default: '20,220' },
      settle: { type: 'string', default: '15' },
      snapshot: { type: 'boolean', default: false },
      top: { type: 'string', default: '30' },
      'node-args': { type: 'string', default: '' },
      parts: { type: 'string' },
      out: { type: 'string', default: join(PACKAGE_ROOT, 'bench', 'results', 'node-memory.json') },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write('node dist/bench/node-memory.js [--nodes 20,220] [--settle 15] [--snapshot] [--top 30] [--node-args "…"] [--out FILE]\n       node dist/bench/node-memory.js --parts 200\n');
    return;
  }
  if (values.parts !== undefined) {
    const count = Number(values.parts);
    if (!Number.isInteger(count) || count < 1) throw new Error('--parts: a positive whole number');
    for (const part of PARTS) {
      const r = await runChild<{ part: string; heapKiB: number; rssKiB: number }>(['--part', part, '--count', String(count)]);
      process.stdout.write(`${part}: heap ${r.heapKiB.toFixed(1)} KiB, RSS ${r.rssKiB.toFixed(1)} KiB each (${count} in one process)\n`);
    }
    return;
  }
  const counts = values.nodes.split(',').map((n) => Number(n));
  if (counts.length < 2 || counts.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--nodes: two or more positive whole numbers, smallest first');
  const { startControlPlane, numberedNodeNames } = await import('../test/support/control-plane.js');
  const work = await mkdtemp(join(tmpdir(), 'nm-'));
  const plane = await startControlPlane({ scheduler: false, nodeNames: numberedNodeNames('unused', 1), name: 'node-memory' });
  const results: (ChildResult & { load: number })[] = [];
  try {
    log(`control plane at ${plane.server}`);
    for (const n of counts) {
      const args = ['--nodes', String(n), '--kubeconfig', plane.adminKubeconfig, '--state-dir', join(work, `s${n}`), '--settle', values.settle, '--node-args', values['node-args']];
      if (values.snapshot) args.push('--snapshot', join(work, `heap-${n}.heapsnapshot`));
      const load = loadavg()[0]!;
      const r = await runChild(args);
      results.push({ ...r, load });
      log(`${n} nodes: Ready after ${(r.readyMs / 1000).toFixed(1)} s; RSS ${(r.rss / 1048576).toFixed(1)} MiB, heap ${(r.heapUsed / 1048576).toFixed(1)} MiB of ${(r.heapTotal / 1048576).toFixed(1)}, external ${(r.external / 1048576).toFixed(1)} MiB`);
    }
    const base = results[0]!;
    const perNode = results.slice(1).map((r) => {
      const added = r.nodes - base.nodes;
      return { from: base.nodes, to: r.nodes, rssKiB: (r.rss - base.rss) / added / 1024, heapKiB: (r.heapUsed - base.heapUsed) / added / 1024, heapTotalKiB: (r.heapTotal - base.heapTotal) / added / 1024, externalKiB: (r.external - base.external) / added / 1024, fds: (r.fds - base.fds) / added, rssPerNodeWithFixedKiB: r.rss / r.nodes / 1024 };
    });
    for (const p of perNode) {
      log(`per node, ${p.from} → ${p.to}: RSS ${p.rssKiB.toFixed(0)} KiB, heap used ${p.heapKiB.toFixed(0)} KiB (heap reserved ${p.heapTotalKiB.toFixed(0)} KiB), external ${p.externalKiB.toFixed(0)} KiB, ${p.fds.toFixed(2)} file descriptors (RSS / nodes at ${p.to}: ${p.rssPerNodeWithFixedKiB.toFixed(0)} KiB)`);
    }
    let breakdown: { key: string; countPerNode: number; bytesPerNode: number }[] | undefined;
    if (values.snapshot) {
      const last = results[results.length - 1]!;
      const a = await snapshotSummary(base.snapshot!);
      const b = await snapshotSummary(last.snapshot!);
      const added = last.nodes - base.nodes;
      breakdown = [...b].map(([key, e]) => {
        const before = a.get(key) ?? { count: 0, size: 0 };
        return { key, countPerNode: (e.count - before.count) / added, bytesPerNode: (e.size - before.size) / added };
      }).sort((x, y) => y.bytesPerNode - x.bytesPerNode);
      const total = breakdown.reduce((s, x) => s + x.bytesPerNode, 0);
      process.stdout.write(`heap per node by type and constructor (${base.nodes} → ${last.nodes} nodes), total ${(total / 1024).toFixed(1)} KiB:\n`);
      for (const x of breakdown.slice(0, Number(values.top))) {
        process.stdout.write(`  ${(x.bytesPerNode / 1024).toFixed(2).padStart(8)} KiB ${x.countPerNode.toFixed(1).padStart(8)} × ${x.key}\n`);
      }
      breakdown = breakdown.slice(0, 200);
    }
    mkdirSync(dirname(values.out), { recursive: true });
    writeFileSync(values.out, `${JSON.stringify({ date: new Date().toISOString(), nodeArgs: values['node-args'], results: results.map(({ snapshot: _s, ...r }) => r), perNode, breakdown }, null, 2)}\n`);
    log(`results in ${values.out}`);
  } finally {
    await plane.stop();
    await rm(work, { recursive: true, force: true });
  }
}

const partAt = process.argv.indexOf('--part');
if (partAt >= 0) await partChild(process.argv[partAt + 1] ?? '', Number(process.argv[process.argv.indexOf('--count') + 1]));
else if (process.argv.includes('--child')) await child(process.argv.slice(2));
else await main();
