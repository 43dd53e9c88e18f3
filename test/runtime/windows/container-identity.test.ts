import { expect } from 'chai';
import {
  evaluateContainerIdentity,
  identityStartError,
  type IdentityMode,
} from '../../../src/runtime/windows/container-identity.js';
import { parseCredentialSpec } from '../../../src/runtime/windows/credential-spec.js';
import { DEFAULT_NODE_FILE } from '../../../src/runtime/windows/default-node.js';
import { defaultNodeDirectory, parseNodeFile, type NodeDirectory } from '../../../src/runtime/windows/node-directory.js';
import { runIdentityCommand } from '../../../src/runtime/windows/identity-commands.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC, kepExampleWith } from './kep-example.js';

const CCG_PLUGIN = '{859E1386-BDB4-49E8-85C7-3070B13920E1}';

function nodeWith(change: (f: any) => void): NodeDirectory {
  const file = structuredClone(DEFAULT_NODE_FILE) as any;
  change(file);
  return parseNodeFile(JSON.stringify(file), 'node.yaml');
}

const workgroupNode = (healthy = true): NodeDirectory =>
  nodeWith((f) => {
    delete f.node.domain;
    f.node.name = 'WINWORK1';
    f.node.ccgPlugin = { pluginGuid: CCG_PLUGIN, account: 'DEMO\\ccg-reader', healthy };
    f.domains[0].groups.push({ name: 'CcgReaders', members: ['ccg-reader'] });
    f.domains[0].gmsas[0].principalsAllowedToRetrieveManagedPassword.push('CcgReaders');
  });

const withCcg = kepExampleWith((d) => {
  d.ActiveDirectoryConfig.HostAccountConfig = { PortableCcgVersion: '1', PluginGUID: CCG_PLUGIN, PluginInput: 'contoso.com:reader' };
});

interface FailureCase {
  name: string;
  node: () => NodeDirectory;
  spec: string;
  reason: string;
  message: RegExp;
  /** nltest /query line in realistic mode. */
  connection: string;
  /** klist failure in realistic mode. */
  klist: string;
}

const failureCases: FailureCase[] = [
  {
    name: 'the node may not retrieve the gMSA password (SqlReporting)',
    node: defaultNodeDirectory,
    spec: kepExampleWith((d) => {
      d.DomainJoinConfig.MachineAccountName = 'SqlReporting';
      d.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: 'SqlReporting', Scope: 'DEMO' }];
    }),
    reason: 'node-not-allowed',
    message: /^node WINNODE1 \(WINNODE1\$\) is not allowed to retrieve the managed password of gMSA DEMO\\SqlReporting: .*Test-ADServiceAccount SqlReporting would return False; ERROR_NO_TRUST_LSA_SECRET\)$/,
    connection: 'Connection Status = 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET',
    klist: 'klist failed with 0xc000018a/-1073741430: The workstation does not have a trust secret.',
  },
  {
    name: 'the gMSA does not exist',
    node: defaultNodeDirectory,
    spec: kepExampleWith((d) => (d.DomainJoinConfig.MachineAccountName = 'WebApplication9')),
    reason: 'gmsa-not-found',
    message: /^gMSA WebApplication9 \(DomainJoinConfig.MachineAccountName\) does not exist in domain contoso.com \(ERROR_NO_TRUST_SAM_ACCOUNT\)$/,
    connection: 'Connection Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT',
    klist: 'klist failed with 0xc000018b/-1073741429: The SAM database on the Windows Server does not have a computer account for this workstation trust relationship.',
  },
  {
    name: 'the credential spec names an unknown domain',
    node: defaultNodeDirectory,
    spec: kepExampleWith((d) => (d.DomainJoinConfig.DnsName = 'fabrikam.com')),
    reason: 'domain-unknown',
    message: /^credential spec domain fabrikam.com \(DomainJoinConfig.DnsName\) is not a domain node WINNODE1 can reach/,
    connection: 'Connection Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT',
    klist: 'klist failed with 0xc000018b/',
  },
  {
    name: "the credential spec's SID is not the domain's",
    node: defaultNodeDirectory,
    spec: kepExampleWith((d) => (d.DomainJoinConfig.Sid = 'S-1-5-21-1-2-3')),
    reason: 'domain-mismatch',
    message: /^credential spec DomainJoinConfig.Sid S-1-5-21-1-2-3 is not the Sid of domain contoso.com \(S-1-5-21-2126729477-2524075714-3094792973\) \(ERROR_NO_TRUST_SAM_ACCOUNT\)$/,
    connection: 'Connection Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT',
    klist: 'klist failed with 0xc000018b/',
  },
  {
    name: "the credential spec's GUID is not the domain's",
    node: defaultNodeDirectory,
    spec: kepExampleWith((d) => (d.DomainJoinConfig.Guid = '00000000-87ca-4fcd-92ec-e79e5252348a')),
    reason: 'domain-mismatch',
    message: /^credential spec DomainJoinConfig.Guid 00000000-87ca-4fcd-92ec-e79e5252348a is not the Guid of domain contoso.com/,
    connection: 'Connection Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT',
    klist: 'klist failed with 0xc000018b/',
  },
  {
    name: 'no domain controller is reachable',
    node: () => nodeWith((f) => (f.domains[0].domainControllers[0].reachable = false)),
    spec: KEP_EXAMPLE_CREDENTIAL_SPEC,
    reason: 'domain-controller-unreachable',
    message: /^no domain controller of contoso.com is reachable from node WINNODE1 \(ERROR_NO_LOGON_SERVERS\)$/,
    connection: 'Connection Status = 1311 0x51f ERROR_NO_LOGON_SERVERS',
    klist: 'klist failed with 0xc0000022/-1073741790: {Access Denied}',
  },
  {
    name: 'the node is not domain-joined and has no CCG plugin',
    node: () => nodeWith((f) => delete f.node.domain),
    spec: KEP_EXAMPLE_CREDENTIAL_SPEC,
    reason: 'node-not-domain-joined',
    message: /^node WINNODE1 is not joined to a domain and the credential spec has no ActiveDirectoryConfig.HostAccountConfig, so it cannot retrieve the password of gMSA DEMO\\WebApplication1 \(ERROR_NO_LOGON_SERVERS\)$/,
    connection: 'Connection Status = 1311 0x51f ERROR_NO_LOGON_SERVERS',
    klist: 'klist failed with 0xc000005e/-1073741730: There are currently no logon servers available to service the logon request.',
  },
];

const decide = (node: NodeDirectory, spec: string | undefined, mode: IdentityMode, runAs?: string, image = 'ContainerUser') =>
  evaluateContainerIdentity(node, spec === undefined ? undefined : parseCredentialSpec(spec), runAs, image, 'iis-auth-7776966999-n5nzr', mode, {
    containerId: 'c0ffee',
  });

const run = (argv: string[], identity: Parameters<typeof runIdentityCommand>[1]) => runIdentityCommand(argv, identity)!;

describe('container identity decision', () => {
  it('starts the KEP example unchanged on the default node, as the gMSA on the network', () => {
    for (const mode of ['strict', 'realistic'] as const) {
      const { startError, identity } = decide(defaultNodeDirectory(), KEP_EXAMPLE_CREDENTIAL_SPEC, mode);
      expect(startError).to.equal(undefined);
      expect(identity.domainAccess).to.deep.include({ kind: 'ok', account: 'DEMO\\WebApplication1$', domainController: 'dc1.contoso.com' });
      expect(identity.networkIdentity).to.equal('DEMO\\WebApplication1$');
      expect(identity.userName).to.equal('ContainerUser');
    }
  });

  it('starts EventLogger, which the computer account may retrieve directly', () => {
    const spec = kepExampleWith((d) => (d.DomainJoinConfig.MachineAccountName = 'EventLogger'));
    expect(decide(defaultNodeDirectory(), spec, 'strict').startError).to.equal(undefined);
  });

  for (const c of failureCases) {
    describe(`when ${c.name}`, () => {
      it('strict: the start fails with the reason and the upstream code', () => {
        const decision = decide(c.node(), c.spec, 'strict');
        expect(decision.startError?.reason).to.equal(c.reason);
        expect(decision.startError?.code).to.equal('FailedPrecondition');
        expect(decision.startError?.message).to.match(c.message);
        const err = identityStartError(decision);
        expect(err?.code).to.equal('FailedPrecondition');
      });

      it('realistic: the container starts and the identity commands fail with the real codes', () => {
        const { startError, identity } = decide(c.node(), c.spec, 'realistic');
        expect(startError).to.equal(undefined);
        // nltest /parentdomain answers from the credential spec even when the logon fails.
        expect(run(['nltest', '/parentdomain'], identity).exitCode).to.equal(0);
        expect(run(['nltest', '/query'], identity).stdout).to.contain(c.connection);
        const klist = run(['klist'], identity);
        expect(klist.exitCode).to.equal(1);
        expect(klist.stdout).to.contain(c.klist);
        const upn = run(['whoami', '/upn'], identity);
        expect(upn.exitCode).to.equal(1);
        expect(upn.stderr).to.contain('is not a domain user');
      });
    });
  }

  describe('Container Credential Guard (node not domain-joined)', () => {
    it('starts when the plugin is installed and its account may retrieve the password', () => {
      const { startError, identity } = decide(workgroupNode(), withCcg, 'strict');
      expect(startError).to.equal(undefined);
      expect(identity.networkIdentity).to.equal('DEMO\\WebApplication1$');
    });

    for (const mode of ['strict', 'realistic'] as const) {
      it(`${mode}: a failing plugin fails the start with the hcsshim error`, () => {
        const { startError } = decide(workgroupNode(false), withCcg, mode);
        expect(startError?.reason).to.equal('ccg-plugin-failure');
        expect(startError?.message).to.match(
          /^hcsshim::CreateComputeSystem c0ffee: winapi error #3489792023: Failed to setup the external credentials for Container 'c0ffee': The RPC server is unavailable\. \(0xC0020017\)/,
        );
      });

      it(`${mode}: a plugin that is not installed fails the start`, () => {
        const other = withCcg.replace(CCG_PLUGIN, '{00000000-0000-0000-0000-000000000001}');
        const { startError } = decide(workgroupNode(), other, mode);
        expect(startError?.reason).to.equal('ccg-plugin-failure');
        expect(startError?.message).to.contain('CCG plugin {00000000-0000-0000-0000-000000000001} is not installed on node WINWORK1');
      });
    }
  });

  describe('the same credential spec again', () => {
    it("each node checks it against its own AD: a node whose DC is down after one whose DC answers", () => {
      const document = parseCredentialSpec(KEP_EXAMPLE_CREDENTIAL_SPEC);
      const up = defaultNodeDirectory();
      const down = nodeWith((f) => (f.domains[0].domainControllers[0].reachable = false));
      const check = (node: NodeDirectory) =>
        evaluateContainerIdentity(node, document, undefined, 'ContainerUser', 'web-0', 'strict', { containerId: 'c1' }).startError?.reason;
      expect([check(up), check(down), check(up)]).to.deep.equal([undefined, 'domain-controller-unreachable', undefined]);
    });

    it('a failing CCG plugin names each container that tries it', () => {
      const node = workgroupNode(false);
      const document = parseCredentialSpec(withCcg);
      for (const containerId of ['first', 'second']) {
        const { startError, identity } = evaluateContainerIdentity(node, document, undefined, 'ContainerUser', 'web-0', 'strict', { containerId });
        expect(startError?.message).to.contain(`Failed to setup the external credentials for Container '${containerId}'`);
        expect(identity.domainAccess.kind === 'failed' && identity.domainAccess.failure.message).to.equal(startError?.message);
      }
    });
  });

  describe('run-as user', () => {
    for (const mode of ['strict', 'realistic'] as const) {
      it(`${mode}: an unknown user fails the start with "The user name or password is incorrect."`, () => {
        const { startError } = decide(defaultNodeDirectory(), undefined, mode, 'NoSuchUser');
        expect(startError?.reason).to.equal('unknown-user');
        expect(startError?.message).to.match(/: The user name or password is incorrect\.$/);
      });
    }

    it('refuses a domain account as run-as user (containers cannot log on as one)', () => {
      expect(decide(defaultNodeDirectory(), undefined, 'strict', 'DEMO\\alice').startError?.reason).to.equal('unknown-user');
    });

    it('takes run_as_username over the image user, and the image user otherwise', () => {
      expect(decide(defaultNodeDirectory(), undefined, 'strict', 'ContainerAdministrator').identity.userName).to.equal('ContainerAdministrator');
      expect(decide(defaultNodeDirectory(), undefined, 'strict', '', 'ContainerUser').identity.userName).to.equal('ContainerUser');
      expect(decide(defaultNodeDirectory(), undefined, 'strict', undefined, '').identity.userName).to.equal('ContainerAdministrator');
    });

    it('accepts NT AUTHORITY service accounts in any case', () => {
      const { identity, startError } = decide(defaultNodeDirectory(), undefined, 'strict', 'nt authority\\network service');
      expect(startError).to.equal(undefined);
      expect(identity).to.include({ userName: 'NETWORK SERVICE', userDomain: 'NT AUTHORITY', userKind: 'service' });
    });
  });

  describe('HostProcess', () => {
    const host = (runAs: string | undefined, node = defaultNodeDirectory()) =>
      evaluateContainerIdentity(node, undefined, runAs, undefined, 'ignored-pod-hostname', 'strict', { hostProcess: true });

    it('runs as NT AUTHORITY\\SYSTEM by default, with the node hostname and the node computer account', () => {
      const { identity, startError } = host(undefined);
      expect(startError).to.equal(undefined);
      expect(identity).to.include({ userName: 'SYSTEM', hostname: 'winnode1', computerName: 'WINNODE1', hostProcess: true });
      expect(identity.networkIdentity).to.equal('DEMO\\WINNODE1$');
      expect(identity.upn).to.equal('WINNODE1$@contoso.com');
    });

    it('runs as LOCAL SERVICE or a local group of the node', () => {
      expect(host('NT AUTHORITY\\LOCAL SERVICE').identity.userName).to.equal('LOCAL SERVICE');
      expect(host('Users').identity).to.include({ userName: 'Users', userKind: 'group' });
    });

    it('cannot run as a container-only account', () => {
      expect(host('ContainerUser').startError?.message).to.contain('The user name or password is incorrect.');
    });
  });
});
