// The test control plane (test/support/control-plane.ts): real etcd, kube-apiserver,
// kube-scheduler and kube-controller-manager (Kubernetes v1.34.12, etcd v3.6.14, built by
// scripts/install-tools.mjs) on loopback, driven through the real kubectl. Outside CI it is
// skipped when they are not built.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import {
  DEFAULT_NODE_NAMES,
  KUBERNETES_VERSION,
  liveControlPlanes,
  requireControlPlaneTools,
  selfSignedServingCertificate,
  startControlPlane,
  type ControlPlane,
} from '../support/control-plane.js';
import { processRunning } from '../support/process.js';
import { until } from '../support/wait.js';

describe('test control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager)', function () {
  this.timeout(120_000);
  let cp: ControlPlane | undefined;
  const plane = (): ControlPlane => {
    if (!cp) throw new Error('control plane not started');
    return cp;
  };

  before(async function () {
    requireControlPlaneTools(this);
    cp = await startControlPlane({ nodeNames: ['winsim-1', 'winsim-2'] });
  });

  after(async () => {
    await cp?.stop();
  });

  it('is ready: `kubectl get --raw /readyz` answers ok', async () => {
    expect((await plane().kubectlOk(['get', '--raw', '/readyz'])).trim()).to.equal('ok');
    expect(plane().server).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('`kubectl version` reports the pinned release for client and server', async () => {
    // kubectl's own output format (staging/src/k8s.io/kubectl/pkg/cmd/version/version.go, v1.34).
    const out = await plane().kubectlOk(['version']);
    expect(out).to.contain(`Client Version: ${KUBERNETES_VERSION}\n`);
    expect(out).to.contain(`Server Version: ${KUBERNETES_VERSION}\n`);
    const json = JSON.parse(await plane().kubectlOk(['version', '-o', 'json'])) as { serverVersion: { major: string; minor: string; gitVersion: string } };
    expect(json.serverVersion).to.include({ major: '1', minor: '34', gitVersion: KUBERNETES_VERSION });
  });

  it('ensureNamespace() creates the namespace and its own ServiceAccounts; kube-controller-manager adds `default` and kube-root-ca.crt', async () => {
    await plane().ensureNamespace('gmsa-smoke', ['default', 'webapp']);
    await plane().ensureNamespace('gmsa-smoke'); // idempotent
    const sas = await plane().kubectlOk(['get', 'serviceaccounts', '-n', 'gmsa-smoke', '-o', 'jsonpath={.items[*].metadata.name}']);
    expect(sas.split(' ').sort()).to.deep.equal(['default', 'webapp']);
    // The root-ca-cert-publisher controller's ConfigMap: the CA of the API server's certificate.
    const ca = await plane().kubectlOk(['get', 'configmap', 'kube-root-ca.crt', '-n', 'gmsa-smoke', '-o', 'jsonpath={.data.ca\\.crt}']);
    expect(ca).to.equal(plane().caData);
    // A namespace made without the harness gets them too: the controllers' work, not ensureNamespace's.
    await plane().kubectlOk(['create', 'namespace', 'bare']);
    const made = await until('default ServiceAccount and kube-root-ca.crt in namespace bare', 60_000, async () => {
      const res = await plane().kubectl(['get', 'serviceaccount/default', 'configmap/kube-root-ca.crt', '-n', 'bare', '-o', 'name']);
      return res.code === 0 ? res.stdout : undefined;
    });
    expect(made).to.equal('serviceaccount/default\nconfigmap/kube-root-ca.crt\n');
  });

  it('kube-controller-manager: a Deployment gets its ReplicaSet and pods; deleting it (and a namespace) collects them', async () => {
    await plane().ensureNamespace('deploy');
    await plane().apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'deploy' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          // No node matches: the pods stay Pending; creating them is the controllers' part.
          spec: { nodeSelector: { 'kubernetes.io/os': 'windows', nowhere: 'true' }, containers: [{ name: 'iis', image: 'mcr.microsoft.com/windows/servercore/iis' }] },
        },
      },
    });
    const pods = await until('the Deployment\'s two pods', 60_000, async () => {
      const list = JSON.parse(await plane().kubectlOk(['get', 'pods', '-n', 'deploy', '-l', 'app=web', '-o', 'json'])) as { items: { metadata: { ownerReferences?: { kind: string }[] } }[] };
      return list.items.length === 2 ? list.items : undefined;
    });
    expect(pods.map((p) => p.metadata.ownerReferences?.[0]?.kind)).to.deep.equal(['ReplicaSet', 'ReplicaSet']);
    // The garbage collector deletes the ReplicaSet and its pods after their owner (background propagation).
    await plane().kubectlOk(['delete', 'deployment', 'web', '-n', 'deploy', '--wait=true', '--timeout=60s']);
    await until('the ReplicaSet and pods collected', 60_000, async () => {
      const left = await plane().kubectlOk(['get', 'replicasets,pods', '-n', 'deploy', '-o', 'name']);
      return left.trim() === '' ? true : undefined;
    });
    // The namespace controller finishes a namespace's deletion (no finalizer left behind).
    const deleted = await plane().kubectl(['delete', 'namespace', 'deploy', '--wait=true', '--timeout=60s'], { timeoutMs: 70_000 });
    expect(deleted.code, deleted.stderr).to.equal(0);
    expect((await plane().kubectl(['get', 'namespace', 'deploy'])).stderr).to.contain('namespaces "deploy" not found');
  });

  it('a node token authenticates as system:node:<name> in system:nodes, under the Node authorizer', async () => {
    const kubeconfig = await plane().nodeKubeconfig('winsim-1');
    const who = JSON.parse(await plane().kubectlOk(['auth', 'whoami', '-o', 'json'], { kubeconfig })) as { status: { userInfo: { username: string; groups: string[] } } };
    expect(who.status.userInfo.username).to.equal('system:node:winsim-1');
    expect(who.status.userInfo.groups).to.include('system:nodes');
    // The Node authorizer lets a node read its own Node but not list Secrets.
    expect((await plane().kubectl(['auth', 'can-i', 'get', 'nodes/winsim-1'], { kubeconfig })).stdout.trim()).to.equal('yes');
    const secrets = await plane().kubectl(['get', 'secrets', '-n', 'default'], { kubeconfig });
    expect(secrets.code).to.equal(1);
    // apiserver's Forbidden text (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go, v1.34).
    expect(secrets.stderr).to.contain('secrets is forbidden: User "system:node:winsim-1" cannot list resource "secrets" in API group "" in the namespace "default"');
  });

  it('a node may create TokenReviews and SubjectAccessReviews (what a kubelet\'s HTTPS server sends)', async () => {
    const kubeconfig = await plane().nodeKubeconfig('winsim-1');
    // --validate=false: client-side validation would list CRDs, which a node may not.
    const review = JSON.parse(await plane().kubectlOk(['create', '--validate=false', '-o', 'json', '-f', '-'], {
      kubeconfig,
      input: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: plane().adminToken } }),
    })) as { status: { authenticated: boolean; user: { username: string; groups: string[] } } };
    expect(review.status.authenticated).to.equal(true);
    expect(review.status.user.username).to.equal('cri-winsim-admin');
    expect(review.status.user.groups).to.include('system:masters');
    const sar = JSON.parse(await plane().kubectlOk(['create', '--validate=false', '-o', 'json', '-f', '-'], {
      kubeconfig,
      input: JSON.stringify({
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user: 'system:node:winsim-2', groups: ['system:nodes'], resourceAttributes: { verb: 'get', resource: 'nodes', subresource: 'log', name: 'winsim-1' } },
      }),
    })) as { status: { allowed: boolean } };
    expect(sar.status.allowed).to.equal(false);
  });

  it('grantToNodes() gives every node more than the Node authorizer does', async () => {
    const kubeconfig = await plane().nodeKubeconfig('winsim-2');
    const can = async () => (await plane().kubectl(['auth', 'can-i', 'list', 'configmaps', '-n', 'kube-system'], { kubeconfig })).stdout.trim();
    // The Node authorizer's reason (plugin/pkg/auth/authorizer/node/node_authorizer.go, v1.34).
    expect(await can()).to.equal('no - No Object name found');
    await plane().grantToNodes('cri-winsim-test-read-configmaps', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }]);
    expect(await can()).to.equal('yes');
  });

  it('nodeKubeconfig() and nodeToken() refuse a node name that has no token', async () => {
    let err: unknown;
    try { await plane().nodeKubeconfig('winsim-9'); } catch (e) { err = e; }
    expect(String(err)).to.contain('node "winsim-9" has no token: the control plane was started with node names winsim-1, winsim-2');
    expect(() => plane().nodeToken('nope')).to.throw('node "nope" has no token');
    expect(DEFAULT_NODE_NAMES).to.have.length(16);
  });

  it('the scheduler binds a windows pod to a Node the node registered itself, once the node lifecycle controller lifts the not-ready taint', async () => {
    const kubeconfig = await plane().nodeKubeconfig('winsim-2');
    // A Node as a kubelet registers it (NodeRestriction lets it create its own Node only), Ready.
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const created = JSON.parse(await plane().kubectlOk(['create', '-o', 'json', '-f', '-'], {
      kubeconfig,
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'winsim-2', labels: { 'kubernetes.io/os': 'windows', 'kubernetes.io/hostname': 'winsim-2' } },
        status: {
          capacity: { cpu: '4', memory: '8Gi', pods: '110' },
          allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: now, lastTransitionTime: now }],
        },
      }),
    })) as { spec: { taints?: { key: string; effect: string }[] } };
    // The TaintNodesByCondition admission plugin taints every new Node
    // (plugin/pkg/admission/nodetaint/admission.go, v1.34)…
    expect(created.spec.taints?.map((t) => `${t.key}:${t.effect}`)).to.deep.equal(['node.kubernetes.io/not-ready:NoSchedule']);
    // …and the node lifecycle controller lifts the taint of a Ready node.
    await until('the not-ready taint of winsim-2 lifted', 60_000, async () => {
      const taints = await plane().kubectlOk(['get', 'node', 'winsim-2', '-o', 'jsonpath={.spec.taints}']);
      return taints.trim() === '' ? true : undefined;
    });
    await plane().ensureNamespace('sched');
    await plane().apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'iis', namespace: 'sched' },
      spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, containers: [{ name: 'iis', image: 'mcr.microsoft.com/windows/servercore/iis' }] },
    });
    let nodeName = '';
    for (let i = 0; i < 120 && nodeName === ''; i += 1) {
      nodeName = await plane().kubectlOk(['get', 'pod', 'iis', '-n', 'sched', '-o', 'jsonpath={.spec.nodeName}']);
      if (nodeName === '') await new Promise((r) => setTimeout(r, 250));
    }
    expect(nodeName).to.equal('winsim-2');
    // The ServiceAccount admission plugin gave it the `default` account the controller made.
    expect(await plane().kubectlOk(['get', 'pod', 'iis', '-n', 'sched', '-o', 'jsonpath={.spec.serviceAccountName}'])).to.equal('default');
  });

  it('kube-apiserver keeps the defaults a user\'s cluster has for reaching kubelets, admission and endpoints', () => {
    const pid = plane().pids()['kube-apiserver'];
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const flags = args.filter((a) => a.startsWith('--')).map((a) => a.replace(/=.*$/, ''));
    expect(flags).to.include.members(['--authorization-mode', '--enable-admission-plugins', '--kubelet-client-certificate']);
    expect(flags).to.not.include.members(['--kubelet-preferred-address-types']);
    expect(flags).to.not.include.members(['--disable-admission-plugins']);
    expect(flags).to.not.include.members(['--endpoint-reconciler-type']);
    expect(plane().pids()['kube-controller-manager']).to.be.a('number');
  });

  it('hands out ClusterIPs from a loopback range', async () => {
    expect(await plane().kubectlOk(['get', 'service', 'kubernetes', '-n', 'default', '-o', 'jsonpath={.spec.clusterIP}'])).to.equal('127.96.0.1');
  });

  it('reaches a kubelet at the Node\'s InternalIP and kubelet port with its kubelet client certificate', async () => {
    // A stand-in kubelet HTTPS server that asks for a client certificate from kubeletClientCaFile.
    const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-kubelet-'));
    let server: Server | undefined;
    try {
      const { cert, key } = await selfSignedServingCertificate(dir, 'kubelet');
      const seen: string[] = [];
      server = createServer({
        cert: readFileSync(cert),
        key: readFileSync(key),
        ca: readFileSync(plane().kubeletClientCaFile),
        requestCert: true,
        rejectUnauthorized: true,
      }, (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        seen.push(`${peer.subject.O} ${peer.subject.CN} ${req.url}`);
        res.end('ok');
      });
      const srv = server;
      await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
      const port = (srv.address() as AddressInfo).port;
      const kubeconfig = await plane().nodeKubeconfig('winsim-1');
      await plane().kubectlOk(['create', '-f', '-'], {
        kubeconfig,
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: 'winsim-1', labels: { 'kubernetes.io/os': 'windows' } },
          // What a simulated node reports: an InternalIP alone, which the API server dials with
          // its default --kubelet-preferred-address-types (no Hostname address to look up).
          status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: port } } },
        }),
      });
      // A pod bound to that node: `kubectl logs` goes through the API server to the kubelet.
      await plane().ensureNamespace('logs');
      await plane().apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: 'logs' },
        spec: { nodeName: 'winsim-1', containers: [{ name: 'iis', image: 'mcr.microsoft.com/windows/servercore/iis' }] },
      });
      expect(await plane().kubectlOk(['logs', '-n', 'logs', 'web', '-c', 'iis', '--tail=5'])).to.equal('ok');
      expect(seen).to.deep.equal(['system:masters kube-apiserver-kubelet-client /containerLogs/logs/web/iis?tailLines=5']);
      // The node proxy subresource refuses every address that is not global unicast, loopback
      // included (isProxyableHostname, pkg/registry/core/node/strategy.go, v1.34), whatever the
      // flags: kubelet endpoints are reached via pods/log, exec, attach and port-forward only.
      // The stand-in saw no request for it.
      const proxied = await plane().kubectl(['get', '--raw', '/api/v1/nodes/winsim-1/proxy/healthz']);
      expect(proxied.stderr).to.contain('Error from server (BadRequest): address not allowed');
      expect(seen).to.have.length(1);
    } finally {
      const srv = server;
      if (srv) {
        const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
        srv.closeAllConnections();
        await closed;
      }
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('restartApiServer(): the API server comes back on the same address with its data', async () => {
    const before = plane().pids()['kube-apiserver'];
    await plane().stopApiServer();
    expect(plane().apiServerRunning()).to.equal(false);
    const down = await plane().kubectl(['get', 'namespaces'], { timeoutMs: 30_000 });
    expect(down.code).to.equal(1);
    // client-go's text for a refused connection (k8s.io/client-go/rest, v0.34).
    expect(down.stderr).to.contain(`The connection to the server ${plane().server.replace('https://', '')} was refused`);
    await plane().startApiServer();
    expect(plane().pids()['kube-apiserver']).to.be.a('number').and.not.equal(before);
    expect(await plane().kubectlOk(['get', 'namespace', 'gmsa-smoke', '-o', 'name'])).to.equal('namespace/gmsa-smoke\n');
    await plane().restartApiServer();
    expect((await plane().kubectlOk(['get', '--raw', '/readyz'])).trim()).to.equal('ok');
  });

  it('stop() ends every process and removes every file', async () => {
    const pids = Object.values(plane().pids());
    expect(pids).to.have.length(4);
    const { dir } = plane();
    expect(existsSync(dir)).to.equal(true);
    await plane().stop();
    await plane().stop(); // idempotent
    for (const pid of pids) expect(processRunning(pid), `pid ${pid}`).to.equal(false);
    expect(existsSync(dir)).to.equal(false);
    // kubectl kept its discovery cache in the temp dir, not in ~/.kube.
    expect(existsSync(join(homedir(), '.kube', 'cache', 'discovery', plane().server.replace('https://', '').replace(':', '_')))).to.equal(false);
    expect(plane().pids()).to.deep.equal({});
  });
});

describe('test control plane: a start that fails', function () {
  this.timeout(60_000);

  before(function () {
    requireControlPlaneTools(this);
  });

  it('rejects with the failing program\'s output and leaves no process or file behind', async () => {
    // A TMPDIR of its own, so other control planes (other suites, other checkouts) don't count.
    const outer = await mkdtemp(join(tmpdir(), 'cri-winsim-cpfail-'));
    const saved = process.env.TMPDIR;
    let err: unknown;
    let left: string[];
    try {
      process.env.TMPDIR = outer;
      await startControlPlane({ scheduler: false, apiServerArgs: ['--no-such-flag'] });
    } catch (e) {
      err = e;
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      left = readdirSync(outer);
      await rm(outer, { recursive: true, force: true });
    }
    expect(String(err)).to.match(/kube-apiserver at https:\/\/127\.0\.0\.1:\d+: the process exited \(code 1, signal null\) before it was ready/);
    // pflag's text (github.com/spf13/pflag).
    expect(String(err)).to.contain('unknown flag: --no-such-flag');
    expect(liveControlPlanes()).to.deep.equal([]);
    expect(left).to.deep.equal([]);
  });

  it('refuses a node name that is not a DNS subdomain before starting anything', async () => {
    let err: unknown;
    try { await startControlPlane({ nodeNames: ['Bad_Name'] }); } catch (e) { err = e; }
    expect(String(err)).to.contain('node name "Bad_Name" is not a DNS subdomain');
  });
});
