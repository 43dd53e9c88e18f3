import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceError } from '@grpc/grpc-js';
import { createActiveDirectoryClient } from '../../../src/cri/ad-proto.js';
import { unaryCall } from '../../../src/cri/proto.js';
import { NodeRuntime } from '../../../src/runtime/node-runtime.js';
import { DEFAULT_NODE_FILE } from '../../../src/runtime/windows/default-node.js';
import { LiveDomain, type ActiveDirectoryDocument } from '../../../src/runtime/windows/live-domain.js';
import type { DomainSpec } from '../../../src/runtime/windows/node-file.js';
import { repoRoot } from '../../support/paths.js';
import {
  createWindowsContainer,
  execSync,
  IIS,
  KEP_EXAMPLE_CREDENTIAL_SPEC,
  kepExampleWith,
  removeAllPods,
  startInProcessRuntime,
  windowsContainerConfig,
  windowsPodConfig,
  type InProcessRuntime,
} from '../../e2e/windows-support.js';

const CCG_PLUGIN = '{859E1386-BDB4-49E8-85C7-3070B13920E1}';

/** The embedded node's AD (WINNODE1 in contoso.com), as a document to change. */
function contoso(change: (domain: DomainSpec) => void = () => {}): ActiveDirectoryDocument {
  const domains = structuredClone(DEFAULT_NODE_FILE.domains);
  change(domains[0]!);
  return { domains };
}

const gmsa = (d: DomainSpec, name: string) => d.gmsas!.find((g) => g.name === name)!;

describe('live domain: one apply path', () => {
  const live = () => new LiveDomain(DEFAULT_NODE_FILE.node, { domains: DEFAULT_NODE_FILE.domains, source: 'embedded default node' });

  it('starts at generation 1 from the node file and counts every apply', () => {
    const domain = live();
    expect(domain.generation).to.equal(1);
    expect(domain.current.source).to.equal('embedded default node');
    const state = domain.apply(contoso((d) => (d.domainControllers[0]!.reachable = false)), 'ad.yaml');
    expect(state.generation).to.equal(2);
    expect(state.source).to.equal('ad.yaml');
    expect(domain.domains[0]!.domainControllers[0]!.reachable).to.equal(false);
  });

  it('refuses a schema error naming the file and the field, and changes nothing', () => {
    const domain = live();
    const before = domain.current;
    const bad = contoso((d) => (d.sid = 'S-1-5-21-x'));
    // The node file's own schema and its message form (node-directory.ts): `<file>: <field>: <reason>`.
    expect(() => domain.apply(bad, 'ad.yaml')).to.throw('ad.yaml: domains[0].sid: must match a domain SID (S-1-5-21-a-b-c) (got "S-1-5-21-x")');
    expect(() => domain.apply({ domains: contoso().domains, extra: 1 }, 'ad.yaml')).to.throw('ad.yaml: extra: is not a known field');
    expect(() => domain.apply({}, 'ad.yaml')).to.throw('ad.yaml: domains: is required');
    expect(domain.current).to.equal(before);
    expect(domain.generation).to.equal(1);
  });

  it('refuses a document that drops the node\'s own domain (the node file\'s cross-field rule)', () => {
    const domain = live();
    const other = contoso((d) => {
      d.dnsName = 'fabrikam.com';
      d.netbiosName = 'FABRIKAM';
    });
    expect(() => domain.apply(other, 'ad.yaml')).to.throw('ad.yaml: node.domain: "contoso.com" is not one of the domains defined in domains');
    expect(domain.generation).to.equal(1);
  });

  it('refuses a stale generation (Aborted) and accepts the current one', () => {
    const domain = live();
    domain.apply(contoso(), 'first.yaml');
    expect(() => domain.apply({ ...contoso(), generation: 1 }, 'copy.yaml'))
      .to.throw('copy.yaml: generation: the domain is at generation 2, not 1')
      .with.property('code', 'Aborted');
    expect(domain.apply({ ...contoso(), generation: 2 }, 'copy.yaml').generation).to.equal(3);
  });

  it('tells its listeners once per change, with the new state', () => {
    const domain = live();
    const seen: number[] = [];
    domain.onChange((s) => seen.push(s.generation));
    domain.apply(contoso(), 'a.yaml');
    expect(() => domain.apply({}, 'b.yaml')).to.throw();
    domain.apply(contoso(), 'c.yaml');
    expect(seen).to.deep.equal([2, 3]);
  });
});

describe('live domain: running containers see a change at their next identity operation', function () {
  this.timeout(60_000);
  let rt: InProcessRuntime | undefined;

  before(async () => {
    rt = await startInProcessRuntime({ adMode: 'windows-server' });
  });
  after(async () => {
    await rt?.close();
    if (rt !== undefined) await rm(rt.dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await removeAllPods(rt!.cri);
    rt!.runtime.domain.apply(contoso(), 'reset');
  });

  async function gmsaContainer(name: string): Promise<string> {
    const security = { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC, run_as_username: 'NT AUTHORITY\\NETWORK SERVICE' };
    const pod = windowsPodConfig(name, join(rt!.dir, 'pods'), security);
    const { containerId } = await createWindowsContainer(rt!.cri, pod, windowsContainerConfig('app', IIS, security));
    await unaryCall(rt!.cri.runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 });
    return containerId;
  }
  const run = async (id: string, line: string) => {
    const r = await execSync(rt!.cri, id, ['cmd', '/c', line]);
    return { exitCode: r.exitCode, output: (r.stdout + r.stderr).replace(/\r\n/g, '\n') };
  };
  const apply = (change: (d: DomainSpec) => void) => rt!.runtime.domain.apply(contoso(change), 'test');

  // Texts: nltest's and klist's (docs/failure-modes.md, src/runtime/windows/identity-commands.ts).
  const SC_OK = 'Trusted DC Connection Status Status = 0 0x0 NERR_Success';

  it('a domain controller goes down and comes back: nltest /sc_verify fails and recovers', async () => {
    const id = await gmsaContainer('dc-flap');
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain(SC_OK);
    apply((d) => (d.domainControllers[0]!.reachable = false));
    expect(await run(id, 'nltest /sc_verify:contoso.com')).to.deep.equal({ exitCode: 1, output: 'I_NetLogonControl failed: Status = 1311 0x51f ERROR_NO_LOGON_SERVERS\n' });
    apply(() => {});
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain(SC_OK);
  });

  it('a domain controller cut off from this node only, and DNS failing, show as no logon servers', async () => {
    const id = await gmsaContainer('cut-off');
    apply((d) => (d.domainControllers[0]!.unreachableFrom = ['WINNODE1']));
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain('ERROR_NO_LOGON_SERVERS');
    apply((d) => (d.domainControllers[0]!.unreachableFrom = ['OTHERNODE']));
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain(SC_OK);
    apply((d) => (d.dnsResolvable = false));
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain('ERROR_NO_LOGON_SERVERS');
    await run(id, 'klist purge');
    expect((await run(id, 'klist get krbtgt')).output).to.contain('klist failed with 0xc000005e/-1073741730: There are currently no logon servers available to service the logon request.');
  });

  it('a password rotation: the cached ticket stays until klist purge, the next one is obtained with the new password', async () => {
    const id = await gmsaContainer('rotate');
    const first = await run(id, 'klist');
    expect(first.output).to.contain('Server: krbtgt/CONTOSO.COM @ CONTOSO.COM');
    apply((d) => (gmsa(d, 'WebApplication1').passwordVersion = 2));
    // Nothing breaks: the host retrieves the new password; the TGT obtained before is still valid.
    expect((await run(id, 'klist')).output).to.equal(first.output);
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain(SC_OK);
    expect(await run(id, 'klist purge')).to.deep.equal({ exitCode: 0, output: '\nCurrent LogonId is 0:0x3e4\n\tDeleting all tickets:\n\tTicket(s) purged!\n' });
    expect((await run(id, 'klist get krbtgt')).exitCode).to.equal(0);
    const session = rt!.runtime.context.windows.logonSession(rt!.runtime.context.containers.get(id)!, Date.now);
    expect(session.cached().map((t) => t.passwordVersion)).to.deep.equal([2]);
  });

  it('the node removed from PrincipalsAllowedToRetrieveManagedPassword: works until the password rotates, with a stale ticket cached', async () => {
    const id = await gmsaContainer('removed');
    await run(id, 'klist');
    // WINNODE1$ retrieves WebApplication1's password through the group WebAppHosts.
    apply((d) => (d.groups!.find((g) => g.name === 'WebAppHosts')!.members = []));
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain(SC_OK);
    apply((d) => {
      d.groups!.find((g) => g.name === 'WebAppHosts')!.members = [];
      gmsa(d, 'WebApplication1').passwordVersion = 2;
    });
    expect(await run(id, 'nltest /sc_verify:contoso.com')).to.deep.equal({ exitCode: 1, output: 'I_NetLogonControl failed: Status = 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET\n' });
    // The TGT obtained with the old password is still cached and listed.
    expect((await run(id, 'klist')).output).to.contain('Cached Tickets: (1)');
    await run(id, 'klist purge');
    expect((await run(id, 'klist get krbtgt')).output).to.contain('klist failed with 0xc000018a/-1073741430: The workstation does not have a trust secret.');
    // Added back: the host retrieves the password again.
    apply((d) => (gmsa(d, 'WebApplication1').passwordVersion = 2));
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain(SC_OK);
    expect((await run(id, 'klist get krbtgt')).exitCode).to.equal(0);
  });

  it('a deleted gMSA: the secure channel fails with ERROR_NO_TRUST_SAM_ACCOUNT', async () => {
    const id = await gmsaContainer('deleted');
    apply((d) => (d.gmsas = d.gmsas!.filter((g) => g.name !== 'WebApplication1')));
    expect(await run(id, 'nltest /sc_verify:contoso.com')).to.deep.equal({ exitCode: 1, output: 'I_NetLogonControl failed: Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT\n' });
  });

  it('clock skew beyond 5 minutes: the secure channel works, new Kerberos tickets fail (KRB_AP_ERR_SKEW)', async () => {
    const id = await gmsaContainer('skew');
    apply((d) => (d.domainControllers[0]!.clockSkewSeconds = 301));
    expect((await run(id, 'nltest /sc_verify:contoso.com')).output).to.contain(SC_OK);
    expect((await run(id, 'klist get krbtgt')).output).to.equal(
      '\nCurrent LogonId is 0:0x3e4\nklist failed with 0xc0000133/-1073741517: The time at the primary domain controller is different from the time at the backup domain controller or member server by too large an amount.\n\n',
    );
    apply((d) => (d.domainControllers[0]!.clockSkewSeconds = -300));
    expect((await run(id, 'klist get krbtgt')).exitCode).to.equal(0);
  });

  it('is served on the runtime socket: Get shows the generation, Apply refuses a bad document whole', async () => {
    const client = createActiveDirectoryClient(rt!.endpoint);
    try {
      const call = <T>(method: 'Get' | 'Apply', request: object) =>
        new Promise<T>((resolve, reject) => (client[method] as (r: object, cb: (e: ServiceError | null, v?: T) => void) => void)(request, (e, v) => (e ? reject(e) : resolve(v!))));
      const before = await call<{ state: { generation: string } }>('Get', {});
      const err = await call('Apply', { document_json: JSON.stringify(contoso((d) => (d.guid = 'nope'))), source: 'ad.yaml' }).catch((e: ServiceError) => e);
      expect(err).to.include({ code: 3, details: 'ad.yaml: domains[0].guid: must match a GUID without braces (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx) (got "nope")' });
      const after = await call<{ state: { generation: string } }>('Get', {});
      expect(after.state.generation).to.equal(before.state.generation);
      const applied = await call<{ state: { generation: string; source: string } }>('Apply', { document_json: JSON.stringify(contoso()), source: 'ad.yaml' });
      expect(applied.state).to.include({ generation: String(Number(before.state.generation) + 1), source: 'ad.yaml' });
    } finally {
      client.close();
    }
  });
});

describe('live domain: a CCG plugin failing on a node that is not domain-joined', function () {
  this.timeout(60_000);

  it('a plugin marked unhealthy fails the next container start with hcsshim\'s error; healthy again, it starts', async () => {
    const rt = await startInProcessRuntime({ nodeFile: join(repoRoot, 'examples', 'nodes', 'ccg-workgroup.yaml') });
    try {
      const spec = kepExampleWith((d) => {
        d.ActiveDirectoryConfig.HostAccountConfig = { PortableCcgVersion: '1', PluginGUID: CCG_PLUGIN, PluginInput: 'contoso-keyvault/ccg-reader' };
      });
      const start = async (name: string) => {
        const security = { credential_spec: spec, run_as_username: 'ContainerUser' };
        const pod = windowsPodConfig(name, join(rt.dir, 'pods'), security);
        const { containerId } = await createWindowsContainer(rt.cri, pod, windowsContainerConfig('app', IIS, security));
        return unaryCall(rt.cri.runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 }).then(() => 'started', (e: ServiceError) => e.details);
      };
      const domains = rt.runtime.domain.domains as DomainSpec[];
      rt.runtime.domain.apply({ domains: structuredClone(domains), ccgPlugins: [{ pluginGuid: CCG_PLUGIN, healthy: false }] }, 'ccg-down.yaml');
      expect(await start('ccg-a')).to.contain('Failed to setup the external credentials for Container').and.contain('The RPC server is unavailable. (0xC0020017)');
      rt.runtime.domain.apply({ domains: structuredClone(domains), ccgPlugins: [{ pluginGuid: CCG_PLUGIN, healthy: true }] }, 'ccg-up.yaml');
      expect(await start('ccg-b')).to.equal('started');
    } finally {
      await removeAllPods(rt.cri);
      await rt.close();
      await rm(rt.dir, { recursive: true, force: true });
    }
  });
});

describe('live domain: persisted with the runtime state', function () {
  this.timeout(60_000);

  it('a durable runtime reopens at the generation and state the last apply left', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-ad-'));
    try {
      const first = await NodeRuntime.open({ stateDir: dir, durable: true, pullDelayMs: 0 });
      first.domain.apply(contoso((d) => (d.domainControllers[0]!.reachable = false)), 'ad.yaml');
      await first.close();
      const second = await NodeRuntime.open({ stateDir: dir, durable: true, pullDelayMs: 0 });
      try {
        expect(second.domain.generation).to.equal(2);
        expect(second.domain.current.source).to.equal('ad.yaml');
        expect(second.domain.domains[0]!.domainControllers[0]!.reachable).to.equal(false);
      } finally {
        await second.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
