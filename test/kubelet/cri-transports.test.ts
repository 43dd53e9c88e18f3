// The kubelet through both CRI transports: the example pods (examples/pods: gMSA at pod and
// container level, an invalid credential spec, a node not authorised, a service account not
// authorised, RunAsUserName, the Windows version rule's image refused at pull and at start) run
// once against a runtime reached over its socket and once against a runtime reached in process
// (src/cri/in-process-client.ts); the pod outcomes, events, statuses as the runtime reports them,
// container output and deletion must be the same. Ids, addresses and times differ between any
// two runtimes and are replaced by placeholders before comparing.
import { expect } from 'chai';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DirectoryClusterSource } from '../../src/apiserver/cluster.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { createInProcessCriClient } from '../../src/cri/in-process-client.js';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { CriServer } from '../../src/cri/server.js';
import { execInContainer } from '../../src/kubelet/container-exec.js';
import { deleteNodePod, listNodePods, nodePodStatus } from '../../src/kubelet/node-pods.js';
import { readPodViews } from '../../src/kubelet/pod-views.js';
import { runPods, summarizePodRun, type PodRunResult } from '../../src/kubelet/run-pods.js';
import { NodeRuntime } from '../../src/runtime/node-runtime.js';
import { testPodCidr } from '../support/pod-cidr.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));

interface Node {
  readonly dir: string;
  readonly runtime: NodeRuntime;
  readonly server: CriServer;
  readonly cri: CriClient;
  results: PodRunResult[];
}

/** A runtime in this process with its socket, and the kubelet's client over `transport`. */
async function openNode(transport: 'grpc' | 'inprocess'): Promise<Node> {
  const dir = await mkdtemp(join(tmpdir(), `cri-tr-${transport === 'grpc' ? 'g' : 'i'}-`));
  const runtime = await NodeRuntime.open({ stateDir: join(dir, 'state'), podCidr: testPodCidr() });
  const server = new CriServer({ runtime });
  const endpoint = await server.listen(`unix://${join(dir, 'cri.sock')}`);
  const cri = transport === 'grpc' ? createCriClient(endpoint) : createInProcessCriClient({ runtime, endpoint });
  return { dir, runtime, server, cri, results: [] };
}

async function closeNode(node: Node | undefined): Promise<void> {
  if (node === undefined) return;
  node.cri.close();
  await node.server.close();
  await node.runtime.close();
  await rm(node.dir, { recursive: true, force: true });
}

/** A value with the run's own ids, addresses, times and directories replaced by placeholders. */
function comparable(value: unknown, node: Node): unknown {
  const text = JSON.stringify(value, (_key, v: unknown) => (Buffer.isBuffer(v) ? v.toString() : v))
    .replaceAll(node.dir, '<dir>')
    .replace(/\b[0-9a-f]{64}\b/g, '<id>')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<uid>')
    .replace(/\b127\.\d+\.\d+\.\d+\b/g, '<ip>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
    .replace(/"(createdAt|startedAt|finishedAt|created_at|started_at|finished_at|durationMs)":("?)\d+\2/g, '"$1":"<n>"')
    .replace(/\b\d+(\.\d+)?(ms|s|m)\b(?! ago)/g, '<duration>')
    .replace(/\b\d+[smhd] ago\b|\b\d+[smhd]\b/g, '<age>');
  return JSON.parse(text);
}

describe('the kubelet through the gRPC and the in-process CRI client: the same pods, the same outcomes', function () {
  this.timeout(120_000);
  let overSocket: Node | undefined;
  let inProcess: Node | undefined;
  const nodes = (): [Node, Node] => [overSocket!, inProcess!];

  before(async () => {
    overSocket = await openNode('grpc');
    inProcess = await openNode('inprocess');
    const files = (await readdir(join(examples, 'pods'))).sort().map((f) => join(examples, 'pods', f));
    // One after the other: the two runs do not compete for the machine, so timing-dependent
    // outcomes (none is expected) would show as a difference, not as noise.
    for (const node of nodes()) {
      node.results = await runPods(node.cri, files, {
        cluster: new DirectoryClusterSource(join(examples, 'cluster')),
        user: requestingUser('alice'),
        podLogsRoot: join(node.dir, 'pods'),
      });
    }
  });

  after(async () => {
    await closeNode(overSocket);
    await closeNode(inProcess);
  });

  it('every pod has the same status, reason and message, the error paths included', () => {
    const [a, b] = nodes();
    const summaries = (node: Node) => comparable(node.results.map(summarizePodRun), node);
    expect(summaries(b)).to.deep.equal(summaries(a));
    const statuses = Object.fromEntries(b.results.map(summarizePodRun).map((r) => [r.name, r.status]));
    // The error paths are there to compare: an identity failure, an image refused at pull, a
    // container refused at start, and admission's refusal before any CRI call.
    expect(statuses).to.include({ 'webapp-invalid-credspec': 'RunContainerError', 'nanoserver-ltsc2019': 'ErrImagePull', 'timesheets-ltsc2019': 'RunContainerError', 'reporting-webapp': 'Forbidden', 'reporting-sql': 'Running' });
  });

  it('every pod that reached the runtime has the same container outcomes and events', () => {
    const [a, b] = nodes();
    const outcomes = (node: Node) => comparable(node.results.map((r) => (r.stage === 'runtime' ? { name: r.pod.metadata?.name, outcome: r.outcome } : { name: r.stage })), node);
    expect(outcomes(b)).to.deep.equal(outcomes(a));
    const message = (pod: string) => {
      const result = b.results.find((r) => r.stage === 'runtime' && r.pod.metadata?.name === pod);
      if (result?.stage !== 'runtime') throw new Error(`${pod} did not reach the runtime`);
      return result.outcome.containers[0]!.message;
    };
    // The runtime's refusals as the kubelet words them: the status's message alone for a start
    // that failed, the whole gRPC status ("rpc error: code = … desc = …") for a pull.
    expect(message('webapp-invalid-credspec')).to.match(/^invalid credential spec: /);
    expect(message('nanoserver-ltsc2019')).to.match(/rpc error: code = \w+ desc = /);
  });

  it('the pods read back from the runtime have the same statuses (kubelet get)', async () => {
    const [a, b] = nodes();
    const views = async (node: Node) => comparable((await readPodViews(node.cri, undefined)).map((v) => ({ row: v.row, status: v.status })), node);
    expect(await views(b)).to.deep.equal(await views(a));
    const pods = async (node: Node) => comparable((await listNodePods(node.cri)).map((p) => ({ name: `${p.namespace}/${p.name}`, ...nodePodStatus(p) })), node);
    expect(await pods(b)).to.deep.equal(await pods(a));
  });

  it('a command in a running container gives the same output, and a failing one the same exit code', async () => {
    const run = async (node: Node, command: string[]) => {
      const pod = (await listNodePods(node.cri)).find((p) => p.name === 'webapp-gmsa')!;
      const out = await execInContainer(node.cri, { containerId: pod.containers[0]!.id, command, timeoutSeconds: 5 });
      return comparable({ exitCode: out.exitCode, stdout: out.stdout, stderr: out.stderr }, node);
    };
    for (const command of [['cmd', '/c', 'echo', '%USERNAME%'], ['nltest', '/parentdomain'], ['cmd', '/c', 'exit', '3']]) {
      const [a, b] = nodes();
      expect(await run(b, command), command.join(' ')).to.deep.equal(await run(a, command));
    }
  });

  it('an unknown container is the same NOT_FOUND error', async () => {
    const [a, b] = nodes();
    const error = async (node: Node) => {
      try {
        await unaryCall(node.cri.runtime, 'ContainerStatus', { container_id: 'nope', verbose: false });
      } catch (err) {
        const e = err as { code: number; details: string; message: string };
        return { code: e.code, details: e.details, message: e.message };
      }
      throw new Error('ContainerStatus of an unknown container succeeded');
    };
    expect(await error(b)).to.deep.equal(await error(a));
  });

  it('deleting every pod removes the same containers and sandboxes', async () => {
    const [a, b] = nodes();
    const removeAll = async (node: Node) => {
      const removed = [];
      for (const pod of await listNodePods(node.cri)) removed.push({ pod: pod.name, ...(await deleteNodePod(node.cri, pod, { gracePeriodSeconds: 0 })) });
      return comparable({ removed, left: await listNodePods(node.cri) }, node);
    };
    const [ra, rb] = [await removeAll(a), await removeAll(b)];
    expect(rb).to.deep.equal(ra);
    expect((rb as { left: unknown[] }).left).to.deep.equal([]);
  });
});
