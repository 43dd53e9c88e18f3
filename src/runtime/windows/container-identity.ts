import { RuntimeError, type RuntimeErrorCode } from '../errors.js';
import type { CredentialSpecDocument } from './credential-spec.js';
import { accessCheckOf, hostDomainAccess, type AccessCheck, type AccessChecks, type DomainAccess, type IdentityFailureReason } from './domain-access.js';
import type { NodeDirectory } from './node-directory.js';
import { LOGON_FAILURE_TEXT } from './windows-status.js';

// The domain access types and checks live in domain-access.ts; their readers find them here.
export * from './domain-access.js';

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
