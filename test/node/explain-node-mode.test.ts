// `cri-winsim explain POD --kubeconfig FILE` against a real control plane: the CLI reads the pod
// from the API server and asks the kubelet server of the node that runs it (routes/explain.ts).
// The API server's node proxy refuses the node's loopback address, so the CLI calls the kubelet
// server at the Node's InternalIP and port with the admin kubeconfig's bearer token, which the
// kubelet authenticates by TokenReview and authorizes by SubjectAccessReview (nodes/proxy), as a
// real kubelet would. Two pods on one node process (--ad-mode gmsa-kep): examples/cluster-mode
// gmsa-pod.yaml (every hop ok) and the same pod with a gMSA the node may not use (the domain hop
// broke, docs/failure-modes.md#node-not-allowed); and the node's own credentials, which the kubelet
// refuses (no nodes/proxy). The explanation's texts are cri-winsim's own
// (src/kubelet/explain, src/kubectl/explain-printer.ts); the proxy's refusal is kube-apiserver's
// (pkg/registry/core/node/strategy.go isProxyableHostname, v1.34).
import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startControlPlane, requireControlPlaneTools, type ControlPlane } from '../support/control-plane.js';
import { liveNodeProcesses, startNodeProcess } from '../support/node-process.js';
import { cliPath, repoRoot } from '../support/paths.js';
import { runProcess } from '../support/process.js';
import { until } from '../support/wait.js';
import { kepExampleWith } from '../runtime/windows/kep-example.js';

const NODE = 'expl-1';
const HOPS = ['credential-spec-source', 'admission', 'pod-spec', 'effective-security-context', 'cri-config', 'hand-off', 'hcs-document', 'domain'];

/** The KEP example for a gMSA whose PrincipalsAllowedToRetrieveManagedPassword leaves the node out. */
const DENIED = kepExampleWith((doc) => {
  doc.DomainJoinConfig.MachineAccountName = 'SqlReporting';
  doc.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: 'SqlReporting', Scope: 'DEMO' }, { Name: 'SqlReporting', Scope: 'contoso.com' }];
});

describe('cri-winsim explain --kubeconfig: a pod of a cluster, explained by its node', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let dir: string;
  const uids: Record<string, string> = {};
  const explain = (args: readonly string[]) => runProcess(process.execPath, [cliPath, 'explain', ...args, '--kubeconfig', cp.adminKubeconfig], { killAfterMs: 45_000 });

  before(async function () {
    this.timeout(240_000);
    requireControlPlaneTools(this);
    dir = await mkdtemp(join(tmpdir(), 'cwx-'));
    cp = await startControlPlane({ nodeNames: [NODE], scheduler: false });
    await startNodeProcess(['node', '--kubeconfig', await cp.nodeKubeconfig(NODE), '--hostname-override', NODE, '--state-dir', join(dir, 'state'), '--port', '0',
      '--client-ca-file', cp.kubeletClientCaFile, '--ad-mode', 'gmsa-kep']);
    await cp.ensureNamespace('default');
    const example = parse(await readFile(join(repoRoot, 'examples', 'cluster-mode', 'gmsa-pod.yaml'), 'utf8'));
    delete example.spec.nodeSelector;
    example.spec.nodeName = NODE;
    const denied = structuredClone(example);
    denied.metadata.name = 'gmsa-denied';
    denied.spec.restartPolicy = 'Never';
    denied.spec.securityContext.windowsOptions = { gmsaCredentialSpecName: 'sqlreporting', gmsaCredentialSpec: DENIED };
    await cp.apply(example);
    await cp.apply(denied);
    const settled = (name: string, done: (p: any) => boolean) =>
      until(`${name} settled`, 120_000, async () => {
        const p = JSON.parse(await cp.kubectlOk(['get', 'pod', name, '-o', 'json']));
        return done(p) ? p : undefined;
      });
    uids['gmsa-app'] = (await settled('gmsa-app', (p) => p.status?.phase === 'Running' && p.status?.containerStatuses?.[0]?.ready === true)).metadata.uid;
    uids['gmsa-denied'] = (await settled('gmsa-denied', (p) => {
      // StartContainer refused (gmsa-kep): Failed under restartPolicy Never, once the kubelet says so.
      const state = p.status?.containerStatuses?.[0]?.state;
      return p.status?.phase === 'Failed' || state?.terminated !== undefined || (state?.waiting?.reason ?? 'ContainerCreating') !== 'ContainerCreating';
    })).metadata.uid;
  });

  after(async function () {
    this.timeout(90_000);
    for (const p of liveNodeProcesses()) await p.stop();
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("the API server's node proxy refuses the node's loopback address (so the CLI goes to the kubelet directly)", async () => {
    const proxied = await cp.kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/explain/default/gmsa-app`]);
    expect([proxied.code, proxied.stderr]).to.deep.equal([1, 'Error from server (BadRequest): address not allowed\n']);
  });

  it('gmsa-pod.yaml: every hop ok, no broken hop (table and -o json)', async () => {
    const table = await explain(['gmsa-app', '-n', 'default']);
    expect(table.code, table.stderr).to.equal(0);
    const lines = table.stdout.split('\n');
    expect(lines.slice(0, 2)).to.deep.equal([`Pod: default/gmsa-app (${uids['gmsa-app']})`, 'Broken: none']);
    for (const hop of HOPS) expect(table.stdout, hop).to.match(new RegExp(`^\\s*${hop}\\s+ok\\s`, 'm'));
    expect(table.stdout).to.not.match(/\b(broken|unknown|not-reached)\b/);

    const json = await explain(['default/gmsa-app', '-o', 'json']);
    expect(json.code, json.stderr).to.equal(0);
    const e = JSON.parse(json.stdout);
    expect([e.apiVersion, e.kind, e.pod]).to.deep.equal(['criwinsim.io/v1', 'IdentityExplanation', { namespace: 'default', name: 'gmsa-app', uid: uids['gmsa-app'] }]);
    expect(e.broken).to.equal(undefined);
    expect(e.hops.map((h: any) => [h.hop, h.verdict])).to.deep.equal(HOPS.slice(0, 3).map((h) => [h, 'ok']));
    expect(e.hops[1].received).to.equal('admitted by the API server (its record is not on the node)');
    expect(e.containers.map((c: any) => c.name)).to.deep.equal(['app']);
    expect(e.containers[0].hops.map((h: any) => [h.hop, h.verdict])).to.deep.equal(HOPS.slice(3).map((h) => [h, 'ok']));
    // The container runs as the image's user, not SYSTEM or NETWORK SERVICE: the logon has no UPN.
    expect(e.containers[0].hops.at(-1)).to.deep.include({ received: 'User Manager\\ContainerAdministrator as DEMO\\WebApplication1$', changed: 'secure channel with dc1.contoso.com' });
  });

  it('a gMSA the node may not use: the domain hop broke, with its section of docs/failure-modes.md', async () => {
    const table = await explain(['gmsa-denied', '-n', 'default']);
    expect(table.code, table.stderr).to.equal(0);
    const lines = table.stdout.split('\n');
    expect(lines[0]).to.equal(`Pod: default/gmsa-denied (${uids['gmsa-denied']})`);
    // The node process of one node keeps the node file's computer account, WINNODE1.
    expect(lines[1], table.stdout).to.equal(
      "Broken: domain (container app): StartContainer: FailedPrecondition node WINNODE1 (WINNODE1$) is not allowed to retrieve the managed password of gMSA DEMO\\SqlReporting: it is not in the gMSA's PrincipalsAllowedToRetrieveManagedPassword (Test-ADServiceAccount SqlReporting would return False; ERROR_NO_TRUST_LSA_SECRET)",
    );
    expect(lines[2]).to.equal('  See docs/failure-modes.md#node-not-allowed');

    const json = await explain(['gmsa-denied', '-n', 'default', '-o', 'json']);
    expect(json.code, json.stderr).to.equal(0);
    const e = JSON.parse(json.stdout);
    expect(e.broken).to.deep.include({ hop: 'domain', container: 'app', docs: 'docs/failure-modes.md#node-not-allowed' });
    expect(e.containers[0].hops.map((h: any) => [h.hop, h.verdict])).to.deep.equal([
      ['effective-security-context', 'ok'], ['cri-config', 'ok'], ['hand-off', 'ok'], ['hcs-document', 'ok'], ['domain', 'broken'],
    ]);
  });

  it("the kubelet authorizes the caller by SubjectAccessReview: the node's own credentials lack nodes/proxy", async () => {
    const res = await runProcess(process.execPath, [cliPath, 'explain', 'gmsa-app', '-n', 'default', '--kubeconfig', await cp.nodeKubeconfig(NODE)], { killAfterMs: 45_000 });
    expect([res.code, res.stdout]).to.deep.equal([1, '']);
    // The kubelet's Forbidden text (pkg/kubelet/server/server.go InstallAuthFilter, v1.34); the
    // prefix naming the kubelet's address is cri-winsim's own.
    expect(res.stderr).to.match(/^error: Error from the kubelet at 127\.\d+\.\d+\.\d+:\d+: 403 Forbidden \(user=system:node:expl-1, verb=get, resource=nodes, subresource\(s\)=\[proxy\]\)\n$/);
  });

  it('a pod the API server does not have: NotFound (1)', async () => {
    const missing = await explain(['nosuch', '-n', 'default']);
    expect([missing.code, missing.stdout, missing.stderr]).to.deep.equal([1, '', 'Error from server (NotFound): pods "nosuch" not found\n']);
  });
});
