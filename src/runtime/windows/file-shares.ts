import type { ContainerIdentity } from './container-identity.js';
import { fileServerAddress } from './domain-addresses.js';
import type { AccountRef, DomainSpec, FileServerSpec, FileShareSpec, NodeDirectory } from './node-directory.js';
import {
  ERROR_ACCESS_DENIED,
  ERROR_BAD_NET_NAME,
  ERROR_BAD_NETPATH,
  ERROR_FILE_NOT_FOUND,
  ERROR_NO_LOGON_SERVERS,
  ERROR_PATH_NOT_FOUND,
  ERROR_TRUSTED_RELATIONSHIP_FAILURE,
  type Win32Status,
} from './windows-status.js';

export { domainControllerAddress, fileServerAddress } from './domain-addresses.js';

/**
 * SMB file shares of the simulated domain, as a container reaches them through a UNC path
 * (`\\files01\data\f.txt`): which server and share a path names, whether the container's network
 * identity may read or change it, and the Win32 error a refused access gets. The contents of the
 * shares are the runtime's (`FileShareContents`), shared by all its containers.
 *
 * Every decision is a function of the domain as it is when the command runs (`NodeDirectory`,
 * handed in by the caller's one accessor) and of the container's identity at that moment.
 *
 * The order of the checks follows what a Windows SMB client meets on the way:
 * 1. name resolution — an unknown server, a server that does not answer, or a server name
 *    while no DNS server (the domain's DCs) answers: ERROR_BAD_NETPATH;
 * 2. the share — not on that server: ERROR_BAD_NET_NAME;
 * 3. the session setup — the container has no domain identity (no gMSA, a local account): the
 *    server sees an anonymous logon, which `Everyone` does not include: ERROR_ACCESS_DENIED; its
 *    gMSA cannot log on: the secure channel's failure (ERROR_NO_LOGON_SERVERS when no DC answers,
 *    else ERROR_TRUSTED_RELATIONSHIP_FAILURE — the simulator's mapping of the trust failures of
 *    REFERENCE §9 to what the SMB client reports); the server's domain has no DC that answers:
 *    ERROR_NO_LOGON_SERVERS;
 * 4. the share permissions (Read / Change / Full Control by principal, groups nested):
 *    ERROR_ACCESS_DENIED.
 */

export type ShareAccessMode = 'read' | 'write';

/** A parsed UNC path: `\\server\share\rest`. */
export interface UncPath {
  server: string;
  share: string;
  /** The path inside the share, by component (empty: the share's root). */
  parts: string[];
}

/** `\\server\share[\path]` (either slash); undefined for anything else. */
export function parseUncPath(path: string): UncPath | undefined {
  const m = /^[\\/]{2}([^\\/]+)[\\/]+([^\\/]+)(?:[\\/]+(.*))?$/.exec(path.trim());
  if (m === null) return undefined;
  const parts = (m[3] ?? '').split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  return { server: m[1]!, share: m[2]!, parts };
}

/** Whether a path is a UNC path (`\\…`), as the shells decide where it goes. */
export function isUncPath(path: string): boolean {
  return /^[\\/]{2}[^\\/]/.test(path.trim());
}

const same = (a: string, b: string): boolean => a.localeCompare(b, 'en', { sensitivity: 'accent' }) === 0;

export interface ResolvedFileServer {
  domain: DomainSpec;
  server: FileServerSpec;
  /** How the path named it: by address needs no DNS. */
  byAddress: boolean;
}

/** The file server a UNC host names: its computer name, `<name>.<domain>` or its address. */
export function findFileServer(directory: NodeDirectory, host: string): ResolvedFileServer | undefined {
  for (const domain of directory.file.domains) {
    const servers = domain.fileServers ?? [];
    for (let i = 0; i < servers.length; i++) {
      const server = servers[i]!;
      if (host === fileServerAddress(domain, i)) return { domain, server, byAddress: true };
      if (same(host, server.name) || same(host, `${server.name}.${domain.dnsName}`)) return { domain, server, byAddress: false };
    }
  }
  return undefined;
}

/** Where an allowed access goes: the share and the path inside it. */
export interface ShareLocation {
  domain: DomainSpec;
  server: FileServerSpec;
  share: FileShareSpec;
  /** The contents' key: the share in its server and domain. */
  key: string;
  parts: string[];
}

export type ShareOpen = { ok: true; location: ShareLocation } | { ok: false; error: Win32Status };

const refused = (error: Win32Status): ShareOpen => ({ ok: false, error });

/** Principals every authenticated domain account matches (the well-known groups). */
const AUTHENTICATED = ['everyone', 'authenticated users', 'nt authority\\authenticated users', 'builtin\\everyone'];

/** Group nesting is bounded so a cycle or a huge file cannot loop forever. */
const MAX_GROUP_EXPANSIONS = 10_000;

/**
 * Whether `account` is one of `principals` (relative to `base`), directly or through nested group
 * membership. A gMSA may be named without its `$`, as Get-ADServiceAccount names it.
 */
function principalMatches(directory: NodeDirectory, principals: readonly string[], base: DomainSpec, account: AccountRef): boolean {
  if (principals.some((p) => AUTHENTICATED.includes(p.toLowerCase()))) return true;
  const queue: AccountRef[] = [];
  for (const p of principals) {
    const ref = directory.resolvePrincipal(p, base);
    if (ref !== undefined) queue.push(ref);
  }
  const seen = new Set<string>();
  for (let i = 0; i < queue.length && i < MAX_GROUP_EXPANSIONS; i++) {
    const ref = queue[i]!;
    const sameDomain = same(ref.domain.dnsName, account.domain.dnsName);
    if (sameDomain && (same(ref.account, account.account) || same(`${ref.account}$`, account.account))) return true;
    const key = `${ref.domain.dnsName.toLowerCase()}\\${ref.account.toLowerCase()}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const group = ref.domain.groups?.find((g) => same(g.name, ref.account));
    for (const member of group?.members ?? []) {
      const memberRef = directory.resolvePrincipal(member, ref.domain);
      if (memberRef !== undefined) queue.push(memberRef);
    }
  }
  return false;
}

/** The share permission a mode needs: Read for reading; Change or Full Control for writing. */
function mayAccess(directory: NodeDirectory, share: FileShareSpec, domain: DomainSpec, account: AccountRef, mode: ShareAccessMode): boolean {
  const writers = [...(share.changeAccess ?? []), ...(share.fullAccess ?? [])];
  const principals = mode === 'write' ? writers : [...(share.readAccess ?? []), ...writers];
  return principalMatches(directory, principals, domain, account);
}

/** The container's network identity as an account of the directory, when it has a working one. */
function sessionAccount(directory: NodeDirectory, identity: ContainerIdentity): AccountRef | Win32Status {
  const access = identity.domainAccess;
  if (identity.networkIdentity === undefined || access.kind === 'none') return ERROR_ACCESS_DENIED;
  if (access.kind === 'failed') {
    return access.failure.netlogonStatus.code === ERROR_NO_LOGON_SERVERS.code ? ERROR_NO_LOGON_SERVERS : ERROR_TRUSTED_RELATIONSHIP_FAILURE;
  }
  const slash = access.account.indexOf('\\');
  const domain = directory.findDomain(access.account.slice(0, slash));
  // The gMSA's domain left the directory since the container started: its logon fails.
  if (domain === undefined) return ERROR_TRUSTED_RELATIONSHIP_FAILURE;
  return { domain, account: access.account.slice(slash + 1) };
}

/**
 * Opens a share for a container: the checks in the order of the module comment; the location on
 * success, else the Win32 error the SMB client reports.
 */
export function openShare(directory: NodeDirectory, identity: ContainerIdentity, path: UncPath, mode: ShareAccessMode): ShareOpen {
  const found = findFileServer(directory, path.server);
  if (found === undefined || found.server.reachable === false) return refused(ERROR_BAD_NETPATH);
  const { domain, server } = found;
  const dnsAnswers = directory.isReachable(domain);
  if (!found.byAddress && !dnsAnswers) return refused(ERROR_BAD_NETPATH);
  const share = server.shares.find((s) => same(s.name, path.share));
  if (share === undefined) return refused(ERROR_BAD_NET_NAME);
  const account = sessionAccount(directory, identity);
  if ('code' in account) return refused(account);
  if (!dnsAnswers) return refused(ERROR_NO_LOGON_SERVERS);
  if (!mayAccess(directory, share, domain, account, mode)) return refused(ERROR_ACCESS_DENIED);
  const key = `${domain.dnsName}\\${server.name}\\${share.name}`.toLowerCase();
  return { ok: true, location: { domain, server, share, key, parts: path.parts } };
}

/** A file of a share. */
export interface ShareFile {
  /** The path inside the share as first written (`logs\a.txt`). */
  name: string;
  content: string;
  writtenAtMs: number;
}

/** An entry of a share's directory, as `dir` and Get-ChildItem list it. */
export interface ShareEntry {
  name: string;
  directory: boolean;
  size: number;
  writtenAtMs: number;
}

export type ShareResult<T> = { ok: true; value: T } | { ok: false; error: Win32Status };

/**
 * What the shares of one runtime hold: one map per share, seeded from the node file's `files`
 * on first use, changed by the containers' writes. Every container of the runtime sees the same.
 */
export class FileShareContents {
  private readonly shares = new Map<string, Map<string, ShareFile>>();

  constructor(private readonly now: () => number = Date.now) {}

  private filesOf(location: ShareLocation): Map<string, ShareFile> {
    let files = this.shares.get(location.key);
    if (files === undefined) {
      files = new Map();
      const at = this.now();
      for (const [name, content] of Object.entries(location.share.files ?? {})) {
        const parts = name.split(/[\\/]+/).filter((p) => p !== '');
        files.set(parts.join('\\').toLowerCase(), { name: parts.join('\\'), content, writtenAtMs: at });
      }
      this.shares.set(location.key, files);
    }
    return files;
  }

  private static isDirectory(files: Map<string, ShareFile>, prefix: string): boolean {
    if (prefix === '') return true;
    const lower = `${prefix.toLowerCase()}\\`;
    for (const key of files.keys()) if (key.startsWith(lower)) return true;
    return false;
  }

  read(location: ShareLocation): ShareResult<string> {
    const files = this.filesOf(location);
    const path = location.parts.join('\\');
    const file = files.get(path.toLowerCase());
    if (file !== undefined) return { ok: true, value: file.content };
    if (path === '' || FileShareContents.isDirectory(files, path)) return { ok: false, error: ERROR_ACCESS_DENIED };
    const parent = location.parts.slice(0, -1).join('\\');
    return { ok: false, error: FileShareContents.isDirectory(files, parent) ? ERROR_FILE_NOT_FOUND : ERROR_PATH_NOT_FOUND };
  }

  write(location: ShareLocation, content: string, append: boolean): ShareResult<void> {
    const files = this.filesOf(location);
    const path = location.parts.join('\\');
    // Opening a directory (or the share itself) for writing is refused, as CreateFile refuses it.
    if (path === '' || FileShareContents.isDirectory(files, path)) return { ok: false, error: ERROR_ACCESS_DENIED };
    if (!FileShareContents.isDirectory(files, location.parts.slice(0, -1).join('\\'))) return { ok: false, error: ERROR_PATH_NOT_FOUND };
    const key = path.toLowerCase();
    const before = files.get(key);
    const text = append && before !== undefined ? before.content + content : content;
    files.set(key, { name: before?.name ?? path, content: text, writtenAtMs: this.now() });
    return { ok: true, value: undefined };
  }

  /** The entries of a directory of the share (the share's root for no parts); a file lists itself. */
  list(location: ShareLocation): ShareResult<ShareEntry[]> {
    const files = this.filesOf(location);
    const path = location.parts.join('\\');
    const file = files.get(path.toLowerCase());
    if (file !== undefined) return { ok: true, value: [{ name: location.parts.at(-1)!, directory: false, size: file.content.length, writtenAtMs: file.writtenAtMs }] };
    if (!FileShareContents.isDirectory(files, path)) return { ok: false, error: ERROR_FILE_NOT_FOUND };
    const prefix = path === '' ? '' : `${path.toLowerCase()}\\`;
    const entries = new Map<string, ShareEntry>();
    for (const [key, f] of files) {
      if (!key.startsWith(prefix)) continue;
      const rest = f.name.slice(prefix.length).split('\\');
      const name = rest[0]!;
      const directory = rest.length > 1;
      const known = entries.get(name.toLowerCase());
      const writtenAtMs = Math.max(known?.writtenAtMs ?? 0, f.writtenAtMs);
      entries.set(name.toLowerCase(), { name, directory, size: directory ? 0 : f.content.length, writtenAtMs });
    }
    return { ok: true, value: [...entries.values()].sort((a, b) => a.name.localeCompare(b.name, 'en', { sensitivity: 'base' })) };
  }

  /** 'file', 'directory', or undefined when the path names nothing. */
  kind(location: ShareLocation): 'file' | 'directory' | undefined {
    const files = this.filesOf(location);
    const path = location.parts.join('\\');
    if (files.has(path.toLowerCase())) return 'file';
    return FileShareContents.isDirectory(files, path) ? 'directory' : undefined;
  }
}

/**
 * The SMB client of one container: each call opens the share against the domain and the
 * container's identity as the two accessors give them at that moment, then reads or changes
 * the runtime's contents.
 */
export class SmbClient {
  constructor(
    private readonly directory: () => NodeDirectory,
    private readonly identity: () => ContainerIdentity | undefined,
    private readonly contents: FileShareContents,
  ) {}

  private open(path: string, mode: ShareAccessMode): ShareResult<ShareLocation> {
    const unc = parseUncPath(path);
    const identity = this.identity();
    if (unc === undefined || identity === undefined) return { ok: false, error: ERROR_BAD_NETPATH };
    const opened = openShare(this.directory(), identity, unc, mode);
    return opened.ok ? { ok: true, value: opened.location } : opened;
  }

  readFile(path: string): ShareResult<string> {
    const opened = this.open(path, 'read');
    return opened.ok ? this.contents.read(opened.value) : opened;
  }

  writeFile(path: string, content: string, append: boolean): ShareResult<void> {
    const opened = this.open(path, 'write');
    return opened.ok ? this.contents.write(opened.value, content, append) : opened;
  }

  list(path: string): ShareResult<ShareEntry[]> {
    const opened = this.open(path, 'read');
    return opened.ok ? this.contents.list(opened.value) : opened;
  }

  itemKind(path: string): ShareResult<'file' | 'directory' | undefined> {
    const opened = this.open(path, 'read');
    return opened.ok ? { ok: true, value: this.contents.kind(opened.value) } : opened;
  }
}
