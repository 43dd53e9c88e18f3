// Node mode's shared pod informer and its clients against a real control plane (etcd,
// kube-apiserver, kube-scheduler from tools/): a watch that the API server can no longer resume
// (410 Gone, client-go's "too old resource version") makes the informer list again and carry on
// with no pod run twice; `--in-cluster` reads the service account files and the
// KUBERNETES_SERVICE_HOST/PORT variables where client-go's rest.InClusterConfig reads them
// (k8s.io/client-go v0.34 rest/config.go); and many nodes in one process, fed by one watch, each
// run exactly the pods bound to them.
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startControlPlane, requireControlPlaneTools, type ControlPlane } from '../support/control-plane.js';
import { crictlJson } from '../support/crictl.js';
import { liveNodeProcesses, startNodeProcess, type NodeProcess } from '../support/node-process.js';
import { cliPath, requireCriTool } from '../support/paths.js';
import { until as pollUntil } from '../support/wait.js';
import { oneWorkerAtATime } from '../support/one-worker-at-a-time.js';

// until() at this suite's poll interval of 300 ms.
const until = <T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> => pollUntil(what, timeoutMs, probe, 300);

const PAUSE = 'mcr.microsoft.com/oss/kubernetes/pause:3.10';

function pod(name: string, nodeName: string, labels: Record<string, string> = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: { nodeName, terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: PAUSE }] },
  };
}

/** POST to etcd's JSON gateway (v3). */
async function etcd(cp: ControlPlane, path: string, body: object): Promise<any> {
  const res = await fetch(`${cp.etcdUrl}${path}`, { method: 'POST', body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`etcd ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

describe('node mode: shared pod informer, in-cluster config, many nodes per process', function () {
  // Its processes use the program's default pod ranges and node addresses.
  oneWorkerAtATime('default-addresses');
  this.timeout(180_000);
  let cp: ControlPlane;
  let dir: string;
  const kubectlJson = async <T = any>(args: string[]): Promise<T> => JSON.parse(await cp.kubectlOk([...args, '-o', 'json'])) as T;
  const running = (name: string) =>
    until(`pod ${name} Running`, 60_000, async () => {
      const p = await kubectlJson(['get', 'pod', name]);
      return p.status.phase === 'Running' ? p : undefined;
    });
  const sandboxesOf = async (stateDir: string, podName: string): Promise<any[]> =>
    (await crictlJson({ endpoint: `unix://${join(stateDir, 'cri.sock')}`, dir: stateDir }, ['pods', '--label', `io.kubernetes.pod.name=${podName}`, '-o', 'json'])).items;

  before(async function () {
    this.timeout(240_000);
    requireControlPlaneTools(this);
    requireCriTool(this, 'crictl');
    dir = await mkdtemp(join(tmpdir(), 'cwi-'));
    // No watch cache: a watch is served by etcd, which refuses a compacted revision (410 Gone).
    cp = await startControlPlane({ nodeNames: ['relist-1', 'incluster-1'], apiServerArgs: ['--watch-cache=false'] });
  });

  after(async function () {
    this.timeout(90_000);
    for (const p of liveNodeProcesses()) await p.stop();
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('lists again after 410 Gone (a compacted resource version) and keeps going: new pods run, vanished ones are removed, none runs twice', async () => {
    const stateDir = join(dir, 'relist-1');
    const node = await startNodeProcess(['node', '--kubeconfig', await cp.nodeKubeconfig('relist-1'), '--hostname-override', 'relist-1', '--state-dir', stateDir, '--port', '0']);
    await cp.apply(pod('kept', 'relist-1'));
    await cp.apply(pod('vanishes', 'relist-1'));
    const kept = await running('kept');
    await running('vanishes');
    // Frozen, the informer sees nothing of what follows. The API server's restart ends its watch
    // first (events sent before would wait in its socket); the changes come after, and etcd is
    // compacted past them: the informer's resource version is now too old to watch from.
    process.kill(node.pid, 'SIGSTOP');
    try {
      await cp.restartApiServer({ graceMs: 2_000 });
      await cp.apply(pod('while-away', 'relist-1'));
      await cp.kubectlOk(['delete', 'pod', 'vanishes', '--grace-period=0', '--force']);
      const revision = (await etcd(cp, '/v3/kv/range', { key: Buffer.from('/').toString('base64') })).header.revision as string;
      await etcd(cp, '/v3/kv/compaction', { revision, physical: true });
    } finally {
      process.kill(node.pid, 'SIGCONT');
    }
    await running('while-away');
    expect(node.logged('resource version too old (410 Gone); listing again'), node.lines.filter((l) => l.includes('pod-informer')).join('\n')).to.equal(true);
    await until('vanishes removed from the runtime', 30_000, async () => ((await sandboxesOf(stateDir, 'vanishes')).length === 0 ? true : undefined));
    // The relist handed the node its pods again: each still has one sandbox, the same one.
    for (const name of ['kept', 'while-away']) expect(await sandboxesOf(stateDir, name), name).to.have.length(1);
    const after = await kubectlJson(['get', 'pod', 'kept']);
    expect(after.status.containerStatuses[0]).to.include({ containerID: kept.status.containerStatuses[0].containerID, restartCount: 0 });
    await node.stop();
  });

  it('--in-cluster: the token and CA at /var/run/secrets/kubernetes.io/serviceaccount and KUBERNETES_SERVICE_HOST/PORT', async function () {
    // The files go where rest.InClusterConfig reads them, in a mount namespace of the node process
    // alone (a tmpfs over /run, /var/run's target), so nothing of this machine is touched.
    const unshare = ['--mount', '--propagation', 'private'];
    const probe = spawnSync('unshare', [...unshare, 'sh', '-c', 'mount -t tmpfs tmpfs /run'], { stdio: 'ignore' });
    if (probe.status !== 0) {
      // In CI a check that cannot run is a failure, as a missing tool is (.ci/run runs as root).
      if (process.env.CI === 'true') throw new Error('`unshare --mount` with a tmpfs mount failed: the --in-cluster test needs CAP_SYS_ADMIN');
      process.stderr.write('    skipping: `unshare --mount` with a tmpfs mount needs CAP_SYS_ADMIN\n');
      this.skip();
    }
    const secrets = join(dir, 'sa');
    await rm(secrets, { recursive: true, force: true });
    await mkdir(secrets);
    await writeFile(join(secrets, 'token'), cp.nodeToken('incluster-1'));
    await writeFile(join(secrets, 'ca.crt'), cp.caData);
    const server = new URL(cp.server);
    const stateDir = join(dir, 'incluster-1');
    const script =
      'mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && ' +
      'cp "$0/token" "$0/ca.crt" /run/secrets/kubernetes.io/serviceaccount/ && exec "$@"';
    const child = spawn('unshare', [...unshare, 'sh', '-c', script, secrets, process.execPath, cliPath, 'node', '--in-cluster', '--hostname-override', 'incluster-1', '--state-dir', stateDir, '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port, CRI_WINSIM_LOG_LEVEL: 'info' },
    });
    const lines: string[] = [];
    for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream }).on('line', (l) => lines.push(l));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await until('the in-cluster node ready', 60_000, async () => {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}:\n${lines.slice(-20).join('\n')}`);
        return lines.some((l) => l.includes('cri-winsim node ready')) ? true : undefined;
      });
      const node = await kubectlJson(['get', 'node', 'incluster-1']);
      expect(node.status.conditions.find((c: any) => c.type === 'Ready').status).to.equal('True');
      await cp.apply(pod('in-cluster', 'incluster-1'));
      const p = await running('in-cluster');
      expect(p.spec.nodeName).to.equal('incluster-1');
      const lease = await kubectlJson(['get', 'lease', '-n', 'kube-node-lease', 'incluster-1']);
      expect(lease.spec.holderIdentity).to.equal('incluster-1');
    } finally {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
  });

  it('many nodes in one process over one pod watch: each pod runs on exactly the node it is bound to', async () => {
    const stateDir = join(dir, 'shard');
    const count = 6;
    const node: NodeProcess = await startNodeProcess(['node', '--kubeconfig', cp.adminKubeconfig, '--nodes', String(count), '--node-name-prefix', 'shard', '--state-dir', stateDir, '--port', '0'], { readyTimeoutMs: 90_000 });
    const names = Array.from({ length: count }, (_, i) => `shard-${i + 1}`);
    // Bound directly (spec.nodeName) and through the scheduler (a hostname selector), 3 per node.
    const placed = new Map<string, string>();
    for (const [i, nodeName] of names.entries()) {
      for (const k of [1, 2]) {
        placed.set(`p-${i + 1}-${k}`, nodeName);
        await cp.apply(pod(`p-${i + 1}-${k}`, nodeName, { shard: 'yes' }));
      }
      placed.set(`s-${i + 1}`, nodeName);
      await cp.apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `s-${i + 1}`, namespace: 'default', labels: { shard: 'yes' } },
        spec: { nodeSelector: { 'kubernetes.io/hostname': nodeName }, terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: PAUSE }] },
      });
    }
    const nodes = await kubectlJson(['get', 'nodes', '-l', 'kubernetes.io/os=windows']);
    const nodeIp = new Map<string, string>(nodes.items.map((n: any) => [n.metadata.name, n.status.addresses.find((a: any) => a.type === 'InternalIP').address]));
    const pods = await until('every shard pod Running', 90_000, async () => {
      const list = await kubectlJson(['get', 'pods', '-l', 'shard=yes']);
      return list.items.length === placed.size && list.items.every((p: any) => p.status.phase === 'Running') ? list.items : undefined;
    });
    for (const p of pods) {
      expect(p.spec.nodeName, p.metadata.name).to.equal(placed.get(p.metadata.name));
      expect(p.status.hostIP, p.metadata.name).to.equal(nodeIp.get(p.spec.nodeName));
    }
    // Each runtime has exactly the sandboxes of the pods bound to its node, one each.
    for (const nodeName of names) {
      const target = { endpoint: `unix://${join(stateDir, nodeName, 'cri.sock')}`, dir: join(stateDir, nodeName) };
      const sandboxes = (await crictlJson(target, ['pods', '-o', 'json'])).items as any[];
      const expected = [...placed].filter(([, n]) => n === nodeName).map(([name]) => name).sort();
      expect(sandboxes.map((s) => s.metadata.name).sort(), nodeName).to.deep.equal(expected);
    }
    // Deleting the pods of one node empties that runtime alone.
    await cp.kubectlOk(['delete', 'pods', 'p-2-1', 'p-2-2', 's-2', '--wait=false']);
    const second = { endpoint: `unix://${join(stateDir, 'shard-2', 'cri.sock')}`, dir: join(stateDir, 'shard-2') };
    await until('shard-2 emptied', 60_000, async () => ((await crictlJson(second, ['pods', '-o', 'json'])).items.length === 0 ? true : undefined));
    const first = { endpoint: `unix://${join(stateDir, 'shard-1', 'cri.sock')}`, dir: join(stateDir, 'shard-1') };
    expect((await crictlJson(first, ['pods', '-o', 'json'])).items).to.have.length(3);
    expect(node.logged('pod list/watch failed'), 'one healthy watch').to.equal(false);
    await node.stop();
  });
});
