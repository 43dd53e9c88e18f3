// `cri-winsim explain` names the hop that broke, for every failure mode of docs/failure-modes.md,
// in both AD modes: the pods go through the fake kubelet's pipeline (admission, effective security
// context, CRI config) into an in-process runtime on the node of the mode (the fixtures of
// test/e2e/windows-identity-failures.test.ts), and the explanation is read from the records the
// hops left. The texts of the explanation are cri-winsim's own.
import { expect } from 'chai';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { DirectoryClusterSource } from '../../src/apiserver/cluster.js';
import { defaultRequestingUser, type GmsaDesign } from '../../src/apiserver/admission.js';
import { unaryCall } from '../../src/cri/proto.js';
import { createIdentityClient, type IdentityClient } from '../../src/cri/identity-service.js';
import { explainRecordedPod, explainRefusedPod } from '../../src/kubelet/explain/gather-explanation.js';
import { HOPS, type IdentityExplanation } from '../../src/kubelet/explain/identity-explanation.js';
import { AdmissionRefusalStore } from '../../src/kubelet/explain/admission-refusals.js';
import { identityFailureEvents, IDENTITY_OPERATION_FAILED } from '../../src/kubelet/explain/identity-events.js';
import { PodRecordStore, type PodRecord } from '../../src/kubelet/pod-records.js';
import { runPods } from '../../src/kubelet/run-pods.js';
import type { WindowsFaultStep } from '../../src/runtime/windows/windows-runtime.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC, kepExampleWith, startInProcessRuntime, writeNodeFile, type InProcessRuntime } from '../e2e/windows-support.js';
import { parseExplainOutput, printExplanation } from '../../src/kubectl/explain-printer.js';
import { cliPath } from '../support/paths.js';
import { runProcess } from '../support/process.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));
const CCG_PLUGIN = '{859E1386-BDB4-49E8-85C7-3070B13920E1}';
const IIS = 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022';

type NodeName = 'WINNODE1' | 'workgroup' | 'dc-down' | 'ccg-broken';

const withAccount = (name: string): string =>
  kepExampleWith((doc) => {
    doc.DomainJoinConfig.MachineAccountName = name;
    doc.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: name, Scope: 'DEMO' }, { Name: name, Scope: 'contoso.com' }];
  });

interface ModeCase {
  /** The docs/failure-modes.md anchor the explanation must point to (undefined: nothing broke). */
  readonly anchor: string | undefined;
  readonly hop: string | undefined;
  readonly node: NodeName;
  /** The GMSACredentialSpec's credspec (JSON text); none: the pod names no gMSA. */
  readonly credentialSpec?: string;
  readonly runAsUserName?: string;
  readonly design?: GmsaDesign;
  readonly fault?: WindowsFaultStep;
  /** Only in this AD mode (the others: both). */
  readonly mode?: 'gmsa-kep' | 'windows-server';
}

/** One case per section of docs/failure-modes.md (and the hand-off errors' section). */
const CASES: Record<string, ModeCase> = {
  ok: { anchor: undefined, hop: undefined, node: 'WINNODE1', credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC },
  'no-credential-spec': { anchor: 'no-credential-spec', hop: 'admission', node: 'WINNODE1', credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC, design: 'kep-configmap' },
  'node-not-allowed': { anchor: 'node-not-allowed', hop: 'domain', node: 'WINNODE1', credentialSpec: withAccount('SqlReporting') },
  'node-not-domain-joined': { anchor: 'node-not-domain-joined', hop: 'domain', node: 'workgroup', credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC },
  'gmsa-not-found': { anchor: 'gmsa-not-found', hop: 'domain', node: 'WINNODE1', credentialSpec: withAccount('WebApplication2') },
  'domain-unknown': {
    anchor: 'domain-unknown',
    hop: 'domain',
    node: 'WINNODE1',
    credentialSpec: kepExampleWith((doc) => Object.assign(doc.DomainJoinConfig, { DnsName: 'fabrikam.com', DnsTreeName: 'fabrikam.com', NetBiosName: 'FABRIKAM' })),
  },
  'domain-mismatch': { anchor: 'domain-mismatch', hop: 'domain', node: 'WINNODE1', credentialSpec: kepExampleWith((doc) => (doc.DomainJoinConfig.Sid = 'S-1-5-21-1-2-3')) },
  'domain-controller-unreachable': { anchor: 'domain-controller-unreachable', hop: 'domain', node: 'dc-down', credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC },
  'ccg-plugin-failure': {
    anchor: 'ccg-plugin-failure',
    hop: 'domain',
    node: 'ccg-broken',
    credentialSpec: kepExampleWith((doc) => (doc.ActiveDirectoryConfig.HostAccountConfig = { PortableCcgVersion: '1', PluginGUID: CCG_PLUGIN, PluginInput: 'contoso.com:ccg-reader' })),
  },
  'unknown-user': { anchor: 'unknown-user', hop: 'hcs-document', node: 'WINNODE1', credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC, runAsUserName: 'WebAdmin' },
  'invalid-credential-spec': { anchor: 'invalid-credential-spec', hop: 'hcs-document', node: 'WINNODE1', credentialSpec: kepExampleWith((doc) => delete (doc.DomainJoinConfig as Partial<typeof doc.DomainJoinConfig>).Sid) },
  'errors-of-the-credential-spec-hand-off': { anchor: 'errors-of-the-credential-spec-hand-off', hop: 'hand-off', node: 'WINNODE1', credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC, fault: 'credential-spec-read' },
};

/** The cluster of examples/cluster plus a GMSACredentialSpec per case that the webapp account may use. */
async function writeCluster(dir: string): Promise<string> {
  const cluster = join(dir, 'cluster');
  await cp(join(examples, 'cluster'), cluster, { recursive: true });
  const docs: unknown[] = Object.entries(CASES)
    .filter(([, c]) => c.credentialSpec !== undefined)
    .map(([name, c]) => ({ apiVersion: 'windows.k8s.io/v1', kind: 'GMSACredentialSpec', metadata: { name: `case-${name}` }, credspec: JSON.parse(c.credentialSpec!) }));
  docs.push(
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'explain-cases' }, rules: [{ apiGroups: ['windows.k8s.io'], resources: ['gmsacredentialspecs'], verbs: ['use'] }] },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'webapp-uses-explain-cases', namespace: 'contoso-apps' },
      subjects: [{ kind: 'ServiceAccount', name: 'webapp', namespace: 'contoso-apps' }],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'explain-cases' },
    },
  );
  await writeFile(join(cluster, 'explain-cases.yaml'), docs.map((d) => toYaml(d)).join('---\n'));
  return cluster;
}

function podFor(name: string, c: ModeCase): Record<string, unknown> {
  const windowsOptions: Record<string, string> = {};
  if (c.credentialSpec !== undefined) windowsOptions['gmsaCredentialSpecName'] = `case-${name}`;
  windowsOptions['runAsUserName'] = c.runAsUserName ?? 'NT AUTHORITY\\NETWORK SERVICE';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `explain-${name}`, namespace: 'contoso-apps' },
    spec: { serviceAccountName: 'webapp', securityContext: { windowsOptions }, containers: [{ name: 'iis', image: IIS }] },
  };
}

const brokenOf = (e: IdentityExplanation): { hop: string | undefined; docs: string | undefined } => ({ hop: e.broken?.hop, docs: e.broken?.docs });

describe('cri-winsim explain: the first hop that broke, per failure mode', function () {
  this.timeout(60_000);
  let dir = '';
  let cluster = '';
  const nodeFiles = new Map<NodeName, string | undefined>();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'explain-'));
    cluster = await writeCluster(dir);
    nodeFiles.set('WINNODE1', undefined);
    nodeFiles.set('workgroup', await writeNodeFile(dir, 'workgroup.yaml', (n) => delete n.node.domain));
    nodeFiles.set('dc-down', await writeNodeFile(dir, 'dc-down.yaml', (n) => {
      for (const dc of n.domains[0]!.domainControllers) dc.reachable = false;
    }));
    const ccg = parseYaml(await readFile(join(examples, 'nodes', 'ccg-workgroup.yaml'), 'utf8'));
    ccg.node.ccgPlugin.healthy = false;
    await writeFile(join(dir, 'ccg-broken.yaml'), toYaml(ccg));
    nodeFiles.set('ccg-broken', join(dir, 'ccg-broken.yaml'));
  });
  after(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  /** Runs the case's pod on a runtime of its own and explains it. */
  async function explainCase(name: string, c: ModeCase, mode: 'gmsa-kep' | 'windows-server', exec?: string[]): Promise<{ explanation: IdentityExplanation; record: PodRecord; identity: IdentityClient; rt: InProcessRuntime }> {
    const root = await mkdtemp(join(dir, `${name}-${mode}-`));
    const rt = await startInProcessRuntime({
      adMode: mode,
      nodeFile: nodeFiles.get(c.node),
      ...(c.fault === undefined ? {} : { faults: { fail: (step) => (step === c.fault ? new Error('the credential spec went missing') : undefined) } }),
    }, root);
    const file = join(root, 'pod.yaml');
    await writeFile(file, toYaml(podFor(name, c)));
    const records = new PodRecordStore(join(root, 'kubelet'));
    await runPods(rt.cri, [file], { cluster: new DirectoryClusterSource(cluster), user: defaultRequestingUser, podLogsRoot: join(root, 'pod-logs'), records, ...(c.design === undefined ? {} : { design: c.design }) });
    const [record] = await records.list();
    if (record === undefined) throw new Error(`${name}: no pod record`);
    const containerId = record.containers['iis']?.containerId;
    // An identity operation inside, for the runtime's journal (a container that did not start refuses it).
    if (exec !== undefined && containerId !== undefined) await unaryCall(rt.cri.runtime, 'ExecSync', { container_id: containerId, cmd: exec, timeout: '5' }).catch(() => undefined);
    const identity = createIdentityClient(rt.endpoint);
    return { explanation: await explainRecordedPod(identity, record, 5000), record, identity, rt };
  }

  for (const mode of ['gmsa-kep', 'windows-server'] as const) {
    for (const [name, c] of Object.entries(CASES)) {
      if (c.mode !== undefined && c.mode !== mode) continue;
      const expected = c.anchor === undefined ? 'no broken hop' : `${c.hop} → docs/failure-modes.md#${c.anchor}`;
      it(`--ad-mode ${mode}, ${name}: ${expected}`, async () => {
        const { explanation, identity, rt } = await explainCase(name, c, mode, ['nltest', '/query']);
        try {
          expect(brokenOf(explanation), JSON.stringify(explanation, null, 2)).to.deep.equal({
            hop: c.hop,
            docs: c.anchor === undefined ? undefined : `docs/failure-modes.md#${c.anchor}`,
          });
          // The hops after the broken one were not reached, or are themselves the consequence.
          const hops = explanation.containers[0]?.hops.map((h) => h.hop) ?? [];
          if (c.hop === undefined || HOPS.indexOf(c.hop as never) >= HOPS.indexOf('effective-security-context')) expect(hops).to.deep.equal(HOPS.slice(3));
          if (c.anchor === undefined) expect(explanation.containers[0]!.hops.find((h) => h.hop === 'domain')!.changed).to.match(/^secure channel with dc1\.contoso\.com, UPN WebApplication1\$@contoso\.com/);
        } finally {
          identity.close();
          await rt.close();
        }
      });
    }
  }

  it('a failed nltest inside the container becomes one IdentityOperationFailed event, once', async () => {
    const { record, identity, rt } = await explainCase('node-not-allowed', CASES['node-not-allowed']!, 'windows-server', ['nltest', '/query']);
    try {
      const first = await identityFailureEvents(identity, record, 5000);
      expect(first.events).to.deep.equal([{ type: 'Warning', reason: IDENTITY_OPERATION_FAILED, message: 'nltest /query: 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET', container: 'iis' }]);
      const again = await identityFailureEvents(identity, { ...record, identityEventsSeen: first.seen }, 5000);
      expect(again.events).to.deep.equal([]);
    } finally {
      identity.close();
      await rt.close();
    }
  });

  it('-o json is the stable object; the table names the broken hop and its section', async () => {
    const { explanation, identity, rt } = await explainCase('node-not-allowed', CASES['node-not-allowed']!, 'windows-server');
    try {
      const parsed = JSON.parse(printExplanation(explanation, parseExplainOutput('json')));
      expect(Object.keys(parsed)).to.deep.equal(['apiVersion', 'kind', 'pod', 'broken', 'hops', 'containers']);
      expect([parsed.apiVersion, parsed.kind]).to.deep.equal(['criwinsim.io/v1', 'IdentityExplanation']);
      expect(parsed.pod).to.include({ namespace: 'contoso-apps', name: 'explain-node-not-allowed' });
      expect(Object.keys(parsed.broken)).to.deep.equal(['hop', 'container', 'detail', 'docs']);
      expect(parsed.hops.map((h: { hop: string }) => h.hop)).to.deep.equal(['credential-spec-source', 'admission', 'pod-spec']);
      expect(parsed.containers.map((c: { name: string }) => c.name)).to.deep.equal(['iis']);
      for (const h of [...parsed.hops, ...parsed.containers[0].hops]) {
        expect(Object.keys(h).slice(0, 4)).to.deep.equal(['hop', 'received', 'changed', 'verdict']);
        expect(h.verdict).to.be.oneOf(['ok', 'broken', 'none', 'not-reached', 'unknown']);
      }
      const table = printExplanation(explanation, 'table');
      expect(table).to.contain('Broken: domain (container iis): node WINNODE1 (WINNODE1$) is not allowed to retrieve the managed password of gMSA DEMO\\SqlReporting');
      expect(table).to.contain('  See docs/failure-modes.md#node-not-allowed\n');
      expect(() => parseExplainOutput('wide-ish')).to.throw('unable to match a printer suitable for the output format "wide-ish", allowed formats are: json,yaml');
    } finally {
      identity.close();
      await rt.close();
    }
  });

  describe("the demo's pods (examples/pods on WINNODE1, windows-server)", () => {
    let rt: InProcessRuntime | undefined;
    let identity: IdentityClient | undefined;
    let records: PodRecordStore;
    const explained = new Map<string, IdentityExplanation>();

    before(async () => {
      const root = await mkdtemp(join(dir, 'demo-'));
      rt = await startInProcessRuntime({}, root);
      records = new PodRecordStore(join(root, 'kubelet'));
      const files = ['run-as-username-pod.yaml', 'run-as-username-container.yaml', 'gmsa-pod-level.yaml', 'gmsa-container-level.yaml', 'gmsa-invalid-credspec.yaml', 'gmsa-node-not-authorised.yaml', 'gmsa-service-account-not-authorised.yaml'];
      await runPods(rt.cri, files.map((f) => join(examples, 'pods', f)), { cluster: new DirectoryClusterSource(join(examples, 'cluster')), user: defaultRequestingUser, podLogsRoot: join(root, 'pod-logs'), records });
      identity = createIdentityClient(rt.endpoint);
      for (const record of await records.list()) explained.set(record.pod.metadata!.name!, await explainRecordedPod(identity, record, 5000));
      const refused = await new AdmissionRefusalStore(join(root, 'kubelet')).load('contoso-apps', 'reporting-webapp');
      if (refused !== undefined) explained.set('reporting-webapp', explainRefusedPod(refused.pod, refused.refusal));
    });
    after(async () => {
      identity?.close();
      await rt?.close();
    });

    for (const name of ['webapp-gmsa', 'webapp-gmsa-with-logger']) {
      it(`${name}: every hop ok, the domain answers for WebApplication1 in each container`, () => {
        const e = explained.get(name)!;
        expect(e.broken).to.equal(undefined);
        expect(e.hops.map((h) => h.verdict)).to.deep.equal(['ok', 'ok', 'ok']);
        expect(e.hops[1]!.changed).to.match(/^inlined GMSACredentialSpec\/webapplication1 into (pod|container)/);
        for (const c of e.containers) {
          const verdicts = Object.fromEntries(c.hops.map((h) => [h.hop, h.verdict]));
          expect(verdicts, c.name).to.include({ 'cri-config': 'ok', 'hand-off': 'ok', 'hcs-document': 'ok' });
          if (verdicts['domain'] === 'ok') expect(c.hops.at(-1)!.received).to.match(/as DEMO\\(WebApplication1|EventLogger)\$$/);
          else expect(verdicts['domain']).to.equal('none');
        }
      });
    }

    for (const name of ['run-as-username-pod-demo', 'run-as-username-container-demo']) {
      it(`${name}: no gMSA asked, none carried, nothing broken`, () => {
        const e = explained.get(name)!;
        expect(e.broken).to.equal(undefined);
        expect(e.hops.map((h) => h.verdict)).to.deep.equal(['none', 'none', 'none']);
        expect(e.containers[0]!.hops.find((h) => h.hop === 'domain')!.verdict).to.equal('none');
      });
    }

    it('reporting-sql: the domain, node-not-allowed; webapp-invalid-credspec: the HCS document; reporting-webapp: admission, by the webhook', () => {
      expect(brokenOf(explained.get('reporting-sql')!)).to.deep.equal({ hop: 'domain', docs: 'docs/failure-modes.md#node-not-allowed' });
      expect(brokenOf(explained.get('webapp-invalid-credspec')!)).to.deep.equal({ hop: 'hcs-document', docs: 'docs/failure-modes.md#invalid-credential-spec' });
      const refused = explained.get('reporting-webapp')!;
      expect(refused.broken?.hop).to.equal('admission');
      expect(refused.broken?.detail).to.equal(
        'admission-webhook.windows-gmsa.sigs.k8s.io (403): admission webhook "admission-webhook.windows-gmsa.sigs.k8s.io" denied the request: service account "reporting" is not authorized to `use` GMSA cred spec "webapplication1"',
      );
      expect(refused.containers).to.deep.equal([]);
    });
  });
});

const cli = (args: readonly string[]) => runProcess(process.execPath, [cliPath, ...args], { killAfterMs: 45_000 });

describe('cri-winsim explain on the command line', function () {
  this.timeout(90_000);
  let rt: InProcessRuntime | undefined;

  before(async () => {
    rt = await startInProcessRuntime({});
  });
  after(async () => {
    await rt?.close();
    if (rt !== undefined) await rm(rt.dir, { recursive: true, force: true });
  });

  it('explains a pod `kubelet run` ran, -o json for machines; a bad -o is a usage error (2); an unknown pod NotFound (1)', async () => {
    const flags = ['--container-runtime-endpoint', rt!.endpoint, '--root-dir', join(rt!.dir, 'kubelet')];
    const run = await cli(['kubelet', 'run', join(examples, 'pods', 'gmsa-node-not-authorised.yaml'), '--cluster', join(examples, 'cluster'), ...flags]);
    expect(run.code, run.stderr).to.equal(0);
    const table = await cli(['explain', 'contoso-apps/reporting-sql', ...flags]);
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout.split('\n').slice(1, 3)).to.deep.equal([
      "Broken: domain (container reporter): node WINNODE1 (WINNODE1$) is not allowed to retrieve the managed password of gMSA DEMO\\SqlReporting: it is not in the gMSA's PrincipalsAllowedToRetrieveManagedPassword (Test-ADServiceAccount SqlReporting would return False; ERROR_NO_TRUST_LSA_SECRET)",
      '  See docs/failure-modes.md#node-not-allowed',
    ]);
    const json = await cli(['explain', 'reporting-sql', '-n', 'contoso-apps', '-o', 'json', ...flags]);
    expect(JSON.parse(json.stdout).broken.hop).to.equal('domain');
    const usage = await cli(['explain', 'reporting-sql', '-o', 'xml', ...flags]);
    expect([usage.code, usage.stderr]).to.deep.equal([2, 'error: unable to match a printer suitable for the output format "xml", allowed formats are: json,yaml\nSee \'cri-winsim explain --help\' for usage.\n']);
    const missing = await cli(['explain', 'nosuch', ...flags]);
    expect([missing.code, missing.stderr]).to.deep.equal([1, 'Error from server (NotFound): pods "nosuch" not found\n']);
  });
});
