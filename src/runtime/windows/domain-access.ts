import { deepFreeze } from '../../deep-freeze.js';
import { merged } from '../../tuning/merged.js';
import { credentialSpecAccount, type CredentialSpecDocument } from './credential-spec.js';
import type { DomainSpec, NodeDirectory } from './node-directory.js';
import {
  CCG_EVENT_TEXT,
  CCG_WINAPI_ERROR,
  ERROR_NO_LOGON_SERVERS,
  ERROR_NO_TRUST_LSA_SECRET,
  ERROR_NO_TRUST_SAM_ACCOUNT,
  NERR_SUCCESS,
  STATUS_ACCESS_DENIED,
  STATUS_NO_LOGON_SERVERS,
  STATUS_NO_TRUST_LSA_SECRET,
  STATUS_NO_TRUST_SAM_ACCOUNT,
  STATUS_TIME_DIFFERENCE_AT_DC,
  type NtStatus,
  type Win32Status,
} from './windows-status.js';

/*
 * A container's access to its domain, decided against the node's AD as it is now (the live
 * domain): the credential spec's domain and gMSA, the domain controllers this node reaches, the
 * password retrieval rights, the clocks. container-identity.ts builds the whole identity on it.
 */

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


export interface AccessCheck {
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

export function accessCheckOf(node: NodeDirectory, spec: CredentialSpecDocument, containerId: string, kept: AccessChecks | undefined): AccessCheck {
  return kept !== undefined && kept.node === node ? kept.of(spec, containerId) : checkCredentialSpec(node, spec, containerId);
}

/** A HostProcess container shares the node's identity: its computer account in its joined domain. */
export function hostDomainAccess(node: NodeDirectory): DomainAccess {
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
