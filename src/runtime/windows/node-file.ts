import type { NodeFileTiming } from '../call-conditions/node-file-timing.js';
import type { ImagesSection } from '../images/images-file.js';
import type { IsolationMode } from '../images/windows-compat.js';

/** A domain controller of the simulated AD; `reachable: false` simulates an outage. */
export interface DomainControllerSpec {
  name: string;
  reachable?: boolean;
  /** Computer names of the nodes that cannot reach it while others can. */
  unreachableFrom?: string[];
  /** How far its clock is ahead of the nodes' (negative: behind); Kerberos allows 300 s. */
  clockSkewSeconds?: number;
  /** Loopback address nslookup answers; default derived from the domain (file-shares.ts). */
  address?: string;
}

/** A share of a simulated file server, with its share permissions (New-SmbShare's parameters). */
export interface FileShareSpec {
  name: string;
  readAccess?: string[];
  changeAccess?: string[];
  fullAccess?: string[];
  /** Files the share holds when the runtime starts: name -> text. */
  files?: Record<string, string>;
}

/** An SMB file server of a domain (file-shares.ts). */
export interface FileServerSpec {
  name: string;
  address?: string;
  /** false: the server does not answer. */
  reachable?: boolean;
  shares: FileShareSpec[];
}

export interface GroupSpec {
  name: string;
  /** Principals: computer accounts (`WINNODE1$`), users or groups, optionally `NETBIOS\`-qualified. */
  members: string[];
}

export interface GmsaSpec {
  /** SAM account name without the trailing `$`. */
  name: string;
  /** The gMSA's PrincipalsAllowedToRetrieveManagedPassword. */
  principalsAllowedToRetrieveManagedPassword: string[];
  /** Version of the managed password (1 when absent); raising it rotates the password. */
  passwordVersion?: number;
}

export interface DomainSpec {
  dnsName: string;
  netbiosName: string;
  sid: string;
  guid: string;
  /** The forest root domain (credential spec `DnsTreeName`). */
  dnsTreeName: string;
  /** false: the domain's DNS records do not resolve (no domain controller can be located). */
  dnsResolvable?: boolean;
  domainControllers: DomainControllerSpec[];
  groups?: GroupSpec[];
  gmsas?: GmsaSpec[];
  fileServers?: FileServerSpec[];
}

export interface CcgPluginSpec {
  /** CLSID of the plugin, with braces, as in a credential spec's HostAccountConfig.PluginGUID. */
  pluginGuid: string;
  /** `NETBIOS\user`: the domain account the plugin retrieves gMSA passwords with. */
  account: string;
  /** false: the plugin fails, so every container that needs it fails to start. */
  healthy?: boolean;
}

/**
 * Where a node reads its domains at the moment it needs them: the runtime's live domain
 * (live-domain.ts), which `ad apply` and scenarios change while containers run.
 */
export interface DomainSource {
  /** Raised by every change; checks kept for a generation are not used after it. */
  readonly generation: number;
  readonly domains: readonly DomainSpec[];
  /** The live health of the CCG plugin with this CLSID, when the live state names it. */
  ccgPluginHealthy(pluginGuid: string): boolean | undefined;
}

/** The node file (`--node node.yaml`), schema `schemas/node.schema.json`. */
export interface NodeFile {
  node: {
    /** Computer name (NetBIOS, ≤ 15 characters); its AD account is `<name>$`. */
    name: string;
    hostname: string;
    /** Windows OS build `Major.Minor.Build`: what the host runs (docs/images.md), node mode's windows-build label; 10.0.20348 when absent. */
    osBuild?: string;
    /** The isolation modes the host offers (runtime handlers runhcs-wcow-process, runhcs-wcow-hypervisor); default both. */
    isolation?: IsolationMode[];
    /** DNS name of the joined domain; absent for a workgroup node. */
    domain?: string;
    ccgPlugin?: CcgPluginSpec;
    /** Local accounts of the node and its images, for RunAsUserName. */
    localUsers?: string[];
    /** Local groups, for HostProcess containers that run as a group. */
    localGroups?: string[];
  };
  domains: DomainSpec[];
  /** How long the node's CRI calls take and which fail (call-conditions/node-file-timing.ts). */
  timing?: NodeFileTiming;
  /** The node's images, registries and unknown-image rule (images/images-file.ts). */
  images?: ImagesSection;
}
