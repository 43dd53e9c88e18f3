import { deepFreeze } from '../../deep-freeze.js';
import { merged } from '../../tuning/merged.js';
import { RuntimeError, type RuntimeErrorCode } from '../errors.js';
import { credentialSpecAccount, type CredentialSpecDocument } from './credential-spec.js';
import type { DomainSpec, NodeDirectory } from './node-directory.js';
import {
  CCG_EVENT_TEXT,
  CCG_WINAPI_ERROR,
  ERROR_NO_LOGON_SERVERS,
  ERROR_NO_TRUST_LSA_SECRET,
  ERROR_NO_TRUST_SAM_ACCOUNT,
  LOGON_FAILURE_TEXT,
  NERR_SUCCESS,
  STATUS_ACCESS_DENIED,
  STATUS_NO_LOGON_SERVERS,
  STATUS_NO_TRUST_LSA_SECRET,
  STATUS_NO_TRUST_SAM_ACCOUNT,
  STATUS_TIME_DIFFERENCE_AT_DC,
  type NtStatus,
  type Win32Status,
} from './windows-status.js';

/**
 * `strict`: the GMSA KEP's behaviour — the runtime checks the credential spec against the node's
 * AD access and fails the start. `realistic`: what a WS2019 host does — the container starts and
 * the identity commands inside fail with the real codes (CCG failures and unknown users still
 * fail the start, as they do on a real host).
 */
export type IdentityMode = 'strict' | 'realistic';

/** Checks an identity mode option value (`strict` is the default). */
export function parseIdentityMode(value: string): IdentityMode {
  if (value === 'strict' || value === 'realistic') return value;
  throw new RuntimeError('InvalidArgument', `identity mode must be "strict" or "realistic", not ${JSON.stringify(value)}`);
}

export type IdentityFailureReason =
  | 'node-not-domain-joined'
  | 'node-not-allowed'
  | 'gmsa-not-found'
  | 'domain-unknown'
  | 'domain-mismatch'
  | 'domain-controller-unreachable'
  /** The domain's DNS records do not resolve: no domain controller can be located. */
  | 'domain-dns-failure'
  /** The domain controller's clock is more than Kerberos' 5 minutes off (KRB_AP_ERR_SKEW). */
  | 'clock-skew'
  | 'ccg-plugin-failure'
  | 'unknown-user'
  /** Before WS2019, a later container with the same gMSA and hostname took the secure channel (shared-gmsa-trust.ts). */
  | 'secure-channel-taken';

/** Why the container cannot use its domain identity, with the codes the tools inside report. */
export interface IdentityFailure {
  reason: IdentityFailureReason;
  message: string;
  /** What nltest reports for the secure channel. */
  netlogonStatus: Win32Status;
  /** What klist reports when it asks for a ticket. */
  kerberosStatus: NtStatus;
}

/** The domain as the container sees it (from the credential spec, or the node for HostProcess). */
export interface ContainerDomain {
  dnsName: string;
  netbiosName: string;
  dnsTreeName: string;
}

/**
 * The container's access to its domain:
 * - `none`: no credential spec (netlogon has no domain to talk to: RPC_S_SERVER_UNAVAILABLE);
 * - `ok`: the account's password was retrieved and a domain controller answers;
 * - `failed`: a credential spec was given but the account cannot log on (realistic mode only).
 */
export type DomainAccess =
  | { kind: 'none' }
  | {
      kind: 'ok';
      domain: ContainerDomain;
      account: string;
      domainController: string;
      /** The gMSA's managed password version the host holds for the container (gMSA containers). */
      passwordVersion?: number;
      /** The secure channel works but new Kerberos tickets fail (clock skew): what klist reports. */
      kerberosFailure?: IdentityFailure;
    }
  | { kind: 'failed'; domain: ContainerDomain; account: string; failure: IdentityFailure };

export type UserKind = 'virtual' | 'service' | 'local' | 'group';

/** Everything the identity commands (whoami, hostname, nltest, klist, %VAR%) need. */
export interface ContainerIdentity {
  hostProcess: boolean;
  /** Account name, canonical case (`ContainerUser`, `SYSTEM`, `NETWORK SERVICE`). */
  userName: string;
  /** Account domain as Windows names it (`User Manager`, `NT AUTHORITY`, the computer name). */
  userDomain: string;
  userKind: UserKind;
  hostname: string;
  /** NetBIOS computer name (%COMPUTERNAME%): the hostname upper-cased, at most 15 characters. */
  computerName: string;
  domainAccess: DomainAccess;
  /** How the container authenticates on the network (`DEMO\WebApplication1$`), when it can. */
  networkIdentity?: string;
  /** The network identity's UPN, for `whoami /upn`, when the process acts as it (SYSTEM, NETWORK SERVICE). */
  upn?: string;
  /** Environment variables the user's session has (USERNAME, USERDOMAIN, COMPUTERNAME, …). */
  environment: Record<string, string>;
  /** Logon session id klist shows. */
  logonId: string;
}

export interface IdentityStartError {
  code: RuntimeErrorCode;
  reason: IdentityFailureReason;
  message: string;
}

export interface IdentityDecision {
  startError?: IdentityStartError;
  identity: ContainerIdentity;
}

export interface IdentityOptions {
  hostProcess?: boolean;
  /** Used in hcsshim-style messages. */
  containerId?: string;
  /** Where checks that came out the same for every container are kept (a runtime's; none: none kept). */
  accessChecks?: AccessChecks;
  /**
   * The managed password version the host retrieved for this container earlier (its logon
   * session): while the password has not rotated since, the container keeps working even when the
   * node may no longer retrieve it.
   */
  heldPasswordVersion?: number;
}

interface ResolvedUser {
  name: string;
  domain: string;
  kind: UserKind;
  logonId: string;
}

/** The built-in service accounts; HostProcess containers may run as these (or a local group). */
const SERVICE_ACCOUNTS: Array<{ names: string[]; name: string; logonId: string }> = [
  { names: ['system', 'localsystem'], name: 'SYSTEM', logonId: '0x3e7' },
  { names: ['local service', 'localservice'], name: 'LOCAL SERVICE', logonId: '0x3e5' },
  { names: ['network service', 'networkservice'], name: 'NETWORK SERVICE', logonId: '0x3e4' },
];

/** ContainerUser and ContainerAdministrator are virtual accounts of the "User Manager" domain. */
const VIRTUAL_ACCOUNTS = ['containeruser', 'containeradministrator'];

/** Without any user, a Windows container runs as the base image default of servercore. */
const DEFAULT_CONTAINER_USER = 'ContainerAdministrator';
/** HostProcess containers with no user run as SYSTEM (the job object's default token). */
const DEFAULT_HOST_PROCESS_USER = 'NT AUTHORITY\\SYSTEM';

export function netbiosComputerName(hostname: string): string {
  const label = hostname.split('.')[0] ?? hostname;
  return label.toUpperCase().slice(0, 15);
}

function resolveUser(
  node: NodeDirectory,
  requested: string,
  computerName: string,
  hostProcess: boolean,
): ResolvedUser | undefined {
  const slash = requested.indexOf('\\');
  const domainPart = slash < 0 ? '' : requested.slice(0, slash);
  const userPart = slash < 0 ? requested : requested.slice(slash + 1);
  const domainLower = domainPart.toLowerCase();
  const userLower = userPart.toLowerCase();
  if (domainLower === 'nt authority') {
    const service = SERVICE_ACCOUNTS.find((s) => s.names.includes(userLower));
    return service === undefined ? undefined : { name: service.name, domain: 'NT AUTHORITY', kind: 'service', logonId: service.logonId };
  }
  // Anything else must be local to the machine: unqualified, `.\`, or qualified with its own name.
  const localDomain = domainLower === '' || domainLower === '.' || domainLower === computerName.toLowerCase();
  if (!localDomain && !(domainLower === 'user manager' && VIRTUAL_ACCOUNTS.includes(userLower))) return undefined;
  if (hostProcess) {
    // HostProcess containers run on the host: service accounts, or a local group of the node
    // (hcsshim then creates a temporary account in that group; we show the group's name).
    const group = node.findLocalGroup(userPart);
    return group === undefined ? undefined : { name: group, domain: computerName, kind: 'group', logonId: '0x7a1c2' };
  }
  const user = node.findLocalUser(userPart);
  if (user === undefined) return undefined;
  if (VIRTUAL_ACCOUNTS.includes(user.toLowerCase())) {
    return { name: user, domain: 'User Manager', kind: 'virtual', logonId: '0x5b7e4' };
  }
  return { name: user, domain: computerName, kind: 'local', logonId: '0x6c3a9' };
}

interface AccessCheck {
  access: DomainAccess;
  /** Failures that stop the start in every mode (CCG). */
  fatal?: IdentityFailure;
  /**
   * The node may not retrieve the gMSA's password now, but a host that retrieved this version
   * before still has it: `access` is what such a container gets (a real host asks again only when
   * the password rotates).
   */
  whileHolding?: { passwordVersion: number; access: DomainAccess };
}

/** Kerberos' default maximum tolerance for computer clock synchronization (5 minutes). */
export const KERBEROS_MAX_CLOCK_SKEW_SECONDS = 300;

function failure(reason: IdentityFailureReason, message: string, netlogonStatus: Win32Status, kerberosStatus: NtStatus): IdentityFailure {
  return { reason, message, netlogonStatus, kerberosStatus };
}

function domainOf(spec: DomainSpec): ContainerDomain {
  return { dnsName: spec.dnsName, netbiosName: spec.netbiosName, dnsTreeName: spec.dnsTreeName };
}

/** What happens when a container starts with this credential spec on this node. */
function checkCredentialSpec(node: NodeDirectory, spec: CredentialSpecDocument, containerId: string): AccessCheck {
  const join = spec.DomainJoinConfig;
  const claimed: ContainerDomain = { dnsName: join.DnsName, netbiosName: join.NetBiosName, dnsTreeName: join.DnsTreeName };
  const account = `${join.NetBiosName}\\${join.MachineAccountName}$`;
  const gmsaName = credentialSpecAccount(spec);
  const failed = (f: IdentityFailure): AccessCheck => ({ access: { kind: 'failed', domain: claimed, account, failure: f } });

  // Password retrieval: a domain-joined node uses its computer account; otherwise the CCG plugin
  // named by HostAccountConfig does it with its own domain account (non-domain-joined gMSA).
  const hostAccount = spec.ActiveDirectoryConfig.HostAccountConfig;
  let requester = node.joinedDomain === undefined ? undefined : node.passwordRetrievalAccount();
  let requesterLabel = `node ${node.name} (${node.computerAccount})`;
  if (requester === undefined) {
    if (hostAccount === undefined) {
      return failed(
        failure(
          'node-not-domain-joined',
          `node ${node.name} is not joined to a domain and the credential spec has no ActiveDirectoryConfig.HostAccountConfig, so it cannot retrieve the password of gMSA ${gmsaName} (ERROR_NO_LOGON_SERVERS)`,
          ERROR_NO_LOGON_SERVERS,
          STATUS_NO_LOGON_SERVERS,
        ),
      );
    }
    const plugin = node.ccgPlugin;
    const ccgError = (detail: string): AccessCheck => {
      const f = failure(
        'ccg-plugin-failure',
        `hcsshim::CreateComputeSystem ${containerId}: winapi error #${CCG_WINAPI_ERROR}: Failed to setup the external credentials for Container '${containerId}': ${CCG_EVENT_TEXT} (${detail})`,
        ERROR_NO_LOGON_SERVERS,
        STATUS_NO_LOGON_SERVERS,
      );
      return merged(failed(f), { fatal: f });
    };
    if (plugin === undefined || plugin.pluginGuid.toLowerCase() !== hostAccount.PluginGUID.toLowerCase()) {
      return ccgError(`CCG plugin ${hostAccount.PluginGUID} is not installed on node ${node.name}`);
    }
    if (plugin.healthy === false) return ccgError(`CCG plugin ${plugin.pluginGuid} on node ${node.name} failed`);
    requester = node.passwordRetrievalAccount();
    requesterLabel = `the CCG plugin account ${plugin.account} of node ${node.name}`;
    if (requester === undefined) return ccgError(`CCG plugin account ${plugin.account} is not in a known domain`);
  }

  const domain = node.findDomain(join.DnsName);
  if (domain === undefined) {
    return failed(
      failure(
        'domain-unknown',
        `credential spec domain ${join.DnsName} (DomainJoinConfig.DnsName) is not a domain node ${node.name} can reach in its Active Directory (ERROR_NO_TRUST_SAM_ACCOUNT)`,
        ERROR_NO_TRUST_SAM_ACCOUNT,
        STATUS_NO_TRUST_SAM_ACCOUNT,
      ),
    );
  }
  const mismatches: Array<[string, string, string]> = [
    ['Sid', join.Sid, domain.sid],
    ['Guid', join.Guid, domain.guid],
    ['NetBiosName', join.NetBiosName, domain.netbiosName],
    ['DnsTreeName', join.DnsTreeName, domain.dnsTreeName],
  ];
  for (const [field, given, actual] of mismatches) {
    if (given.toLowerCase() !== actual.toLowerCase()) {
      return failed(
        failure(
          'domain-mismatch',
          `credential spec DomainJoinConfig.${field} ${given} is not the ${field} of domain ${domain.dnsName} (${actual}) (ERROR_NO_TRUST_SAM_ACCOUNT)`,
          ERROR_NO_TRUST_SAM_ACCOUNT,
          STATUS_NO_TRUST_SAM_ACCOUNT,
        ),
      );
    }
  }
  if (domain.dnsResolvable === false) {
    return failed(
      failure(
        'domain-dns-failure',
        `the DNS records of ${domain.dnsName} do not resolve (_ldap._tcp.dc._msdcs.${domain.dnsName}), so node ${node.name} cannot locate a domain controller (ERROR_NO_LOGON_SERVERS)`,
        ERROR_NO_LOGON_SERVERS,
        STATUS_NO_LOGON_SERVERS,
      ),
    );
  }
  const dc = node.reachableController(domain);
  if (dc === undefined) {
    return failed(
      failure(
        'domain-controller-unreachable',
        `no domain controller of ${domain.dnsName} is reachable from node ${node.name} (ERROR_NO_LOGON_SERVERS)`,
        ERROR_NO_LOGON_SERVERS,
        STATUS_ACCESS_DENIED,
      ),
    );
  }
  const gmsa = node.findGmsa(domain, join.MachineAccountName);
  if (gmsa === undefined) {
    return failed(
      failure(
        'gmsa-not-found',
        `gMSA ${join.MachineAccountName} (DomainJoinConfig.MachineAccountName) does not exist in domain ${domain.dnsName} (ERROR_NO_TRUST_SAM_ACCOUNT)`,
        ERROR_NO_TRUST_SAM_ACCOUNT,
        STATUS_NO_TRUST_SAM_ACCOUNT,
      ),
    );
  }
  const passwordVersion = gmsa.passwordVersion ?? 1;
  const skew = dc.clockSkewSeconds ?? 0;
  const ok: DomainAccess = {
    kind: 'ok',
    domain: domainOf(domain),
    account: `${domain.netbiosName}\\${gmsa.name}$`,
    domainController: dc.name,
    passwordVersion,
    ...(Math.abs(skew) <= KERBEROS_MAX_CLOCK_SKEW_SECONDS
      ? {}
      : {
          kerberosFailure: failure(
            'clock-skew',
            `the clock of ${dc.name} is ${Math.abs(skew)} s ${skew > 0 ? 'ahead of' : 'behind'} node ${node.name}'s, more than Kerberos' ${KERBEROS_MAX_CLOCK_SKEW_SECONDS} s (KRB_AP_ERR_SKEW): new tickets are refused`,
            // The secure channel (netlogon) does not depend on the clocks; Kerberos does.
            NERR_SUCCESS,
            STATUS_TIME_DIFFERENCE_AT_DC,
          ),
        }),
  };
  if (!node.mayRetrieveManagedPassword(domain, gmsa, requester)) {
    const denied = failed(
      failure(
        'node-not-allowed',
        `${requesterLabel} is not allowed to retrieve the managed password of gMSA ${domain.netbiosName}\\${gmsa.name}: it is not in the gMSA's PrincipalsAllowedToRetrieveManagedPassword (Test-ADServiceAccount ${gmsa.name} would return False; ERROR_NO_TRUST_LSA_SECRET)`,
        ERROR_NO_TRUST_LSA_SECRET,
        STATUS_NO_TRUST_LSA_SECRET,
      ),
    );
    return { ...denied, whileHolding: { passwordVersion, access: ok } };
  }
  return { access: ok };
}

/**
 * Checks that came out the same for every container, per credential spec document, for one node:
 * the node and its AD do not change while a runtime runs, and a document is one shared, frozen
 * object per accepted text (CredentialSpecParser). The container's id appears only in the CCG
 * plugin's failures, which stop the start (`fatal`) and are not kept. One per runtime.
 */
export class AccessChecks {
  private kept = new WeakMap<CredentialSpecDocument, AccessCheck>();
  /** The live domain's generation the kept checks were made in: a change drops them all. */
  private generation: number;

  constructor(readonly node: NodeDirectory) {
    this.generation = node.domainGeneration;
  }

  of(spec: CredentialSpecDocument, containerId: string): AccessCheck {
    if (this.node.domainGeneration !== this.generation) {
      this.kept = new WeakMap();
      this.generation = this.node.domainGeneration;
    }
    const known = this.kept.get(spec);
    if (known !== undefined) return known;
    const check = checkCredentialSpec(this.node, spec, containerId);
    if (check.fatal === undefined) this.kept.set(spec, deepFreeze(check));
    return check;
  }
}

function accessCheckOf(node: NodeDirectory, spec: CredentialSpecDocument, containerId: string, kept: AccessChecks | undefined): AccessCheck {
  return kept !== undefined && kept.node === node ? kept.of(spec, containerId) : checkCredentialSpec(node, spec, containerId);
}

/** A HostProcess container shares the node's identity: its computer account in its joined domain. */
function hostDomainAccess(node: NodeDirectory): DomainAccess {
  const joined = node.joinedDomain;
  if (joined === undefined) return { kind: 'none' };
  const account = `${joined.netbiosName}\\${node.computerAccount}`;
  const dc = node.reachableController(joined);
  if (dc === undefined) {
    return {
      kind: 'failed',
      domain: domainOf(joined),
      account,
      failure: failure(
        'domain-controller-unreachable',
        `no domain controller of ${joined.dnsName} is reachable from node ${node.name} (ERROR_NO_LOGON_SERVERS)`,
        ERROR_NO_LOGON_SERVERS,
        STATUS_ACCESS_DENIED,
      ),
    };
  }
  return { kind: 'ok', domain: domainOf(joined), account, domainController: dc.name };
}

function environmentFor(user: ResolvedUser, computerName: string, access: DomainAccess): Record<string, string> {
  // SYSTEM and NETWORK SERVICE are the machine on the network: USERNAME is `<COMPUTERNAME>$` and
  // USERDOMAIN the machine's domain (the credential spec's, in a gMSA container), else WORKGROUP.
  const machineDomain = access.kind === 'none' ? undefined : access.domain;
  let userName = user.name;
  let userDomain = user.domain;
  if (user.kind === 'service' && user.name !== 'LOCAL SERVICE') {
    userName = `${computerName}$`;
    userDomain = machineDomain?.netbiosName ?? 'WORKGROUP';
  }
  const env: Record<string, string> = {
    USERNAME: userName,
    USERDOMAIN: userDomain,
    COMPUTERNAME: computerName,
  };
  if (user.kind === 'service' && user.name !== 'LOCAL SERVICE' && machineDomain !== undefined) {
    env.USERDNSDOMAIN = machineDomain.dnsName.toUpperCase();
  }
  return env;
}

/**
 * Decides how a container's identity works out (REFERENCE §9), as a pure function:
 * the run-as user (CRI run_as_username, else the image user), the credential spec against the
 * node's AD access, and the mode. A start error in `strict` mode for every AD failure; in
 * `realistic` mode only for CCG plugin failures and unknown users, the rest showing up in the
 * identity commands.
 */
export function evaluateContainerIdentity(
  node: NodeDirectory,
  credentialSpec: CredentialSpecDocument | undefined,
  runAsUser: string | undefined,
  imageUser: string | undefined,
  hostname: string,
  mode: IdentityMode,
  options: IdentityOptions = {},
): IdentityDecision {
  const hostProcess = options.hostProcess === true;
  const containerId = options.containerId ?? '<container>';
  // A HostProcess container is the node: its hostname and computer name are the node's.
  const effectiveHostname = hostProcess ? node.hostname : hostname;
  const computerName = hostProcess ? node.name.toUpperCase() : netbiosComputerName(hostname);
  const requested = [runAsUser, imageUser].find((u) => u !== undefined && u !== '') ?? (hostProcess ? DEFAULT_HOST_PROCESS_USER : DEFAULT_CONTAINER_USER);
  const user = resolveUser(node, requested, computerName, hostProcess);

  // HostProcess containers use the node's own domain identity; a credential spec does not apply.
  const check: AccessCheck = hostProcess
    ? { access: hostDomainAccess(node) }
    : credentialSpec === undefined
      ? { access: { kind: 'none' } }
      : accessCheckOf(node, credentialSpec, containerId, options.accessChecks);
  const holding = check.whileHolding;
  const access = holding !== undefined && holding.passwordVersion === options.heldPasswordVersion ? holding.access : check.access;

  const resolved: ResolvedUser = user ?? { name: requested, domain: computerName, kind: 'local', logonId: '0x0' };
  // Virtual accounts, SYSTEM and NETWORK SERVICE authenticate on the network as the machine
  // account — in a gMSA container, the gMSA (WS2019+: regardless of the hostname). LOCAL SERVICE
  // has no network credentials; image-local users authenticate as themselves (no domain identity).
  const actsAsMachine = resolved.kind === 'virtual' || resolved.kind === 'group' || (resolved.kind === 'service' && resolved.name !== 'LOCAL SERVICE');
  const identity: ContainerIdentity = {
    hostProcess,
    userName: resolved.name,
    userDomain: resolved.domain,
    userKind: resolved.kind,
    hostname: effectiveHostname,
    computerName,
    domainAccess: access,
    environment: environmentFor(resolved, computerName, access),
    logonId: resolved.logonId,
  };
  if (actsAsMachine && access.kind !== 'none') identity.networkIdentity = access.account;
  // whoami /upn: only SYSTEM and NETWORK SERVICE *are* the machine account; they get its UPN
  // when the domain logon works. Everyone else is a local account ("not a domain user").
  if (resolved.kind === 'service' && resolved.name !== 'LOCAL SERVICE' && access.kind === 'ok') {
    const sam = access.account.slice(access.account.indexOf('\\') + 1);
    identity.upn = `${sam}@${access.domain.dnsName}`;
  }

  if (user === undefined) {
    return {
      identity,
      startError: {
        code: 'Unknown',
        reason: 'unknown-user',
        message: `hcs::CreateProcess ${containerId}: failed to log on as "${requested}": ${LOGON_FAILURE_TEXT}`,
      },
    };
  }
  if (check.fatal !== undefined) {
    return { identity, startError: { code: 'Unknown', reason: check.fatal.reason, message: check.fatal.message } };
  }
  if (mode === 'strict' && access.kind === 'failed' && !hostProcess) {
    return {
      identity,
      startError: { code: 'FailedPrecondition', reason: access.failure.reason, message: access.failure.message },
    };
  }
  return { identity };
}

/** The decision's start error as a RuntimeError, for the start path to throw. */
export function identityStartError(decision: IdentityDecision): RuntimeError | undefined {
  const e = decision.startError;
  return e === undefined ? undefined : new RuntimeError(e.code, e.message);
}
