// A quick scale check (not a test, not a benchmark): 10,000 containers in 1,000 sandboxes, then
// timed list/filter/status calls. Run: node dist/test/runtime/scale-check.js
import { performance } from 'node:perf_hooks';
import { ContainerState } from '../../src/runtime/store/container-store.js';
import { BUSYBOX, createContainer, openRuntime, pull, runSandbox } from './helpers.js';

const SANDBOXES = 1000;
const PER_SANDBOX = 10;

async function timed<T>(label: string, fn: () => Promise<T>, repeat = 1): Promise<T> {
  const t0 = performance.now();
  let result!: T;
  for (let i = 0; i < repeat; i++) result = await fn();
  const ms = (performance.now() - t0) / repeat;
  console.log(`${label.padEnd(58)} ${ms.toFixed(3).padStart(10)} ms${repeat > 1 ? ` (mean of ${repeat})` : ''}`);
  return result;
}

const fx = await openRuntime();
try {
  await pull(fx.runtime, BUSYBOX);
  const sandboxes: { id: string; config: Awaited<ReturnType<typeof runSandbox>>['config'] }[] = [];
  const containers: string[] = [];
  await timed(`create ${SANDBOXES} sandboxes x ${PER_SANDBOX} containers`, async () => {
    for (let s = 0; s < SANDBOXES; s++) {
      const sb = await runSandbox(fx.runtime, { labels: { app: `app-${s % 50}`, shard: String(s % 7) } });
      sandboxes.push(sb);
      for (let c = 0; c < PER_SANDBOX; c++) {
        containers.push(await createContainer(fx.runtime, sb, { command: ['pause'], labels: { role: `r${c}`, app: `app-${s % 50}` } }));
      }
    }
  });
  await timed('start 2,000 containers', async () => {
    for (const id of containers.slice(0, 2000)) await fx.runtime.startContainer({ container_id: id });
  });
  const filter = (f: Record<string, unknown>) => ({ filter: { id: '', state: null, pod_sandbox_id: '', label_selector: {}, ...f } });
  const all = await timed('ListContainers (no filter, 10,000 results)', () => fx.runtime.listContainers({ filter: null }), 10);
  const bySandbox = await timed('ListContainers by pod_sandbox_id', () => fx.runtime.listContainers(filter({ pod_sandbox_id: sandboxes[500]?.id })), 1000);
  const byId = await timed('ListContainers by id prefix (12 chars)', () => fx.runtime.listContainers(filter({ id: containers[7777]?.slice(0, 12) })), 1000);
  const running = await timed('ListContainers state=RUNNING (2,000 results)', () => fx.runtime.listContainers(filter({ state: { state: ContainerState.RUNNING } })), 100);
  const byLabel = await timed('ListContainers label app=app-3,role=r4 (20 results)', () => fx.runtime.listContainers(filter({ label_selector: { app: 'app-3', role: 'r4' } })), 1000);
  await timed('ContainerStatus by 8-char prefix', () => fx.runtime.containerStatus({ container_id: containers[4242]?.slice(0, 8) ?? '', verbose: false }), 1000);
  const pods = await timed('ListPodSandbox label shard=3', () => fx.runtime.listPodSandbox({ filter: { id: '', state: null, label_selector: { shard: '3' } } }), 1000);
  await timed('ListContainerStats (no filter)', () => fx.runtime.listContainerStats({ filter: null }), 10);
  console.log(`results: all=${all.containers?.length} bySandbox=${bySandbox.containers?.length} byId=${byId.containers?.length} ` +
    `running=${running.containers?.length} byLabel=${byLabel.containers?.length} podsShard3=${pods.items?.length}`);
  await timed('close (stops 2,000 simulated processes)', () => fx.close());
} catch (err) {
  await fx.close();
  throw err;
}
