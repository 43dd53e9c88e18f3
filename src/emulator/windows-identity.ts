import type { ContainerIdentity } from '../runtime/windows/container-identity.js';
import type { LogonSession } from '../runtime/windows/logon-session.js';
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

/** The identity the process runs with now, when the target is a Windows container that has one. */
export function identityOf(ctx: CommandContext): ContainerIdentity | undefined {
  if (ctx.target.os !== 'windows') return undefined;
  const source = ctx.target.platform[WINDOWS_IDENTITY_SOURCE_KEY];
  const identity = typeof source === 'function' ? (source as () => ContainerIdentity | undefined)() : ctx.target.platform[WINDOWS_IDENTITY_KEY];
  return typeof identity === 'object' && identity !== null ? (identity as ContainerIdentity) : undefined;
}

/** The container's logon session, when the target has one. */
export function logonSessionOf(ctx: CommandContext): LogonSession | undefined {
  const session = ctx.target.platform[WINDOWS_LOGON_SESSION_KEY];
  return typeof session === 'object' && session !== null ? (session as LogonSession) : undefined;
}
