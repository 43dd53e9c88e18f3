// The live Active Directory through the real crictl and the real `cri-winsim ad` command: a
// domain controller taken down while a gMSA container runs turns `nltest /sc_verify` from
// success into Windows' failure and back, without restarting anything; a password rotation, an
// allowed-principals change, a deleted gMSA and a clock skew each give their outcome.
// Texts: nltest's and klist's, as docs/failure-modes.md quotes them (src/runtime/windows).
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { cliPath, requireCriTool } from '../support/paths.js';
import { runProcess } from '../support/process.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { IIS, KEP_EXAMPLE_CREDENTIAL_SPEC, windowsContainerConfig, windowsPodConfig } from './windows-support.js';
import type { ActiveDirectoryDocument } from '../../src/runtime/windows/live-domain.js';
import type { DomainSpec } from '../../src/runtime/windows/node-file.js';

const printed = (s: string): string => `${s.replace(/\r\n/g, '\n').trimEnd()}\n`;
const SC_OK = 'Trusted DC Connection Status Status = 0 0x0 NERR_Success';

describe('the live Active Directory through the real crictl and cri-winsim ad', function () {
  this.timeout(60_000);
  let rt: RuntimeHandle | undefined;
  let containerId = '';
  let startedAt = '';
  let original: ActiveDirectoryDocument | undefined;

  const runtime = (): RuntimeHandle => {
    if (rt === undefined) throw new Error('the runtime is not running (see the before all hook)');
    return rt;
  };
  const crictl = (args: string[], check = true) => runCrictl(runtime(), args, { check });
  const ad = (args: string[]) => runProcess(process.execPath, [cliPath, 'ad', ...args, '--runtime-endpoint', runtime().endpoint], { killAfterMs: 20_000 });
  const exec = async (...cmd: string[]) => {
    const r = await crictl(['exec', containerId, ...cmd], false);
    // crictl adds its own line on stderr for a failing command (`command terminated with exit code 1`).
    return { code: r.code, output: printed(r.stdout) };
  };
  /** `ad apply -f` of the original domain changed by `change`, from a file as a user would. */
  const apply = async (name: string, change: (d: DomainSpec) => void) => {
    const doc = structuredClone(original!);
    change(doc.domains[0]!);
    delete doc.generation;
    const file = join(runtime().dir, name);
    writeFileSync(file, JSON.stringify(doc));
    const r = await ad(['apply', '-f', file]);
    expect(r.code, r.stderr).to.equal(0);
    return r.stdout;
  };

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime({ name: 'ad-live' });
    const logs = join(rt.dir, 'pod-logs');
    mkdirSync(logs, { recursive: true });
    // NETWORK SERVICE acts as the gMSA on the network (whoami /upn works).
    const security = { run_as_username: 'NT AUTHORITY\\NETWORK SERVICE', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
    writeFileSync(join(rt.dir, 'pod.json'), JSON.stringify(windowsPodConfig('webapp-gmsa', logs, security)));
    writeFileSync(join(rt.dir, 'web.json'), JSON.stringify(windowsContainerConfig('iis', IIS, security)));
    await crictl(['pull', IIS]);
    const podId = (await crictl(['runp', join(rt.dir, 'pod.json')])).stdout.trim();
    containerId = (await crictl(['create', podId, join(rt.dir, 'web.json'), join(rt.dir, 'pod.json')])).stdout.trim();
    await crictl(['start', containerId]);
    startedAt = (await crictlJson(rt, ['inspect', containerId])).status.startedAt;
    const got = await ad(['get', '-o', 'json']);
    expect(got.code, got.stderr).to.equal(0);
    original = JSON.parse(got.stdout) as ActiveDirectoryDocument;
  });

  after(async () => {
    await rt?.stop();
  });

  it('ad get shows the node file\'s domain at generation 1', () => {
    expect(original).to.include({ generation: 1, source: 'embedded default node' });
    expect(original!.domains[0]!.dnsName).to.equal('contoso.com');
  });

  it('a domain controller taken down and brought back: nltest /sc_verify fails and recovers in the running container', async () => {
    const before = await exec('nltest', '/sc_verify:contoso.com');
    expect(before.code).to.equal(0);
    expect(before.output).to.contain(SC_OK);
    expect(await apply('dc-down.json', (d) => (d.domainControllers[0]!.reachable = false))).to.match(/^active directory configured: generation 2 \(.*dc-down\.json\)\n$/);
    expect(await exec('nltest', '/sc_verify:contoso.com')).to.deep.equal({ code: 1, output: 'I_NetLogonControl failed: Status = 1311 0x51f ERROR_NO_LOGON_SERVERS\n' });
    await apply('dc-up.json', () => {});
    const after = await exec('nltest', '/sc_verify:contoso.com');
    expect(after.code).to.equal(0);
    expect(after.output).to.contain(SC_OK);
    // Nothing was restarted: the same container, running since it started.
    const status = (await crictlJson(runtime(), ['inspect', containerId])).status;
    expect(status).to.include({ state: 'CONTAINER_RUNNING', startedAt });
  });

  it('an invalid document is refused with its file and field, and the domain stays as it was', async () => {
    const generation = (JSON.parse((await ad(['get', '-o', 'json'])).stdout) as ActiveDirectoryDocument).generation;
    const file = join(runtime().dir, 'bad.yaml');
    writeFileSync(file, 'domains:\n  - dnsName: contoso.com\n    netbiosName: DEMO\n    sid: S-1-5-21-x\n    guid: 244818ae-87ca-4fcd-92ec-e79e5252348a\n    dnsTreeName: contoso.com\n    domainControllers: [{ name: dc1.contoso.com, reachable: false }]\n');
    const r = await ad(['apply', '-f', file]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal(`error: ${file}: domains[0].sid: must match a domain SID (S-1-5-21-a-b-c) (got "S-1-5-21-x")\n`);
    expect((JSON.parse((await ad(['get', '-o', 'json'])).stdout) as ActiveDirectoryDocument).generation).to.equal(generation);
    expect((await exec('nltest', '/sc_verify:contoso.com')).code).to.equal(0);
  });

  it('a password rotation: the old ticket stays listed until klist purge, then a new one is obtained', async () => {
    const tickets = await exec('klist');
    expect(tickets.output).to.contain('Server: krbtgt/CONTOSO.COM @ CONTOSO.COM');
    await apply('rotated.json', (d) => (d.gmsas!.find((g) => g.name === 'WebApplication1')!.passwordVersion = 2));
    expect(await exec('klist')).to.deep.equal(tickets);
    expect((await exec('nltest', '/sc_verify:contoso.com')).output).to.contain(SC_OK);
    expect((await exec('klist', 'purge')).output).to.contain('Ticket(s) purged!');
    expect((await exec('klist', 'get', 'krbtgt')).code).to.equal(0);
  });

  it('the node removed from the allowed principals, then a rotation: the secure channel fails, the cached ticket is still listed', async () => {
    await apply('denied.json', (d) => {
      d.groups!.find((g) => g.name === 'WebAppHosts')!.members = [];
      d.gmsas!.find((g) => g.name === 'WebApplication1')!.passwordVersion = 3;
    });
    expect(await exec('nltest', '/sc_verify:contoso.com')).to.deep.equal({ code: 1, output: 'I_NetLogonControl failed: Status = 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET\n' });
    expect((await exec('klist')).output).to.contain('Cached Tickets: (1)');
    await exec('klist', 'purge');
    expect((await exec('klist', 'get', 'krbtgt')).output).to.contain('klist failed with 0xc000018a/-1073741430: The workstation does not have a trust secret.');
    await apply('allowed.json', (d) => (d.gmsas!.find((g) => g.name === 'WebApplication1')!.passwordVersion = 3));
    expect((await exec('nltest', '/sc_verify:contoso.com')).output).to.contain(SC_OK);
  });

  it('a deleted gMSA: ERROR_NO_TRUST_SAM_ACCOUNT', async () => {
    await apply('deleted.json', (d) => (d.gmsas = d.gmsas!.filter((g) => g.name !== 'WebApplication1')));
    expect(await exec('nltest', '/sc_verify:contoso.com')).to.deep.equal({ code: 1, output: 'I_NetLogonControl failed: Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT\n' });
  });

  it('a clock skew beyond 5 minutes: new Kerberos tickets fail with STATUS_TIME_DIFFERENCE_AT_DC', async () => {
    await apply('skew.json', (d) => (d.domainControllers[0]!.clockSkewSeconds = 900));
    expect((await exec('nltest', '/sc_verify:contoso.com')).output).to.contain(SC_OK);
    await exec('klist', 'purge');
    const klist = await exec('klist', 'get', 'krbtgt');
    expect(klist.code).to.not.equal(0);
    expect(klist.output).to.contain('klist failed with 0xc0000133/-1073741517: The time at the primary domain controller is different from the time at the backup domain controller or member server by too large an amount.');
  });
});
