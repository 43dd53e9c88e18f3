// A domain with a file server, identities in it, and the runtime's WindowsSession over them (its
// SMB client and share contents, file-shares.ts): shared by the SMB and domain command tests.
import type { ContainerIdentity, DomainAccess, IdentityFailureReason } from '../../../src/runtime/windows/container-identity.js';
import { FileShareContents } from '../../../src/runtime/windows/file-shares.js';
import { parseNodeFile, type NodeDirectory } from '../../../src/runtime/windows/node-directory.js';
import { ContainerWindowsSession } from '../../../src/runtime/windows-session.js';
import { ERROR_ACCESS_DENIED, ERROR_NO_LOGON_SERVERS, ERROR_NO_TRUST_LSA_SECRET, STATUS_ACCESS_DENIED, type Win32Status } from '../../../src/runtime/windows/windows-status.js';

export const SMB_NODE_YAML = `
node: { name: WINNODE1, hostname: winnode1, domain: contoso.com }
domains:
  - dnsName: contoso.com
    netbiosName: DEMO
    sid: S-1-5-21-2126729477-2524075714-3094792973
    guid: 244818ae-87ca-4fcd-92ec-e79e5252348a
    dnsTreeName: contoso.com
    domainControllers:
      - { name: dc1.contoso.com }
      - { name: dc2.contoso.com, address: 127.0.53.2 }
    groups:
      - { name: WebAppHosts, members: ['WINNODE1$'] }
      - { name: ShareWriters, members: [AppAccounts] }
      - { name: AppAccounts, members: ['WebApplication1$'] }
    gmsas:
      - { name: WebApplication1, principalsAllowedToRetrieveManagedPassword: [WebAppHosts] }
      - { name: EventLogger, principalsAllowedToRetrieveManagedPassword: ['WINNODE1$'] }
    fileServers:
      - name: FILES01
        shares:
          - { name: data, changeAccess: [ShareWriters], readAccess: ['DEMO\\EventLogger$'] }
          - { name: public, readAccess: [Everyone], files: { readme.txt: "Welcome\\r\\n", 'docs\\guide.txt': "Guide\\r\\n" } }
      - { name: FILES02, address: 127.0.54.1, reachable: false, shares: [{ name: data, fullAccess: [Everyone] }] }
`;

export function smbDirectory(yaml = SMB_NODE_YAML): NodeDirectory {
  return parseNodeFile(yaml, 'node.yaml');
}

export const CONTOSO = { dnsName: 'contoso.com', netbiosName: 'DEMO', dnsTreeName: 'contoso.com' };

/** A NETWORK SERVICE container identity with the given domain access. */
export function identityWith(access: DomainAccess, hostname = 'web-0'): ContainerIdentity {
  const identity: ContainerIdentity = {
    hostProcess: false,
    userName: 'NETWORK SERVICE',
    userDomain: 'NT AUTHORITY',
    userKind: 'service',
    hostname,
    computerName: hostname.toUpperCase(),
    domainAccess: access,
    environment: {},
    logonId: '0x3e4',
  };
  if (access.kind !== 'none') identity.networkIdentity = access.account;
  return identity;
}

export const gmsaIdentity = (name: string): ContainerIdentity =>
  identityWith({ kind: 'ok', domain: CONTOSO, account: `DEMO\\${name}$`, domainController: 'dc1.contoso.com' });

export const noGmsaIdentity = (): ContainerIdentity => identityWith({ kind: 'none' });

export function failedIdentity(reason: IdentityFailureReason, netlogonStatus: Win32Status = ERROR_NO_TRUST_LSA_SECRET): ContainerIdentity {
  return identityWith({
    kind: 'failed',
    domain: CONTOSO,
    account: 'DEMO\\WebApplication1$',
    failure: { reason, message: reason, netlogonStatus, kerberosStatus: STATUS_ACCESS_DENIED },
  });
}

export const channelTakenIdentity = (): ContainerIdentity => failedIdentity('secure-channel-taken', ERROR_ACCESS_DENIED);
export const dcDownIdentity = (): ContainerIdentity => failedIdentity('domain-controller-unreachable', ERROR_NO_LOGON_SERVERS);

/**
 * The runtime's session (windows-session.ts) over an identity and a domain the test sets; resets
 * are counted and make the identity `afterReset`.
 */
export class TestSession extends ContainerWindowsSession {
  private readonly state: { current: ContainerIdentity | undefined; domain: NodeDirectory; resets: number; afterReset: ContainerIdentity | undefined };

  constructor(
    current: ContainerIdentity | undefined,
    domain: NodeDirectory = smbDirectory(),
    readonly contents = new FileShareContents(() => Date.UTC(2026, 10, 28, 13, 31)),
  ) {
    const state = { current, domain, resets: 0, afterReset: undefined as ContainerIdentity | undefined };
    super({
      directory: () => state.domain,
      identity: () => state.current,
      resetSecureChannel: () => {
        state.resets++;
        if (state.afterReset !== undefined) state.current = state.afterReset;
      },
      fileShares: contents,
    });
    this.state = state;
  }

  get domain(): NodeDirectory {
    return this.state.domain;
  }

  set domain(domain: NodeDirectory) {
    this.state.domain = domain;
  }

  get resets(): number {
    return this.state.resets;
  }

  set afterReset(identity: ContainerIdentity) {
    this.state.afterReset = identity;
  }
}
