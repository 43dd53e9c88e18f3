import nodeSchema from '../../../schemas/node.schema.json' with { type: 'json' };
import { nodeFileFaults } from '../call-conditions/node-file-timing.js';
import { RuntimeError } from '../errors.js';
import { DEFAULT_NODE_FILE, DEFAULT_OS_BUILD } from './default-node.js';
import { validateImagesSection } from '../images/images-file.js';
import type { IsolationMode } from '../images/windows-compat.js';
import type { CcgPluginSpec, DomainControllerSpec, DomainSource, DomainSpec, GmsaSpec, NodeFile } from './node-file.js';
import { checkFileServers } from './file-server-spec.js';
import { compileSchema, firstViolation } from './schema-validation.js';
import { parseUserYaml, readUserFile } from '../validation/user-file.js';

// The node file's types live below the embedded default node (node-file.ts); its readers find them here.
export type * from './node-file.js';

/** A principal as a (domain, account) pair; domain is a DomainSpec of this node file. */
export interface AccountRef {
  domain: DomainSpec;
  account: string;
}


/** Local accounts every Windows container image has (REFERENCE §4 defaults). */
const DEFAULT_LOCAL_USERS = ['ContainerUser', 'ContainerAdministrator'];

/** Group nesting is bounded so a cycle or a huge file cannot loop forever. */
const MAX_GROUP_EXPANSIONS = 10_000;

const validateNodeFileSchema = compileSchema<NodeFile>(nodeSchema);

/** Windows compares account and domain names without case (one collator: making one per call is slow). */
const NAME_COLLATOR = new Intl.Collator('en', { sensitivity: 'accent' });
const same = (a: string, b: string): boolean => NAME_COLLATOR.compare(a, b) === 0;

function nodeFileError(source: string, path: string, reason: string): RuntimeError {
  return new RuntimeError('InvalidArgument', `${source}: ${path === '' ? '(top level)' : path}: ${reason}`);
}

/**
 * The simulated node and the Active Directory it sees. Built only from a validated node file
 * (`parseNodeFile`, `loadNodeFile`, `defaultNodeDirectory`); lookups are case-insensitive, as in AD.
 * A runtime's own directory reads its domains from the runtime's live domain (`live`) at every
 * lookup, so a change applied while containers run is what their next identity operation sees;
 * without one, the node file's domains.
 */
export class NodeDirectory {
  readonly file: NodeFile;
  /** Where the node came from, for messages (`node.yaml`, or `embedded default node`). */
  readonly source: string;
  private readonly live: DomainSource | undefined;

  constructor(file: NodeFile, source: string, live?: DomainSource) {
    this.file = file;
    this.source = source;
    this.live = live;
  }

  /** The same node reading its domains from `live`. */
  withDomainSource(live: DomainSource): NodeDirectory {
    return new NodeDirectory(this.file, this.source, live);
  }

  /** The domains as they are now. */
  get domains(): readonly DomainSpec[] {
    return this.live?.domains ?? this.file.domains;
  }

  /** The live domain's generation (0: the node file's domains, which never change). */
  get domainGeneration(): number {
    return this.live?.generation ?? 0;
  }

  get name(): string {
    return this.file.node.name;
  }

  get hostname(): string {
    return this.file.node.hostname;
  }

  /** The node's computer account in AD. */
  get computerAccount(): string {
    return `${this.file.node.name.toUpperCase()}$`;
  }

  get joinedDomain(): DomainSpec | undefined {
    const name = this.file.node.domain;
    return name === undefined ? undefined : this.findDomain(name);
  }

  get ccgPlugin(): CcgPluginSpec | undefined {
    const plugin = this.file.node.ccgPlugin;
    const healthy = plugin === undefined ? undefined : this.live?.ccgPluginHealthy(plugin.pluginGuid);
    return healthy === undefined || plugin === undefined ? plugin : { ...plugin, healthy };
  }

  get localUsers(): string[] {
    return this.file.node.localUsers ?? DEFAULT_LOCAL_USERS;
  }

  get localGroups(): string[] {
    return this.file.node.localGroups ?? [];
  }

  /** The host's build `Major.Minor.Build` (Windows Server 2022's when the file names none). */
  get osBuild(): string {
    return this.file.node.osBuild ?? DEFAULT_OS_BUILD;
  }

  /** The isolation modes the host offers (both when the file names none). */
  get isolation(): IsolationMode[] {
    return this.file.node.isolation ?? ['process', 'hyperv'];
  }

  /** A domain by DNS or NetBIOS name. */
  findDomain(name: string): DomainSpec | undefined {
    return this.domains.find((d) => same(d.dnsName, name) || same(d.netbiosName, name));
  }

  findGmsa(domain: DomainSpec, name: string): GmsaSpec | undefined {
    const bare = name.endsWith('$') ? name.slice(0, -1) : name;
    return domain.gmsas?.find((g) => same(g.name, bare));
  }

  /** Whether this node reaches the domain controller (it is up, and not cut off from this node). */
  reaches(dc: DomainControllerSpec): boolean {
    return dc.reachable !== false && !(dc.unreachableFrom ?? []).some((n) => same(n, this.name));
  }

  /** At least one domain controller of the domain answers this node. */
  isReachable(domain: DomainSpec): boolean {
    return domain.domainControllers.some((dc) => this.reaches(dc));
  }

  /** The first domain controller this node reaches, as nltest names it. */
  reachableController(domain: DomainSpec): DomainControllerSpec | undefined {
    return domain.domainControllers.find((dc) => this.reaches(dc));
  }

  findLocalUser(name: string): string | undefined {
    return this.localUsers.find((u) => same(u, name));
  }

  findLocalGroup(name: string): string | undefined {
    return this.localGroups.find((g) => same(g, name));
  }

  /** `NETBIOS\name` or `name` (relative to `base`) as an account reference; undefined for unknown domains. */
  resolvePrincipal(principal: string, base: DomainSpec): AccountRef | undefined {
    const slash = principal.indexOf('\\');
    if (slash < 0) return { domain: base, account: principal };
    const domain = this.findDomain(principal.slice(0, slash));
    return domain === undefined ? undefined : { domain, account: principal.slice(slash + 1) };
  }

  /**
   * Whether `requester` may retrieve the gMSA's managed password: it is listed in
   * PrincipalsAllowedToRetrieveManagedPassword directly or through (nested) group membership.
   */
  mayRetrieveManagedPassword(domain: DomainSpec, gmsa: GmsaSpec, requester: AccountRef): boolean {
    const queue: AccountRef[] = [];
    for (const p of gmsa.principalsAllowedToRetrieveManagedPassword) {
      const ref = this.resolvePrincipal(p, domain);
      if (ref !== undefined) queue.push(ref);
    }
    const seen = new Set<string>();
    for (let i = 0; i < queue.length && i < MAX_GROUP_EXPANSIONS; i++) {
      const ref = queue[i]!;
      if (ref.domain === requester.domain && same(ref.account, requester.account)) return true;
      const key = `${ref.domain.dnsName.toLowerCase()}\\${ref.account.toLowerCase()}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const group = ref.domain.groups?.find((g) => same(g.name, ref.account));
      for (const member of group?.members ?? []) {
        const memberRef = this.resolvePrincipal(member, ref.domain);
        if (memberRef !== undefined) queue.push(memberRef);
      }
    }
    return false;
  }

  /** The account the node retrieves gMSA passwords with: its computer account, or the CCG plugin's account. */
  passwordRetrievalAccount(): AccountRef | undefined {
    const joined = this.joinedDomain;
    if (joined !== undefined) return { domain: joined, account: this.computerAccount };
    const plugin = this.ccgPlugin;
    if (plugin === undefined) return undefined;
    const [netbios = '', account = ''] = plugin.account.split('\\');
    const domain = this.findDomain(netbios);
    return domain === undefined ? undefined : { domain, account };
  }
}

/** Cross-field rules a JSON Schema cannot express; the first problem is reported (the live domain's apply uses them too). */
export function checkNodeFileConsistency(file: Pick<NodeFile, 'node' | 'domains'>, source: string): void {
  const seenDns = new Map<string, number>();
  const seenNetbios = new Map<string, number>();
  file.domains.forEach((domain, i) => {
    const dns = domain.dnsName.toLowerCase();
    const netbios = domain.netbiosName.toLowerCase();
    if (seenDns.has(dns)) {
      throw nodeFileError(source, `domains[${i}].dnsName`, `"${domain.dnsName}" is already defined by domains[${seenDns.get(dns)}]`);
    }
    if (seenNetbios.has(netbios)) {
      throw nodeFileError(source, `domains[${i}].netbiosName`, `"${domain.netbiosName}" is already defined by domains[${seenNetbios.get(netbios)}]`);
    }
    seenDns.set(dns, i);
    seenNetbios.set(netbios, i);
    const names = new Map<string, string>();
    (domain.groups ?? []).forEach((group, j) => {
      const key = group.name.toLowerCase();
      if (names.has(key)) throw nodeFileError(source, `domains[${i}].groups[${j}].name`, `"${group.name}" is already defined by ${names.get(key)}`);
      names.set(key, `domains[${i}].groups[${j}]`);
    });
    (domain.gmsas ?? []).forEach((gmsa, j) => {
      const key = gmsa.name.toLowerCase();
      if (names.has(key)) throw nodeFileError(source, `domains[${i}].gmsas[${j}].name`, `"${gmsa.name}" is already defined by ${names.get(key)}`);
      names.set(key, `domains[${i}].gmsas[${j}]`);
    });
  });
  checkFileServers(file, source);
  const directory = new NodeDirectory(file as NodeFile, source);
  const { domain, ccgPlugin } = file.node;
  if (domain !== undefined && directory.findDomain(domain) === undefined) {
    throw nodeFileError(source, 'node.domain', `"${domain}" is not one of the domains defined in domains`);
  }
  if (ccgPlugin !== undefined) {
    const slash = ccgPlugin.account.indexOf('\\');
    if (slash < 0 || directory.findDomain(ccgPlugin.account.slice(0, slash)) === undefined) {
      throw nodeFileError(source, 'node.ccgPlugin.account', `"${ccgPlugin.account}" must be NETBIOS\\user with NETBIOS one of the domains`);
    }
  }
}

/**
 * Validates a parsed node file (schema, then cross-field rules). Errors read
 * `<source>: <field path>: <reason>`, e.g. `node.yaml: domains[0].sid: must match a domain SID (S-1-5-21-a-b-c) (got "x")`.
 */
export function validateNodeFile(data: unknown, source: string): NodeFile {
  const violation = firstViolation(validateNodeFileSchema, data);
  if (violation !== undefined) {
    const got = violation.value !== undefined && typeof violation.value !== 'object' ? ` (got ${JSON.stringify(violation.value)})` : '';
    throw nodeFileError(source, violation.path, `${violation.reason}${got}`);
  }
  const file = data as NodeFile;
  checkNodeFileConsistency(file, source);
  nodeFileFaults(file.timing, source);
  if (file.images !== undefined) validateImagesSection(file.images, source, 'images');
  return file;
}

/** Parses node file text (YAML or JSON). `source` is the path as the user gave it, for messages. */
export function parseNodeFile(text: string, source: string): NodeDirectory {
  return new NodeDirectory(validateNodeFile(parseUserYaml(text, source), source), source);
}

/** Reads and validates `--node <path>`; messages name the path as given. */
export async function loadNodeFile(path: string): Promise<NodeDirectory> {
  return parseNodeFile(await readUserFile(path, 'node file'), path);
}

/** The embedded default node (WINNODE1 in contoso.com), validated like any node file. */
export function defaultNodeDirectory(): NodeDirectory {
  const source = 'embedded default node';
  // The embedded node is a typed constant whose schema conformance a test pins (it equals
  // examples/nodes/winnode1.yaml, which is validated): start-up skips compiling the node schema
  // for it (ajv was a fifth of the start-up) and keeps the cross-field rules.
  const file = structuredClone(DEFAULT_NODE_FILE);
  checkNodeFileConsistency(file, source);
  return new NodeDirectory(file, source);
}

/** `--node <path>` when given, else the embedded default; refused at start-up when invalid. */
export async function openNodeDirectory(path?: string): Promise<NodeDirectory> {
  return path === undefined || path === '' ? defaultNodeDirectory() : loadNodeFile(path);
}

/**
 * The node file of one of several simulated nodes made from one template (node mode's `--nodes N`):
 * its own computer account `<computerName>$` and hostname, with every right the template's account
 * had (group memberships, gMSA password retrieval) given to the new account instead.
 */
export function deriveNodeDirectory(template: NodeDirectory, computerName: string, hostname: string): NodeDirectory {
  const file = structuredClone(template.file);
  file.domains = renameComputerAccount(file.domains, template.name, computerName);
  file.node.name = computerName.toUpperCase();
  file.node.hostname = hostname;
  const source = `${template.source} (as ${file.node.name})`;
  return new NodeDirectory(validateNodeFile(file, source), source);
}

/**
 * Domains in which the computer account `<from>$` is `<to>$` in every group membership and every
 * gMSA's PrincipalsAllowedToRetrieveManagedPassword (the rights one node of several made from a
 * template takes over; node mode reads a shared domain resource for each node the same way).
 * A copy: `domains` is not changed.
 */
export function renameComputerAccount(domains: readonly DomainSpec[], from: string, to: string): DomainSpec[] {
  const copy = structuredClone(domains) as DomainSpec[];
  const oldAccount = `${from}$`;
  const newAccount = `${to.toUpperCase()}$`;
  if (same(oldAccount, newAccount)) return copy;
  const rename = (principal: string): string => {
    // A principal may be written `NETBIOS\NAME$` or `NAME$`.
    const slash = principal.lastIndexOf('\\');
    return same(principal.slice(slash + 1), oldAccount) ? `${principal.slice(0, slash + 1)}${newAccount}` : principal;
  };
  for (const domain of copy) {
    for (const group of domain.groups ?? []) group.members = group.members.map(rename);
    for (const gmsa of domain.gmsas ?? []) gmsa.principalsAllowedToRetrieveManagedPassword = gmsa.principalsAllowedToRetrieveManagedPassword.map(rename);
    for (const share of (domain.fileServers ?? []).flatMap((f) => f.shares)) {
      for (const key of ['readAccess', 'changeAccess', 'fullAccess'] as const) {
        const principals = share[key];
        if (principals !== undefined) share[key] = principals.map(rename);
      }
    }
  }
  return copy;
}
