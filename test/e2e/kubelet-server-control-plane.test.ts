// The kubelet's HTTPS server behind a real kube-apiserver (v1.34, built from the module proxy):
// `kubectl logs` reaches it through the API server's kubelet client certificate, bearer tokens
// are reviewed with TokenReview and requests authorized with SubjectAccessReview under RBAC.
// Texts: pkg/kubelet/server/server.go and auth.go (v1.34).
import { expect } from 'chai';
import { request } from 'node:https';
import { join } from 'node:path';
import { KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { createCriClient, type CriClient } from '../../src/cri/proto.js';
import { runPodOnce } from '../../src/kubelet/pod-worker.js';
import { startKubeletServer, type KubeletServer } from '../../src/kubelet/server/index.js';
import { requireControlPlaneTools, startControlPlane, type ControlPlane } from '../support/control-plane.js';
import { getLocal, withPortForward } from '../support/port-forward.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';

const NODE = 'winsim-kserver';
const IMAGE = 'mcr.microsoft.com/windows/servercore:ltsc2022';

function get(port: number, path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path, rejectUnauthorized: false, agent: false,
      headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
    }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('kubelet HTTPS server behind a real kube-apiserver', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let runtime: RuntimeHandle;
  let cri: CriClient;
  let server: KubeletServer;
  const pods: V1Pod[] = [];

  before(async function () {
    requireControlPlaneTools(this);
    cp = await startControlPlane({ nodeNames: [NODE], scheduler: false });
    runtime = await startRuntime();
    cri = createCriClient(runtime.endpoint);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(await cp.nodeKubeconfig(NODE));
    server = await startKubeletServer({
      port: 0, nodeName: NODE, cri, pods: () => pods,
      clientCaFile: cp.kubeletClientCaFile, anonymousAuth: false, authorizationMode: 'Webhook', kubeConfig,
      // Refusals are kept 30 s by default; short here so a new RoleBinding shows within the test.
      unauthorizedCacheTtlMs: 500,
    });
    // A Node registered by hand, as node mode will register it: its daemon endpoint is this server.
    await cp.kubectlOk(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1', kind: 'Node',
        metadata: { name: NODE, labels: { 'kubernetes.io/os': 'windows', 'kubernetes.io/hostname': NODE } },
        status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: server.port } } },
      }),
    });
    await cp.ensureNamespace('default', ['default', 'viewer']);
    await cp.kubectlOk(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1', kind: 'Pod',
        metadata: { name: 'greeter', namespace: 'default' },
        spec: {
          nodeName: NODE, automountServiceAccountToken: false,
          containers: [{ name: 'hello', image: IMAGE, command: ['sh', '-c', 'echo hello from a simulated windows node; echo second line; while true; do sleep 1; done'] }],
        },
      }),
    });
    const apiPod = JSON.parse(await cp.kubectlOk(['get', 'pod', 'greeter', '-n', 'default', '-o', 'json'])) as V1Pod;
    const outcome = await runPodOnce(cri, apiPod, { podLogsRoot: join(runtime.dir, 'pods'), nodeName: NODE });
    expect(outcome.containers.map((c) => c.state)).to.deep.equal(['started']);
    pods.push(apiPod);
  });
  after(async () => {
    await server?.close();
    cri?.close();
    await runtime?.stop();
    await cp?.stop();
  });

  it('kubectl logs reads the container log through the API server and the kubelet server', async () => {
    expect(await cp.kubectlOk(['logs', 'greeter', '-n', 'default'])).to.equal('hello from a simulated windows node\nsecond line\n');
    expect(await cp.kubectlOk(['logs', 'greeter', '-n', 'default', '--tail=1'])).to.equal('second line\n');
    expect(await cp.kubectlOk(['logs', 'greeter', '-n', 'default', '-c', 'hello', '--timestamps', '--tail=1'])).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z second line\n$/);
  });

  it('kubectl logs --previous shows the kubelet\'s text when there is no previous container', async () => {
    const res = await cp.kubectl(['logs', 'greeter', '-n', 'default', '--previous']);
    expect(res.code).to.not.equal(0);
    expect(res.stderr).to.equal('Error from server (BadRequest): previous terminated container "hello" in pod "greeter" not found\n');
  });

  it('kubectl exec reaches the runtime\'s streaming server through the kubelet server', async () => {
    const res = await cp.kubectl(['exec', 'greeter', '-n', 'default', '--', 'cmd', '/c', 'echo hello'], { timeoutMs: 60_000 });
    expect([res.code, res.stdout.replace(/\r\n/g, '\n'), res.stderr]).to.deep.equal([0, 'hello\n', '']);
    // The exit code travels back on the error channel; kubectl's text.
    const failed = await cp.kubectl(['exec', 'greeter', '-n', 'default', '--', 'cmd', '/c', 'exit 3'], { timeoutMs: 60_000 });
    expect([failed.code, failed.stderr]).to.deep.equal([3, 'command terminated with exit code 3\n']);
  });

  it('kubectl port-forward reaches a server in the pod through the kubelet server', async () => {
    await cp.kubectlOk(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default' },
        spec: { nodeName: NODE, automountServiceAccountToken: false, containers: [{ name: 'nginx', image: IMAGE, command: ['nginx'], ports: [{ containerPort: 80 }] }] },
      }),
    });
    const webPod = JSON.parse(await cp.kubectlOk(['get', 'pod', 'web', '-n', 'default', '-o', 'json'])) as V1Pod;
    expect((await runPodOnce(cri, webPod, { podLogsRoot: join(runtime.dir, 'pods'), nodeName: NODE })).containers.map((c) => c.state)).to.deep.equal(['started']);
    pods.push(webPod);
    // kubectl port-forward wants a Running pod: the status node mode's status manager would write.
    await cp.kubectlOk(['patch', 'pod', 'web', '-n', 'default', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { phase: 'Running' } })]);
    const page = await withPortForward(cp, 'pod/web', 80, (port) => getLocal(port, '/'));
    expect([page.status, page.server]).to.deep.equal([200, 'nginx/1.14.2']);
    expect(page.body).to.include('Welcome to nginx!');
  });

  it('a bearer token is reviewed by the API server and its user authorized by SubjectAccessReview', async () => {
    // The admin (system:masters) may do anything.
    const admin = await get(server.port, '/pods', cp.adminToken);
    expect(admin.status).to.equal(200);
    expect((JSON.parse(admin.body) as { items: V1Pod[] }).items.map((p) => p.metadata?.name)).to.include('greeter');

    // A service account without RBAC on nodes is refused with the kubelet's text.
    const viewer = (await cp.kubectlOk(['create', 'token', 'viewer', '-n', 'default'])).trim();
    const refused = await get(server.port, '/pods', viewer);
    expect([refused.status, refused.body]).to.deep.equal([403, 'Forbidden (user=system:serviceaccount:default:viewer, verb=get, resource=nodes, subresource(s)=[pods proxy])\n']);
    const refusedStats = await get(server.port, '/stats/summary', viewer);
    expect([refusedStats.status, refusedStats.body]).to.deep.equal([403, 'Forbidden (user=system:serviceaccount:default:viewer, verb=get, resource=nodes, subresource(s)=[stats])\n']);

    // Granted nodes/stats, it reads the summary once the refusal has left the cache (500 ms) and
    // the API server's RBAC authorizer has seen the binding, which its informer delivers a moment
    // after the create returns (longer on a busy machine); each refusal meanwhile is cached again.
    await cp.kubectlOk(['create', 'clusterrole', 'node-stats-reader', '--verb=get', '--resource=nodes/stats']);
    await cp.kubectlOk(['create', 'clusterrolebinding', 'viewer-node-stats', '--clusterrole=node-stats-reader', '--serviceaccount=default:viewer']);
    let stats = await get(server.port, '/stats/summary', viewer);
    for (const deadline = Date.now() + 30_000; stats.status === 403 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 250));
      stats = await get(server.port, '/stats/summary', viewer);
    }
    expect(stats.status, stats.body).to.equal(200);
    expect((JSON.parse(stats.body) as { node: { nodeName: string } }).node.nodeName).to.equal(NODE);
    // …and still nothing else.
    expect((await get(server.port, '/pods', viewer)).status).to.equal(403);
  });

  it('a token the API server does not know is refused: 401 Unauthorized', async () => {
    const res = await get(server.port, '/healthz', 'not-a-token');
    expect([res.status, res.body]).to.deep.equal([401, 'Unauthorized']);
    expect((await get(server.port, '/healthz')).status).to.equal(401);
  });
});
