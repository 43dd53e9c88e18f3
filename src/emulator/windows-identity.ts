import type { ContainerIdentity } from '../runtime/windows/container-identity.js';
import type { LogonSession } from '../runtime/windows/logon-session.js';
import type { ShareEntry, ShareResult } from '../runtime/windows/file-shares.js';
import type { NodeDirectory } from '../runtime/windows/node-directory.js';
import type { CommandContext } from './command-registry.js';

/**
 * Where a Windows container record keeps its identity for the emulator:
 * `ExecutionTarget.platform[WINDOWS_IDENTITY_KEY]` holds the `ContainerIdentity` from
 * `evaluateContainerIdentity` as it was when the target was made (what `crictl inspect` shows).
 */
export const WINDOWS_IDENTITY_KEY = 'windowsIdentity';
/**
 * `platform[WINDOWS_IDENTITY_SOURCE_KEY]`: a function giving the identity as the domain makes it
 * now (the runtime's live domain can change while a process runs); commands read it at the moment
 * they run.
 */
export const WINDOWS_IDENTITY_SOURCE_KEY = 'windowsIdentitySource';
/** `platform[WINDOWS_LOGON_SESSION_KEY]`: the container's logon session (its Kerberos ticket cache). */
export const WINDOWS_LOGON_SESSION_KEY = 'windowsLogonSession';

/** Where a Windows container's process finds its live session (WindowsSession). */
export const WINDOWS_SESSION_KEY = 'windowsSession';

/**
 * What a process of a Windows container asks of its node and domain while it runs. Every method
 * reads the domain as it is at the call (the runtime hands in the accessor), never a copy taken
 * when the container started.
 */
export interface WindowsSession {
  /** The container's identity now (undefined before its start decided one). */
  identity(): ContainerIdentity | undefined;
  /** The node and the Active Directory it sees, now. */
  directory(): NodeDirectory;
  /** `nltest /sc_reset`: this container logs on again and holds its secure channel. */
  resetSecureChannel(): void;
  /** A file of a UNC path (`\\server\share\f.txt`). */
  readFile(path: string): ShareResult<string>;
  writeFile(path: string, content: string, append: boolean): ShareResult<void>;
  /** The entries of a UNC directory (a share's root or a folder in it). */
  list(path: string): ShareResult<ShareEntry[]>;
  /** What a UNC path names: a file, a directory, or nothing. */
  itemKind(path: string): ShareResult<'file' | 'directory' | undefined>;
}

/** The live session of the process's Windows container, when it has one. */
export function sessionOf(ctx: CommandContext): WindowsSession | undefined {
  if (ctx.target.os !== 'windows') return undefined;
  const session = ctx.target.platform[WINDOWS_SESSION_KEY];
  return typeof session === 'object' && session !== null ? (session as WindowsSession) : undefined;
}

/**
 * The identity the process runs with now, when the target is a Windows container that has one:
 * the live one when the container has a session or an identity source (read at each command),
 * else the one recorded.
 */
export function identityOf(ctx: CommandContext): ContainerIdentity | undefined {
  if (ctx.target.os !== 'windows') return undefined;
  const session = sessionOf(ctx);
  if (session !== undefined) return session.identity();
  const source = ctx.target.platform[WINDOWS_IDENTITY_SOURCE_KEY];
  const identity = typeof source === 'function' ? (source as () => ContainerIdentity | undefined)() : ctx.target.platform[WINDOWS_IDENTITY_KEY];
  return typeof identity === 'object' && identity !== null ? (identity as ContainerIdentity) : undefined;
}

/** The container's logon session, when the target has one. */
export function logonSessionOf(ctx: CommandContext): LogonSession | undefined {
  const session = ctx.target.platform[WINDOWS_LOGON_SESSION_KEY];
  return typeof session === 'object' && session !== null ? (session as LogonSession) : undefined;
}
