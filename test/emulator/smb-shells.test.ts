// cmd.exe and PowerShell on UNC paths and the secure channel, inside a Windows container whose
// session decides each access when the command runs. Texts: cmd prints the Win32 error's system
// message; Windows PowerShell 5.1 writes error records in its NormalView layout with the
// FileSystem provider's error ids (PowerShell FileSystemProvider: GetContentReader… and
// GetContentWriter… ids, ItemNotFoundException "Cannot find path '…' because it does not
// exist."; .NET's UnauthorizedAccessException "Access to the path '…' is denied.") and
// Test-ComputerSecureChannel's texts from PowerShell's ComputerResources.resx (SecureChannelAlive,
// SecureChannelBroken, TestComputerNotInDomain) with the ShouldProcess verbose line.
import { expect } from 'chai';
import { WINDOWS_SESSION_KEY } from '../../src/emulator/windows-identity.js';
import { registerIdentityCommands } from '../../src/runtime/windows/identity-command-registration.js';
import { channelTakenIdentity, gmsaIdentity, noGmsaIdentity, TestSession } from '../runtime/windows/smb-fixtures.js';
import { run, testRegistry, testTarget } from './emulator-harness.js';

function windows(session: TestSession) {
  const target = testTarget('windows');
  target.platform[WINDOWS_SESSION_KEY] = session;
  const registry = testRegistry();
  registerIdentityCommands(registry);
  return { target, registry };
}

describe('cmd.exe on UNC paths', () => {
  it('writes with > (keeping the blank before it), appends with >>, reads back with type', async () => {
    const session = new TestSession(gmsaIdentity('WebApplication1'));
    expect(await run(['cmd', '/c', 'echo hello > \\\\files01\\data\\f.txt'], windows(session))).to.deep.equal({ stdout: '', stderr: '', exitCode: 0 });
    await run(['cmd', '/c', 'echo again>>\\\\files01\\data\\f.txt'], windows(session));
    expect(await run(['cmd', '/c', 'type \\\\files01\\data\\f.txt'], windows(session))).to.deep.equal({ stdout: 'hello \r\nagain\r\n', stderr: '', exitCode: 0 });
  });

  it('prints the system message of a refusal and fails the statement', async () => {
    const texts = async (session: TestSession, line: string) => run(['cmd', '/c', line], windows(session));
    expect(await texts(new TestSession(noGmsaIdentity()), 'echo x > \\\\files01\\data\\f.txt')).to.deep.equal({ stdout: '', stderr: 'Access is denied.\r\n', exitCode: 1 });
    expect(await texts(new TestSession(gmsaIdentity('EventLogger')), 'echo x > \\\\files01\\data\\f.txt')).to.deep.equal({ stdout: '', stderr: 'Access is denied.\r\n', exitCode: 1 });
    expect(await texts(new TestSession(gmsaIdentity('EventLogger')), 'type \\\\nosuch\\data\\f.txt')).to.deep.equal({ stdout: '', stderr: 'The network path was not found.\r\n', exitCode: 1 });
    expect(await texts(new TestSession(channelTakenIdentity()), 'dir \\\\files01\\data')).to.deep.equal({
      stdout: '',
      stderr: 'The trust relationship between this workstation and the primary domain failed.\r\n',
      exitCode: 1,
    });
    expect(await texts(new TestSession(gmsaIdentity('EventLogger')), 'type \\\\files01\\data\\none.txt && echo never')).to.deep.equal({
      stdout: '',
      stderr: 'The system cannot find the file specified.\r\n',
      exitCode: 1,
    });
  });

  it('lists a share with dir in its layout', async () => {
    const session = new TestSession(gmsaIdentity('EventLogger'));
    const { stdout, exitCode } = await run(['cmd', '/c', 'dir \\\\files01\\public'], windows(session));
    expect(exitCode).to.equal(0);
    expect(stdout.split('\r\n')).to.deep.equal([
      ' Volume in drive \\\\files01\\public has no label.',
      stdout.split('\r\n')[1]!,
      '',
      ' Directory of \\\\files01\\public',
      '',
      '11/28/2026  01:31 PM    <DIR>          .',
      '11/28/2026  01:31 PM    <DIR>          ..',
      '11/28/2026  01:31 PM    <DIR>          docs',
      '11/28/2026  01:31 PM                 9 readme.txt',
      '               1 File(s)              9 bytes',
      '               3 Dir(s)  53,687,091,200 bytes free',
      '',
    ]);
    expect(stdout.split('\r\n')[1]).to.match(/^ Volume Serial Number is [0-9A-F]{4}-[0-9A-F]{4}$/);
  });

  it('runs nslookup and nltest /sc_reset from the session', async () => {
    const session = new TestSession(gmsaIdentity('WebApplication1'));
    const lookup = await run(['cmd', '/c', 'nslookup files01'], windows(session));
    expect(lookup.stdout).to.match(/\r\nName: {4}FILES01\.contoso\.com\r\nAddress: {2}127\.\d+\.\d+\.101\r\n\r\n$/);
    const reset = await run(['nltest', '/sc_reset:contoso.com'], windows(session));
    expect(reset.stdout).to.equal('Flags: 30 HAS_IP  HAS_TIMESERV\r\nTrusted DC Name \\\\dc1.contoso.com\r\nTrusted DC Connection Status Status = 0 0x0 NERR_Success\r\nThe command completed successfully\r\n');
    expect(session.resets).to.equal(1);
  });
});

describe('PowerShell on UNC paths', () => {
  it('Set-Content, Add-Content, Get-Content and Test-Path', async () => {
    const session = new TestSession(gmsaIdentity('WebApplication1'));
    const script = "Set-Content -Path \\\\files01\\data\\ps.txt -Value 'one'; Add-Content \\\\files01\\data\\ps.txt two; Get-Content \\\\files01\\data\\ps.txt; Test-Path \\\\files01\\data\\ps.txt; Test-Path \\\\files01\\data\\no.txt";
    expect(await run(['powershell', '-Command', script], windows(session))).to.deep.equal({ stdout: 'one\r\ntwo\r\nTrue\r\nFalse\r\n', stderr: '', exitCode: 0 });
    expect(await run(['powershell', '-Command', 'Test-Path \\\\files01\\data\\ps.txt'], windows(new TestSession(noGmsaIdentity(), session.domain, session.contents)))).to.deep.equal({
      stdout: 'False\r\n',
      stderr: '',
      exitCode: 0,
    });
  });

  it('writes error records: access denied on Set-Content', async () => {
    const session = new TestSession(gmsaIdentity('EventLogger'));
    expect(await run(['powershell', '-Command', "Set-Content -Path \\\\files01\\data\\f.txt -Value 'x'"], windows(session))).to.deep.equal({
      stdout: '',
      stderr:
        "Set-Content : Access to the path '\\\\files01\\data\\f.txt' is denied.\r\n" +
        'At line:1 char:1\r\n' +
        "+ Set-Content -Path \\\\files01\\data\\f.txt -Value 'x'\r\n" +
        `+ ${'~'.repeat("Set-Content -Path \\\\files01\\data\\f.txt -Value 'x'".length)}\r\n` +
        "    + CategoryInfo          : PermissionDenied: (\\\\files01\\data\\f.txt:String) [Set-Content], UnauthorizedAccessException\r\n" +
        '    + FullyQualifiedErrorId : GetContentWriterUnauthorizedAccessError,Microsoft.PowerShell.Commands.SetContentCommand\r\n' +
        ' \r\n',
      exitCode: 1,
    });
  });

  it('writes error records: a path not found, at its place in the script; the trust failure on read', async () => {
    const missing = await run(['powershell', '-Command', 'echo start; Get-Content \\\\nosuch\\data\\f.txt'], windows(new TestSession(gmsaIdentity('EventLogger'))));
    expect(missing.stdout).to.equal('start\r\n');
    expect(missing.stderr).to.equal(
      "Get-Content : Cannot find path '\\\\nosuch\\data\\f.txt' because it does not exist.\r\n" +
        'At line:1 char:13\r\n' +
        '+ echo start; Get-Content \\\\nosuch\\data\\f.txt\r\n' +
        `+ ${' '.repeat(12)}${'~'.repeat('Get-Content \\\\nosuch\\data\\f.txt'.length)}\r\n` +
        '    + CategoryInfo          : ObjectNotFound: (\\\\nosuch\\data\\f.txt:String) [Get-Content], ItemNotFoundException\r\n' +
        '    + FullyQualifiedErrorId : PathNotFound,Microsoft.PowerShell.Commands.GetContentCommand\r\n' +
        ' \r\n',
    );
    const trust = await run(['powershell', '-Command', 'Get-Content \\\\files01\\data\\f.txt'], windows(new TestSession(channelTakenIdentity())));
    expect(trust.stderr.split('\r\n')[0]).to.equal('Get-Content : The trust relationship between this workstation and the primary domain failed.');
    expect(trust.stderr).to.include('    + CategoryInfo          : ReadError: (\\\\files01\\data\\f.txt:String) [Get-Content], IOException\r\n');
    expect(trust.stderr).to.include('    + FullyQualifiedErrorId : GetContentReaderIOError,Microsoft.PowerShell.Commands.GetContentCommand\r\n');
    const unreachable = await run(['powershell', '-Command', 'Set-Content \\\\files02\\data\\f.txt x'], windows(new TestSession(gmsaIdentity('EventLogger'))));
    expect(unreachable.stderr.split('\r\n')[0]).to.equal('Set-Content : The network path was not found.');
    expect(unreachable.stderr).to.include('    + FullyQualifiedErrorId : GetContentWriterIOError,Microsoft.PowerShell.Commands.SetContentCommand\r\n');
  });
});

describe('Test-ComputerSecureChannel', () => {
  it('True, with -Verbose the ShouldProcess line and "in good condition"', async () => {
    const result = await run(['powershell', '-Command', 'Test-ComputerSecureChannel -Verbose'], windows(new TestSession(gmsaIdentity('WebApplication1'))));
    expect(result).to.deep.equal({
      stdout:
        'VERBOSE: Performing the operation "Test-ComputerSecureChannel" on target "web-0".\r\n' +
        'True\r\n' +
        'VERBOSE: The secure channel between the local computer and the domain contoso.com is in good condition.\r\n',
      stderr: '',
      exitCode: 0,
    });
  });

  it('False when the channel is broken; -Repair takes it back', async () => {
    const session = new TestSession(channelTakenIdentity());
    expect((await run(['powershell', '-Command', 'Test-ComputerSecureChannel -Verbose'], windows(session))).stdout).to.equal(
      'VERBOSE: Performing the operation "Test-ComputerSecureChannel" on target "web-0".\r\nFalse\r\nVERBOSE: The secure channel between the local computer and the domain contoso.com is broken.\r\n',
    );
    session.afterReset = gmsaIdentity('WebApplication1');
    expect((await run(['powershell', '-Command', 'Test-ComputerSecureChannel -Repair -Verbose'], windows(session))).stdout).to.equal(
      'VERBOSE: Performing the operation "Test-ComputerSecureChannel" on target "web-0".\r\nTrue\r\nVERBOSE: The secure channel between the local computer and the domain contoso.com was successfully repaired.\r\n',
    );
    expect(session.resets).to.equal(1);
  });

  it('without a gMSA: the computer is not part of a domain (a terminating error)', async () => {
    const result = await run(['powershell', '-Command', 'Test-ComputerSecureChannel'], windows(new TestSession(noGmsaIdentity())));
    expect(result).to.deep.equal({
      stdout: '',
      stderr:
        'Test-ComputerSecureChannel : Cannot verify the secure channel password for the local computer. The local computer is not currently part of a domain.\r\n' +
        'At line:1 char:1\r\n' +
        '+ Test-ComputerSecureChannel\r\n' +
        '+ ~~~~~~~~~~~~~~~~~~~~~~~~~~\r\n' +
        '    + CategoryInfo          : InvalidOperation: (web-0:String) [Test-ComputerSecureChannel], InvalidOperationException\r\n' +
        '    + FullyQualifiedErrorId : ComputerNotInDomain,Microsoft.PowerShell.Commands.TestComputerSecureChannelCommand\r\n' +
        ' \r\n',
      exitCode: 1,
    });
  });
});
