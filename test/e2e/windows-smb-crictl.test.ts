// SMB file shares through the real crictl: `cri-winsim runtime --node
// examples/stories/smb-file-share/node.yaml` (the file server FILES01 of contoso.com), pods with
// credential specs run by `crictl runp/create/start`, and cmd/PowerShell on UNC paths through
// `crictl exec -s`. A gMSA container writes a share and a second container reads it back;
// a container without a gMSA, or whose gMSA may only read, gets "Access is denied."; an unknown
// server "The network path was not found." (the Win32 system messages cmd prints). The upstream
// Windows e2e suite's smoke checks (kubernetes test/e2e/windows/gmsa_full.go: `nltest /QUERY`
// contains "The command completed successfully", `nltest /sc_reset:<domain>`) run alongside.
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCrictl } from '../support/crictl.js';
import { runProcess } from '../support/process.js';
import { cliPath } from '../support/paths.js';
import type { ActiveDirectoryDocument } from '../../src/runtime/windows/live-domain.js';
import { repoRoot, requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC, kepExampleWith, windowsContainerConfig, windowsPodConfig, type WindowsSecurity } from './windows-support.js';

// An image nobody described: a Windows image of the node's build (docs/images.md).
const IMAGE = 'contoso.azurecr.io/webapp:1.0';
const text = (s: string): string => s.replace(/\r\n/g, '\n');
// With every DC of the domain down (its DNS still answering) the gMSA gets no ticket for the
// file server: cmd prints ERROR_NO_LOGON_SERVERS' (1311) system message (docs/smb-shares.md).
const SMB_DC_DOWN = 'There are currently no logon servers available to service the logon request.\n';

describe('SMB file shares through the real crictl', function () {
  this.timeout(60_000);
  let rt: RuntimeHandle | undefined;
  const ids: Record<string, string> = {};
  const runtime = (): RuntimeHandle => {
    if (rt === undefined) throw new Error('the runtime is not running (see the before all hook)');
    return rt;
  };
  const crictl = (args: string[], check = true) => runCrictl(runtime(), args, { check });
  /**
   * `crictl exec -s` in the container of `pod`: its exit code and what it printed, without CRLF
   * and the blank lines crictl adds; a failed command's stderr comes in crictl's own error
   * ("execing command in container … exited with 1: <stderr>").
   */
  const exec = async (pod: string, command: string[]) => {
    const res = await crictl(['exec', '-s', ids[pod]!, ...command], false);
    const output = text(`${res.stdout}${res.stderr}`).trimEnd();
    return { code: res.code, output: output === '' ? '' : `${output}\n` };
  };
  const failedWith = (output: string): string => /exited with 1: ([\s\S]*)$/.exec(output)?.[1] ?? output;

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime({ name: 'windows-smb', args: ['--node', join(repoRoot, 'examples', 'stories', 'smb-file-share', 'node.yaml'), '--ad-mode', 'windows-server'] });
    const eventLogger = kepExampleWith((doc) => {
      doc.DomainJoinConfig.MachineAccountName = 'EventLogger';
      doc.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: 'EventLogger', Scope: 'DEMO' }, { Name: 'EventLogger', Scope: 'contoso.com' }];
    });
    const pods: Record<string, WindowsSecurity> = {
      writer: { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC },
      reader: { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC },
      logger: { credential_spec: eventLogger },
      plain: {},
    };
    await crictl(['pull', IMAGE]);
    for (const [name, security] of Object.entries(pods)) {
      const logs = join(rt.dir, 'logs', name);
      mkdirSync(logs, { recursive: true });
      const podFile = join(rt.dir, `${name}-pod.json`);
      const containerFile = join(rt.dir, `${name}.json`);
      writeFileSync(podFile, JSON.stringify(windowsPodConfig(`smb-${name}`, logs, security)));
      writeFileSync(containerFile, JSON.stringify(windowsContainerConfig('app', IMAGE, security, ['ping', '-t', 'localhost'])));
      const podId = (await crictl(['runp', podFile])).stdout.trim();
      ids[name] = (await crictl(['create', podId, containerFile, podFile])).stdout.trim();
      await crictl(['start', ids[name]!]);
    }
  });

  after(async () => {
    await rt?.stop();
  });

  it('a gMSA container writes to an allowed share; a second container reads it back (cmd and PowerShell)', async () => {
    expect(await exec('writer', ['cmd', '/c', 'echo hello from the writer > \\\\files01\\data\\hello.txt'])).to.deep.equal({ code: 0, output: '' });
    // (cmd keeps the blank before `>`, "hello from the writer \r\n": test/emulator/smb-shells.test.ts pins it; trimmed here.)
    expect(await exec('reader', ['cmd', '/c', 'type \\\\files01\\data\\hello.txt'])).to.deep.equal({ code: 0, output: 'hello from the writer\n' });
    expect(await exec('writer', ['powershell', '-Command', "Set-Content -Path \\\\files01.contoso.com\\data\\ps.txt -Value 'from PowerShell'"])).to.deep.equal({ code: 0, output: '' });
    expect(await exec('reader', ['powershell', '-Command', 'Get-Content \\\\files01\\data\\ps.txt; Test-Path \\\\files01\\data\\ps.txt'])).to.deep.equal({
      code: 0,
      output: 'from PowerShell\nTrue\n',
    });
    const listing = await exec('reader', ['cmd', '/c', 'dir \\\\files01\\data']);
    expect(listing.code).to.equal(0);
    expect(listing.output).to.include(' Directory of \\\\files01\\data\n');
    expect(listing.output).to.match(/\d\d\/\d\d\/\d{4} {2}\d\d:\d\d [AP]M {16}24 hello\.txt\n/);
    expect(listing.output).to.include('               2 File(s)             41 bytes\n');
  });

  it('a container without a gMSA, or whose gMSA may only read, gets "Access is denied."', async () => {
    const plain = await exec('plain', ['cmd', '/c', 'type \\\\files01\\data\\hello.txt']);
    expect(plain.code).to.equal(1);
    expect(failedWith(plain.output)).to.equal('Access is denied.\n');
    const logger = await exec('logger', ['cmd', '/c', 'echo x > \\\\files01\\data\\x.txt']);
    expect(logger.code).to.equal(1);
    expect(failedWith(logger.output)).to.equal('Access is denied.\n');
    const ps = await exec('plain', ['powershell', '-Command', 'Get-Content \\\\files01\\data\\hello.txt']);
    expect(ps.code).to.equal(1);
    expect(ps.output).to.include("Get-Content : Access to the path '\\\\files01\\data\\hello.txt' is denied.\n");
    expect(ps.output).to.include('GetContentReaderUnauthorizedAccessError,Microsoft.PowerShell.Commands.GetContentCommand');
  });

  it('an unknown server: "The network path was not found."', async () => {
    const res = await exec('writer', ['cmd', '/c', 'type \\\\files09\\data\\hello.txt']);
    expect(res.code).to.equal(1);
    expect(failedWith(res.output)).to.equal('The network path was not found.\n');
  });

  it('the upstream smoke checks: nltest /QUERY, nltest /sc_reset, nslookup of the domain', async () => {
    const query = await exec('writer', ['nltest', '/QUERY']);
    expect(query.code).to.equal(0);
    expect(query.output).to.include('The command completed successfully');
    expect(query.output).to.not.match(/ERROR_NO_LOGON_SERVERS|RPC_S_SERVER_UNAVAILABLE/);
    expect((await exec('writer', ['nltest', '/sc_reset:contoso.com'])).output).to.equal(
      'Flags: 30 HAS_IP  HAS_TIMESERV\nTrusted DC Name \\\\dc1.contoso.com\nTrusted DC Connection Status Status = 0 0x0 NERR_Success\nThe command completed successfully\n',
    );
    const lookup = await exec('plain', ['powershell.exe', '-Command', 'nslookup contoso.com']);
    expect(lookup.code).to.equal(0);
    expect(lookup.output).to.match(/^Server: {2}dc1\.contoso\.com\nAddress: {2}127\.\d+\.\d+\.1\n\nName: {4}contoso\.com\nAddress: {2}127\.\d+\.\d+\.1\n/);
  });
  it('a domain controller taken down with `cri-winsim ad apply`: the SMB write and nltest /sc_verify fail in the running container, and recover', async () => {
    const ad = (args: string[]) => runProcess(process.execPath, [cliPath, 'ad', ...args, '--runtime-endpoint', runtime().endpoint], { killAfterMs: 20_000 });
    const got = await ad(['get', '-o', 'json']);
    expect(got.code, got.stderr).to.equal(0);
    const domain = JSON.parse(got.stdout) as ActiveDirectoryDocument;
    delete domain.generation;
    const applyWith = async (name: string, reachable: boolean) => {
      const doc = structuredClone(domain);
      for (const dc of doc.domains[0]!.domainControllers) dc.reachable = reachable;
      const file = join(runtime().dir, name);
      writeFileSync(file, JSON.stringify(doc));
      const r = await ad(['apply', '-f', file]);
      expect(r.code, r.stderr).to.equal(0);
    };
    const write = () => exec('writer', ['cmd', '/c', 'echo during > \\\\files01\\data\\outage.txt']);
    expect(await write()).to.deep.equal({ code: 0, output: '' });
    await applyWith('dc-down.json', false);
    const down = await write();
    expect(down.code).to.equal(1);
    expect(failedWith(down.output)).to.equal(SMB_DC_DOWN);
    // Without -s: crictl passes a failing command's stdout on, where nltest prints its status.
    const verify = await crictl(['exec', ids.writer!, 'nltest', '/sc_verify:contoso.com'], false);
    expect(verify.code).to.equal(1);
    expect(text(verify.stdout)).to.equal('I_NetLogonControl failed: Status = 1311 0x51f ERROR_NO_LOGON_SERVERS\n');
    await applyWith('dc-up.json', true);
    expect(await write()).to.deep.equal({ code: 0, output: '' });
    expect((await exec('writer', ['nltest', '/sc_verify:contoso.com'])).output).to.include('Status = 0 0x0 NERR_Success');
  });
});
