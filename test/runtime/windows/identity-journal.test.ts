// The runtime's identity journal (src/runtime/windows/identity-journal.ts) and the Identity
// service that serves it on the CRI socket (proto/criwinsim/identity/v1, cri-winsim's own API).
import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { unaryCall } from '../../../src/cri/proto.js';
import { createIdentityClient } from '../../../src/cri/identity-service.js';
import { IdentityJournal, isDomainOperation, MAX_OPERATIONS, operationStatus } from '../../../src/runtime/windows/identity-journal.js';
import { createWindowsContainer, execSync, IIS, KEP_EXAMPLE_CREDENTIAL_SPEC, kepExampleWith, rejection, startInProcessRuntime, windowsContainerConfig, windowsPodConfig } from '../../e2e/windows-support.js';

describe('identity journal', () => {
  it('reads the status each identity command reported, and whether it failed', () => {
    const cases: [string, string, number, { result: string; status: string }][] = [
      ['Flags: 0\nConnection Status = 0 0x0 NERR_Success\nThe command completed successfully\n', '', 0, { result: 'ok', status: '0 0x0 NERR_Success' }],
      // nltest /query exits 0 while it reports a broken secure channel.
      ['Flags: 0\nConnection Status = 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET\nThe command completed successfully\n', '', 0, { result: 'failed', status: '1786 0x6fa ERROR_NO_TRUST_LSA_SECRET' }],
      ['I_NetLogonControl failed: Status = 1311 0x51f ERROR_NO_LOGON_SERVERS\n', '', 1, { result: 'failed', status: '1311 0x51f ERROR_NO_LOGON_SERVERS' }],
      ['\nCurrent LogonId is 0:0x3e4\nklist failed with 0xc0000022/-1073741790: {Access Denied}\nA process …\n', '', 1, { result: 'failed', status: '0xc0000022 {Access Denied}' }],
      ['\nCurrent LogonId is 0:0x3e4\n\nCached Tickets: (1)\n\n#0>\tClient: …\n', '', 0, { result: 'ok', status: 'Cached Tickets: (1)' }],
      ['', 'ERROR: Unable to get User Principal Name (UPN) as the current logged-on user is not a domain user.\n', 1, { result: 'failed', status: 'ERROR: Unable to get User Principal Name (UPN) as the current logged-on user is not a domain user.' }],
    ];
    for (const [stdout, stderr, exitCode, expected] of cases) expect(operationStatus({ stdout, stderr, exitCode }), stdout + stderr).to.deep.equal(expected);
  });

  it('keeps the domain operations only, the latest per container, and forgets a removed container', () => {
    expect([['nltest', '/query'], ['C:\\Windows\\System32\\klist.exe'], ['whoami', '/UPN'], ['whoami'], ['hostname']].map(isDomainOperation)).to.deep.equal([true, true, true, false, false]);
    const journal = new IdentityJournal(() => new Date('2026-11-28T10:00:00Z'));
    journal.recordOperation('c1', ['whoami'], { stdout: 'x\n', stderr: '', exitCode: 0 });
    for (let i = 0; i < MAX_OPERATIONS + 2; i++) journal.recordOperation('c1', ['nltest', '/query'], { stdout: 'Connection Status = 0 0x0 NERR_Success', stderr: '', exitCode: 0 });
    const kept = journal.operationsOf('c1');
    expect(kept).to.have.length(MAX_OPERATIONS);
    expect([kept[0]!.sequence, kept.at(-1)!.sequence, kept[0]!.time, kept[0]!.command]).to.deep.equal([3, MAX_OPERATIONS + 2, '2026-11-28T10:00:00.000Z', 'nltest /query']);
    journal.recordStart('c1', { state: 'started' });
    journal.forget('c1');
    expect([journal.operationsOf('c1'), journal.startOf('c1')]).to.deep.equal([[], undefined]);
  });
});

describe('Identity.ExplainContainer on the CRI socket', function () {
  this.timeout(30_000);

  it('answers from the records: what was received, the hand-off, the HCS document, the start, the logon and the operations', async () => {
    const rt = await startInProcessRuntime({});
    const identity = createIdentityClient(rt.endpoint);
    try {
      const security = { run_as_username: 'NT AUTHORITY\\NETWORK SERVICE', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
      const pod = windowsPodConfig('explained', join(rt.dir, 'pods', 'explained'), security);
      const { containerId } = await createWindowsContainer(rt.cri, pod, windowsContainerConfig('app', IIS, security));
      const created = await unaryCall(identity, 'ExplainContainer', { container_id: containerId });
      expect(created.start).to.include({ state: 'not-started' });
      expect(created.handoff).to.include({ kind: 'file', state: 'staged' });
      expect(created.handoff!.security_option).to.match(/^credentialspec=file:\/\/k8s-cred-spec-[0-9a-f]{80}\.json$/);
      await unaryCall(rt.cri.runtime, 'StartContainer', { container_id: containerId });
      await execSync(rt.cri, containerId, ['nltest', '/query']);
      const r = await unaryCall(identity, 'ExplainContainer', { container_id: containerId.slice(0, 12) });
      expect([r.container_id, r.runtime_flavor, r.ad_mode, r.os]).to.deep.equal([containerId, 'dockershim-kep', 'windows-server', 'windows']);
      expect(r.received).to.include({ has_credential_spec: true, credential_spec_bytes: String(Buffer.byteLength(KEP_EXAMPLE_CREDENTIAL_SPEC)), run_as_username: 'NT AUTHORITY\\NETWORK SERVICE', host_process: false });
      expect(r.handoff).to.include({ kind: 'file', state: 'removed' });
      expect(r.hcs_document).to.include({ credential_spec: true, account: 'DEMO\\WebApplication1', dns_name: 'contoso.com', sid: 'S-1-5-21-2126729477-2524075714-3094792973', username: 'NT AUTHORITY\\NETWORK SERVICE' });
      expect(r.start).to.include({ state: 'started', failed_step: '' });
      expect(r.logon).to.include({ result: 'ok', user: 'NT AUTHORITY\\NETWORK SERVICE', network_identity: 'DEMO\\WebApplication1$', domain_controller: 'dc1.contoso.com', upn: 'WebApplication1$@contoso.com' });
      expect(r.operations.map((o) => [o.command, o.result, o.status])).to.deep.equal([['nltest /query', 'ok', '0 0x0 NERR_Success']]);
      const err = await rejection(unaryCall(identity, 'ExplainContainer', { container_id: 'f'.repeat(64) }));
      expect(err.code).to.equal(GrpcStatus.NOT_FOUND);
    } finally {
      identity.close();
      await rt.close();
      await rm(rt.dir, { recursive: true, force: true });
    }
  });

  it('records the step a failed start stopped at and why (gmsa-kep)', async () => {
    const rt = await startInProcessRuntime({ adMode: 'gmsa-kep' });
    const identity = createIdentityClient(rt.endpoint);
    try {
      const spec = kepExampleWith((doc) => (doc.DomainJoinConfig.MachineAccountName = 'SqlReporting'));
      const security = { run_as_username: 'ContainerUser', credential_spec: spec };
      const pod = windowsPodConfig('denied', join(rt.dir, 'pods', 'denied'), security);
      const { containerId } = await createWindowsContainer(rt.cri, pod, windowsContainerConfig('app', IIS, security));
      const failed = await rejection(unaryCall(rt.cri.runtime, 'StartContainer', { container_id: containerId }));
      const r = await unaryCall(identity, 'ExplainContainer', { container_id: containerId });
      expect(r.start).to.deep.equal({ state: 'failed', failed_step: 'logon', error_code: 'FailedPrecondition', error: failed.details, failure_reason: 'node-not-allowed' });
      expect(r.logon).to.equal(null);
    } finally {
      identity.close();
      await rt.close();
      await rm(rt.dir, { recursive: true, force: true });
    }
  });
});
