// KubeconfigClusterSource against a tiny fake API server on 127.0.0.1 that serves the list
// endpoints it calls, with the objects of examples/cluster; and `kubelet run --kubeconfig`.
import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admitPod } from '../../src/apiserver/admission.js';
import { DirectoryClusterSource, KubeconfigClusterSource, type ClusterSnapshot } from '../../src/apiserver/cluster.js';
import { loadPodFiles } from '../../src/apiserver/manifests.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { repoRoot } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { runKubelet } from './support/kubelet-cli.js';

const examples = join(repoRoot, 'examples');

interface FakeApiServer {
  readonly url: string;
  readonly requests: string[];
  close(): Promise<void>;
}

/** Serves each path's list, or a Status with the given code for the paths in `fail`. */
async function startFakeApiServer(snapshot: ClusterSnapshot, fail: Record<string, number> = {}): Promise<FakeApiServer> {
  const lists: Record<string, { kind: string; apiVersion: string; items: readonly unknown[] }> = {
    '/api/v1/namespaces': { kind: 'NamespaceList', apiVersion: 'v1', items: snapshot.namespaces },
    '/api/v1/serviceaccounts': { kind: 'ServiceAccountList', apiVersion: 'v1', items: snapshot.serviceAccounts },
    '/api/v1/configmaps': { kind: 'ConfigMapList', apiVersion: 'v1', items: snapshot.configMaps },
    '/apis/rbac.authorization.k8s.io/v1/roles': { kind: 'RoleList', apiVersion: 'rbac.authorization.k8s.io/v1', items: snapshot.roles },
    '/apis/rbac.authorization.k8s.io/v1/clusterroles': { kind: 'ClusterRoleList', apiVersion: 'rbac.authorization.k8s.io/v1', items: snapshot.clusterRoles },
    '/apis/rbac.authorization.k8s.io/v1/rolebindings': { kind: 'RoleBindingList', apiVersion: 'rbac.authorization.k8s.io/v1', items: snapshot.roleBindings },
    '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings': { kind: 'ClusterRoleBindingList', apiVersion: 'rbac.authorization.k8s.io/v1', items: snapshot.clusterRoleBindings },
    '/apis/windows.k8s.io/v1/gmsacredentialspecs': { kind: 'GMSACredentialSpecList', apiVersion: 'windows.k8s.io/v1', items: snapshot.gmsaCredentialSpecs },
    '/api/v1/secrets': { kind: 'SecretList', apiVersion: 'v1', items: snapshot.secrets },
    '/apis/node.k8s.io/v1/runtimeclasses': { kind: 'RuntimeClassList', apiVersion: 'node.k8s.io/v1', items: snapshot.runtimeClasses },
  };
  const requests: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    requests.push(`${req.method} ${path} ${req.headers.authorization ?? ''}`);
    const status = (code: number, reason: string, message: string) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }));
    };
    if (fail[path] !== undefined) return status(fail[path]!, fail[path] === 403 ? 'Forbidden' : 'NotFound', `${path} refused by the test`);
    const list = lists[path];
    if (req.method !== 'GET' || list === undefined) return status(404, 'NotFound', 'the server could not find the requested resource');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...list, metadata: { resourceVersion: '1' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const kubeconfig = (server: string) =>
  [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `  - name: fake\n    cluster:\n      server: ${server}\n      insecure-skip-tls-verify: true`,
    'users:',
    '  - name: tester\n    user:\n      token: test-token',
    'contexts:',
    '  - name: fake\n    context:\n      cluster: fake\n      user: tester',
    'current-context: fake',
    '',
  ].join('\n');

/** Plain JSON: the client's typed objects and the directory's plain ones compare equal. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('KubeconfigClusterSource against a fake API server (Node 20, @kubernetes/client-node 1.x)', function () {
  this.timeout(30_000);
  let dir: string;
  let expected: ClusterSnapshot;
  let api: FakeApiServer | undefined;

  before(async () => {
    expected = await new DirectoryClusterSource(join(examples, 'cluster')).load();
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-kubeconfig-'));
  });
  afterEach(async () => {
    await api?.close();
    api = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('lists every kind admission needs and yields the same snapshot as the directory', async () => {
    api = await startFakeApiServer(expected);
    await writeFile(join(dir, 'config'), kubeconfig(api.url));
    const snapshot = await new KubeconfigClusterSource(join(dir, 'config')).load();
    expect(plain(snapshot)).to.deep.equal(plain(expected));
    expect(api.requests.map((r) => r.split(' ')[1]).sort()).to.deep.equal([
      '/api/v1/configmaps',
      '/api/v1/namespaces',
      '/api/v1/secrets',
      '/api/v1/serviceaccounts',
      '/apis/node.k8s.io/v1/runtimeclasses',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      '/apis/rbac.authorization.k8s.io/v1/rolebindings',
      '/apis/rbac.authorization.k8s.io/v1/roles',
      '/apis/windows.k8s.io/v1/gmsacredentialspecs',
    ]);
    // The kubeconfig's credentials are sent.
    expect(api.requests.every((r) => r.endsWith('Bearer test-token'))).to.equal(true);
  });

  it('admission over the API server snapshot decides as over the directory', async () => {
    api = await startFakeApiServer(expected);
    await writeFile(join(dir, 'config'), kubeconfig(api.url));
    const fromApi = await new KubeconfigClusterSource(join(dir, 'config')).load();
    const { pods } = await loadPodFiles([join(examples, 'pods', 'gmsa-pod-level.yaml'), join(examples, 'pods', 'gmsa-service-account-not-authorised.yaml')]);
    const decide = (cluster: ClusterSnapshot) => pods.map(({ pod }) => {
      const r = admitPod(pod, { cluster, user: requestingUser('alice') });
      return r.allowed ? plain(r.pod.spec?.securityContext?.windowsOptions) : r.error.message;
    });
    expect(decide(fromApi)).to.deep.equal(decide(expected));
  });

  it('falls back to v1alpha1 when the CRD serves no v1', async () => {
    api = await startFakeApiServer(expected, { '/apis/windows.k8s.io/v1/gmsacredentialspecs': 404 });
    await writeFile(join(dir, 'config'), kubeconfig(api.url));
    const snapshot = await new KubeconfigClusterSource(join(dir, 'config')).load();
    expect(snapshot.gmsaCredentialSpecs).to.deep.equal([]);
    expect(api.requests.some((r) => r.includes('/apis/windows.k8s.io/v1alpha1/gmsacredentialspecs'))).to.equal(true);
  });

  it('names the kubeconfig and the list that failed', async () => {
    api = await startFakeApiServer(expected, { '/api/v1/serviceaccounts': 403 });
    await writeFile(join(dir, 'config'), kubeconfig(api.url));
    const err = (await new KubeconfigClusterSource(join(dir, 'config')).load().catch((e: unknown) => e)) as Error;
    expect(err).to.be.instanceOf(Error);
    expect(err.message.startsWith(`kubeconfig ${join(dir, 'config')}: listing serviceaccounts: `), err.message).to.equal(true);
  });

  it('an unknown context is an error naming it', async () => {
    await writeFile(join(dir, 'config'), kubeconfig('http://127.0.0.1:1'));
    const err = (await new KubeconfigClusterSource(join(dir, 'config'), 'nope').load().catch((e: unknown) => e)) as Error;
    expect(err.message).to.match(new RegExp(`^kubeconfig ${join(dir, 'config')} \\(context nope\\): .*nope`));
  });
});

describe('kubelet run --kubeconfig', function () {
  this.timeout(60_000);
  let rt: RuntimeHandle;
  let api: FakeApiServer;

  before(async () => {
    rt = await startRuntime();
    api = await startFakeApiServer(await new DirectoryClusterSource(join(examples, 'cluster')).load());
    await writeFile(join(rt.dir, 'kubeconfig'), kubeconfig(api.url));
  });
  after(async () => {
    await api?.close();
    await rt?.stop();
  });

  it('admits with the API server objects and runs the pod', async () => {
    const r = await runKubelet([
      'run', join(examples, 'pods', 'gmsa-pod-level.yaml'), join(examples, 'pods', 'gmsa-service-account-not-authorised.yaml'),
      '--kubeconfig', join(rt.dir, 'kubeconfig'), '--container-runtime-endpoint', rt.endpoint, '--wait-ready', '--timeout', '20s',
    ]);
    expect(r.code).to.equal(1); // the second pod is refused
    expect(r.stderr).to.match(/^Error from server: error when creating ".*gmsa-service-account-not-authorised\.yaml": admission webhook "admission-webhook\.windows-gmsa\.sigs\.k8s\.io" denied the request: service account "reporting" is not authorized/);
    expect(r.stdout).to.match(/^NAME +READY +STATUS +RESTARTS +AGE\nwebapp-gmsa +2\/2 +Running +0 +\d+s\n$/);
  });
});
