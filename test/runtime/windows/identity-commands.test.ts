import { expect } from 'chai';
import { evaluateContainerIdentity, type ContainerIdentity } from '../../../src/runtime/windows/container-identity.js';
import { parseCredentialSpec } from '../../../src/runtime/windows/credential-spec.js';
import {
  expandWindowsVariables,
  identityCommandFor,
  runIdentityCommand,
  runIdentityCommandLine,
  splitCommandLine,
} from '../../../src/runtime/windows/identity-commands.js';
import { defaultNodeDirectory } from '../../../src/runtime/windows/node-directory.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './kep-example.js';

const HOSTNAME = 'iis-auth-7776966999-n5nzr';

function identity(runAs: string | undefined, withGmsa: boolean): ContainerIdentity {
  const spec = withGmsa ? parseCredentialSpec(KEP_EXAMPLE_CREDENTIAL_SPEC) : undefined;
  const decision = evaluateContainerIdentity(defaultNodeDirectory(), spec, runAs, 'ContainerUser', HOSTNAME, 'strict');
  expect(decision.startError).to.equal(undefined);
  return decision.identity;
}

const gmsaUser = identity(undefined, true);
const gmsaSystem = identity('NT AUTHORITY\\SYSTEM', true);
const plain = identity(undefined, false);
const run = (argv: string[], who: ContainerIdentity) => runIdentityCommand(argv, who)!;

describe('identity commands inside a Windows container', () => {
  const table: Array<{ name: string; argv: string[]; who: ContainerIdentity; stdout: string; prefixOnly?: boolean; stderr?: string; exitCode: number }> = [
    { name: 'whoami of a gMSA container as ContainerUser', argv: ['whoami'], who: gmsaUser, stdout: 'user manager\\containeruser\n', exitCode: 0 },
    { name: 'whoami as SYSTEM', argv: ['whoami.exe'], who: gmsaSystem, stdout: 'nt authority\\system\n', exitCode: 0 },
    {
      name: 'whoami /upn of a local user',
      argv: ['whoami', '/upn'],
      who: gmsaUser,
      stdout: '',
      stderr: 'ERROR: Unable to get User Principal Name (UPN) as the current logged-on user is not a domain user.\n',
      exitCode: 1,
    },
    { name: 'whoami /upn as SYSTEM with a working gMSA', argv: ['whoami', '/UPN'], who: gmsaSystem, stdout: 'WebApplication1$@contoso.com\n', exitCode: 0 },
    { name: 'hostname', argv: ['hostname'], who: gmsaUser, stdout: `${HOSTNAME}\n`, exitCode: 0 },
    { name: 'echo %USERNAME%', argv: ['echo', '%USERNAME%'], who: gmsaUser, stdout: 'ContainerUser\n', exitCode: 0 },
    { name: 'echo %username% (case-insensitive)', argv: ['echo', '%username%'], who: gmsaUser, stdout: 'ContainerUser\n', exitCode: 0 },
    { name: 'echo %USERDOMAIN% of a virtual account', argv: ['echo', '%USERDOMAIN%'], who: gmsaUser, stdout: 'User Manager\n', exitCode: 0 },
    { name: 'echo %COMPUTERNAME% (NetBIOS: 15 characters)', argv: ['echo', '%COMPUTERNAME%'], who: gmsaUser, stdout: 'IIS-AUTH-777696\n', exitCode: 0 },
    { name: 'echo of SYSTEM in a gMSA container', argv: ['echo', '%USERDOMAIN%\\%USERNAME%'], who: gmsaSystem, stdout: 'DEMO\\IIS-AUTH-777696$\n', exitCode: 0 },
    { name: 'echo leaves unknown variables', argv: ['echo', '%NOPE%', 'x'], who: gmsaUser, stdout: '%NOPE% x\n', exitCode: 0 },
    {
      name: 'nltest /parentdomain with a gMSA',
      argv: ['nltest', '/parentdomain'],
      who: gmsaUser,
      stdout: 'contoso.com. (1)\nThe command completed successfully\n',
      exitCode: 0,
    },
    {
      name: 'nltest /parentdomain without a credential spec',
      argv: ['nltest.exe', '/PARENTDOMAIN'],
      who: plain,
      stdout: 'Getting parent domain failed: Status = 1722 0x6ba RPC_S_SERVER_UNAVAILABLE\n',
      exitCode: 1,
    },
    {
      name: 'nltest /query with a gMSA',
      argv: ['nltest', '/query'],
      who: gmsaUser,
      stdout: 'Flags: 0\nConnection Status = 0 0x0 NERR_Success\nThe command completed successfully\n',
      exitCode: 0,
    },
    {
      name: 'nltest /sc_verify of the gMSA domain',
      argv: ['nltest', '/sc_verify:contoso.com'],
      who: gmsaUser,
      stdout:
        'Flags: b0 HAS_IP  HAS_TIMESERV\nTrusted DC Name \\\\dc1.contoso.com\nTrusted DC Connection Status Status = 0 0x0 NERR_Success\n' +
        'Trust Verification Status = 0 0x0 NERR_Success\nThe command completed successfully\n',
      exitCode: 0,
    },
    {
      name: 'nltest /sc_verify by NetBIOS name',
      argv: ['nltest', '/sc_verify:DEMO'],
      who: gmsaUser,
      stdout: 'Flags: b0 HAS_IP  HAS_TIMESERV\n',
      prefixOnly: true,
      exitCode: 0,
    },
    {
      name: 'nltest /sc_verify of another domain',
      argv: ['nltest', '/sc_verify:fabrikam.com'],
      who: gmsaUser,
      stdout: 'I_NetLogonControl failed: Status = 1355 0x54b ERROR_NO_SUCH_DOMAIN\n',
      exitCode: 1,
    },
    {
      name: 'nltest /sc_verify without a credential spec',
      argv: ['nltest', '/sc_verify:contoso.com'],
      who: plain,
      stdout: 'I_NetLogonControl failed: Status = 1722 0x6ba RPC_S_SERVER_UNAVAILABLE\n',
      exitCode: 1,
    },
    { name: 'klist without a gMSA', argv: ['klist'], who: plain, stdout: '\nCurrent LogonId is 0:0x5b7e4\n\nCached Tickets: (0)\n\n', exitCode: 0 },
  ];

  for (const c of table) {
    it(c.name, () => {
      const result = run(c.argv, c.who);
      if (c.prefixOnly === true) expect(result.stdout.startsWith(c.stdout)).to.equal(true, result.stdout);
      else expect(result.stdout).to.equal(c.stdout);
      expect(result.stderr).to.equal(c.stderr ?? '');
      expect(result.exitCode).to.equal(c.exitCode);
    });
  }

  it('klist with a working gMSA shows the gMSA TGT from the domain controller', () => {
    const { stdout, exitCode } = run(['klist'], gmsaUser);
    expect(exitCode).to.equal(0);
    expect(stdout).to.contain('Cached Tickets: (1)');
    expect(stdout).to.contain('#0>\tClient: WebApplication1$ @ CONTOSO.COM\n\tServer: krbtgt/CONTOSO.COM @ CONTOSO.COM\n');
    expect(stdout).to.contain('Kdc Called: dc1.contoso.com');
  });

  it('klist get <spn> adds the service ticket', () => {
    const { stdout } = run(['klist', 'get', 'http/web.contoso.com'], gmsaUser);
    expect(stdout).to.contain('Cached Tickets: (2)');
    expect(stdout).to.contain('Server: http/web.contoso.com @ CONTOSO.COM');
  });

  it('rejects unknown options like the real tools', () => {
    expect(run(['whoami', '/bogus'], gmsaUser)).to.deep.include({ exitCode: 1 });
    expect(run(['nltest', '/bogus'], gmsaUser)).to.deep.include({ exitCode: 1 });
    expect(run(['klist', 'bogus'], gmsaUser)).to.deep.include({ exitCode: 1 });
  });

  it('knows only its own commands', () => {
    expect(identityCommandFor(['C:\\Windows\\System32\\NLTEST.EXE'])).to.not.equal(undefined);
    expect(runIdentityCommand(['ping', 'x'], gmsaUser)).to.equal(undefined);
    expect(runIdentityCommand([], gmsaUser)).to.equal(undefined);
  });

  it('runs cmd /c lines: expands first, then splits quoted words', () => {
    expect(runIdentityCommandLine('echo %USERNAME%', gmsaUser)?.stdout).to.equal('ContainerUser\n');
    expect(runIdentityCommandLine('nltest /parentdomain', gmsaUser)?.exitCode).to.equal(0);
    expect(splitCommandLine('a "b c" d')).to.deep.equal(['a', 'b c', 'd']);
    expect(expandWindowsVariables('%a%%B%', { A: '1', b: '2' })).to.equal('12');
  });
});
