// The domain as a cluster resource, against a real control plane (etcd, kube-apiserver,
// kube-controller-manager from the pinned modules under tools/) and the real kubectl and crictl:
// the API server takes examples/cluster-mode/domain-crd.yaml and refuses by its schema what
// `ad apply` refuses; one node process of two nodes follows the SimulatedDomain, so one
// `kubectl apply` changes what running containers on both nodes see, and the process reports on
// the object's status.
// Texts pinned: kube-apiserver v1.34 schema validation (staging/src/k8s.io/apiextensions-apiserver
// pkg/apiserver/validation, "in body must be of type", "in body should match") and strict field
// validation ("unknown field", staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json);
// nltest's texts as docs/failure-modes.md "Domain controller or DNS unreachable" gives them.
import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { startControlPlane, requireControlPlaneTools, type ControlPlane } from '../support/control-plane.js';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { liveNodeProcesses, startNodeProcess, type NodeProcess } from '../support/node-process.js';
import { repoRoot, requireCriTool } from '../support/paths.js';
import { until } from '../support/wait.js';

const NLTEST_OK =
  'Flags: b0 HAS_IP  HAS_TIMESERV\n' +
  'Trusted DC Name \\\\dc1.contoso.com\n' +
  'Trusted DC Connection Status Status = 0 0x0 NERR_Success\n' +
  'Trust Verification Status = 0 0x0 NERR_Success\n' +
  'The command completed successfully\n';
const NLTEST_NO_LOGON_SERVERS = 'I_NetLogonControl failed: Status = 1311 0x51f ERROR_NO_LOGON_SERVERS\n';

const example = (file: string) => join(repoRoot, 'examples', 'cluster-mode', file);

describe('node mode: the domain as a cluster resource (SimulatedDomain)', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let dir: string;
  let nodes: NodeProcess | undefined;
  let domain: any;
  const target = (node: string) => ({ endpoint: `unix://${join(dir, 'state', node, 'cri.sock')}`, dir: join(dir, 'state', node) });
  const kubectlJson = async (args: string[]): Promise<any> => JSON.parse(await cp.kubectlOk([...args, '-o', 'json']));
  /** The example object with `change` made to its spec. */
  const domainWith = (change: (spec: any) => void = () => {}): any => {
    const copy = structuredClone(domain);
    change(copy.spec);
    return copy;
  };
  const dcDown = () => domainWith((s) => (s.domains[0].domainControllers[0].reachable = false));
  const containers: Record<string, string> = {};
  const nltest = async (node: string) => {
    const res = await runCrictl(target(node), ['exec', containers[node]!, 'nltest', '/sc_verify:contoso.com'], { check: false });
    // Streaming exec: crictl prints what the command wrote and exits with its code (`exec -s` prints
    // only crictl's own error on a non-zero exit). Compared without line endings (CRLF from cmd.exe).
    return { code: res.code, stdout: `${res.stdout.replace(/\r\n/g, '\n').trimEnd()}\n` };
  };
  const statusEntry = async (generation: number) =>
    until(`status of generation ${generation}`, 20_000, async () => {
      const entry = (await kubectlJson(['get', 'simulateddomain', 'default'])).status?.nodeProcesses?.['dom-1'];
      return entry?.observedGeneration === generation ? entry : undefined;
    });

  before(async function () {
    this.timeout(240_000);
    requireControlPlaneTools(this);
    requireCriTool(this, 'crictl');
    dir = await mkdtemp(join(tmpdir(), 'cwd-'));
    domain = parse(await readFile(example('domain.yaml'), 'utf8'));
    cp = await startControlPlane({ nodeNames: ['dom-solo'], scheduler: false });
  });

  after(async function () {
    this.timeout(90_000);
    for (const p of liveNodeProcesses()) await p.stop();
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('the API server takes the CRD and refuses, by its schema, an object `ad apply` would refuse', async () => {
    await cp.kubectlOk(['apply', '-f', example('domain-crd.yaml')]);
    await cp.kubectlOk(['wait', '--for=condition=Established', '--timeout=30s', 'crd/simulateddomains.cri-winsim.dev']);
    const wrongType = await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(domainWith((s) => (s.domains[0].domainControllers[0].reachable = 'no'))) });
    expect(wrongType.code).to.equal(1);
    expect(wrongType.stderr).to.contain('The SimulatedDomain "default" is invalid: spec.domains[0].domainControllers[0].reachable: Invalid value: "string": spec.domains[0].domainControllers[0].reachable in body must be of type boolean: "string"');
    const badSid = await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(domainWith((s) => (s.domains[0].sid = 'S-1-5-21-x'))) });
    expect(badSid.stderr).to.contain('spec.domains[0].sid: Invalid value: "S-1-5-21-x": spec.domains[0].sid in body should match \'^S-1-5-21-[0-9]{1,10}-[0-9]{1,10}-[0-9]{1,10}$\'');
    const unknown = await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(domainWith((s) => (s.domains[0].domainControllers[0].reachble = false))) });
    expect(unknown.stderr).to.contain('unknown field "spec.domains[0].domainControllers[0].reachble"');
    const twice = await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(domainWith((s) => (s.domains[0].domainControllers[0].unreachableFrom = ['DOM-1', 'DOM-1']))) });
    expect(twice.stderr).to.contain('spec.domains[0].domainControllers[0].unreachableFrom[1]: Duplicate value: "DOM-1"');
    expect((await cp.kubectl(['get', 'simulateddomain', 'default'])).stderr).to.contain('NotFound');
  });

  it('one kubectl apply takes the domain controller down for containers on both nodes, and back', async () => {
    nodes = await startNodeProcess(['node', '--kubeconfig', cp.adminKubeconfig, '--nodes', '2', '--node-name-prefix', 'dom', '--state-dir', join(dir, 'state'), '--port', '0']);
    await cp.ensureNamespace('default');
    // No object yet: the nodes run on their node file's domain.
    // examples/cluster-mode/gmsa-pod.yaml, once on each node.
    const pod = parse(await readFile(example('gmsa-pod.yaml'), 'utf8'));
    for (const node of ['dom-1', 'dom-2']) {
      const copy = structuredClone(pod);
      copy.metadata.name = `app-${node}`;
      delete copy.spec.nodeSelector;
      copy.spec.nodeName = node;
      await cp.apply(copy);
    }
    for (const node of ['dom-1', 'dom-2']) {
      containers[node] = await until(`app-${node} running`, 60_000, async () => {
        const ps = await crictlJson(target(node), ['ps', '--label', `io.kubernetes.pod.name=app-${node}`, '-o', 'json']);
        return ps.containers[0]?.id as string | undefined;
      });
      expect(await nltest(node)).to.deep.equal({ code: 0, stdout: NLTEST_OK });
    }

    await cp.apply(domain);
    expect(await statusEntry(1)).to.deep.include({ nodeCount: 2, lastNode: 'dom-2', observedGeneration: 1, appliedGeneration: 1, result: 'Applied' });
    await cp.apply(dcDown());
    for (const node of ['dom-1', 'dom-2']) {
      expect(await until(`${node} sees the DC down`, 10_000, async () => {
        const r = await nltest(node);
        return r.code === 0 ? undefined : r;
      })).to.deep.equal({ code: 1, stdout: NLTEST_NO_LOGON_SERVERS });
    }
    expect(await statusEntry(2)).to.deep.include({ observedGeneration: 2, appliedGeneration: 2, result: 'Applied' });
    const table = await cp.kubectlOk(['get', 'simulateddomain']);
    expect(table).to.match(/^NAME\s+DOMAIN\s+GENERATION\s+AGE\n/);
    expect(table).to.match(/^default\s+contoso\.com\s+2\s+\S+\n$/m);

    await cp.apply(domain);
    for (const node of ['dom-1', 'dom-2']) {
      expect(await until(`${node} sees the DC back`, 10_000, async () => {
        const r = await nltest(node);
        return r.code === 0 ? r : undefined;
      })).to.deep.equal({ code: 0, stdout: NLTEST_OK });
    }
    expect(await statusEntry(3)).to.deep.include({ appliedGeneration: 3, result: 'Applied' });
    expect(nodes.lines.filter((l) => l.includes('domain resource applied'))).to.have.length(3);
  });

  it("reports a spec the nodes refuse on the object's status, and changes nothing", async () => {
    await cp.apply(domainWith((s) => {
      s.domains[0].domainControllers[0].reachable = false;
      s.domains.push({ ...structuredClone(s.domains[0]), netbiosName: 'OTHER' });
    }));
    const entry = await statusEntry(4);
    expect(entry).to.deep.include({
      observedGeneration: 4,
      appliedGeneration: 3,
      result: 'Rejected',
      message: 'SimulatedDomain/default: domains[1].dnsName: "contoso.com" is already defined by domains[0]',
    });
    expect(nodes!.logged('domain resource rejected; the nodes keep their domain')).to.equal(true);
    for (const node of ['dom-1', 'dom-2']) expect(await nltest(node)).to.deep.equal({ code: 0, stdout: NLTEST_OK });
  });

  it("when the object is deleted, the nodes go back to their node file's domain; on shutdown the process takes its status entry off", async () => {
    await cp.apply(dcDown());
    await statusEntry(5);
    for (const node of ['dom-1', 'dom-2']) await until(`${node} sees the DC down`, 10_000, async () => ((await nltest(node)).code === 1 ? true : undefined));
    await cp.kubectlOk(['delete', 'simulateddomain', 'default']);
    for (const node of ['dom-1', 'dom-2']) {
      expect(await until(`${node} back on its node file`, 10_000, async () => {
        const r = await nltest(node);
        return r.code === 0 ? r : undefined;
      })).to.deep.equal({ code: 0, stdout: NLTEST_OK });
    }
    expect(nodes!.logged("domain resource is gone: nodes back to their node file's domain")).to.equal(true);

    // Created again (a new object): applied; then the process stops and leaves no entry behind.
    await cp.apply(domain);
    await until('generation 1 of the new object applied', 20_000, async () => {
      const entry = (await kubectlJson(['get', 'simulateddomain', 'default'])).status?.nodeProcesses?.['dom-1'];
      return entry?.appliedGeneration === 1 ? entry : undefined;
    });
    await nodes!.stop();
    expect((await kubectlJson(['get', 'simulateddomain', 'default'])).status.nodeProcesses ?? {}).to.deep.equal({});
  });

  it("a node with its own credentials (system:node:NAME) follows the resource with rbac.yaml's rules bound to system:nodes", async () => {
    const rbac = parseAllDocuments(await readFile(example('rbac.yaml'), 'utf8')).map((d) => d.toJS());
    const rules = rbac.find((d) => d.kind === 'ClusterRole').rules.filter((r: any) => r.apiGroups.includes('cri-winsim.dev'));
    expect(rules).to.have.length(2);
    await cp.grantToNodes('cri-winsim-domain', rules);
    await cp.apply(dcDown());
    const generation = (await kubectlJson(['get', 'simulateddomain', 'default'])).metadata.generation;
    const solo = await startNodeProcess(['node', '--kubeconfig', await cp.nodeKubeconfig('dom-solo'), '--hostname-override', 'dom-solo', '--state-dir', join(dir, 'solo'), '--port', '0']);
    const entry = await until('the entry of dom-solo', 20_000, async () => (await kubectlJson(['get', 'simulateddomain', 'default'])).status?.nodeProcesses?.['dom-solo']);
    expect(entry).to.deep.include({ nodeCount: 1, lastNode: 'dom-solo', observedGeneration: generation, appliedGeneration: generation, result: 'Applied' });
    expect(solo.logged('not allowed to watch')).to.equal(false);
    await solo.stop();
  });
});
