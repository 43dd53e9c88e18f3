import type { ContainerIdentity } from '../runtime/windows/container-identity.js';
import type { CommandContext } from './command-registry.js';

/**
 * Where a Windows container record keeps its identity for the emulator:
 * `ExecutionTarget.platform[WINDOWS_IDENTITY_KEY]` holds the `ContainerIdentity` from
 * `evaluateContainerIdentity`, set at StartContainer.
 */
export const WINDOWS_IDENTITY_KEY = 'windowsIdentity';

/** The identity the process runs with, when the target is a Windows container that has one. */
export function identityOf(ctx: CommandContext): ContainerIdentity | undefined {
  if (ctx.target.os !== 'windows') return undefined;
  const identity = ctx.target.platform[WINDOWS_IDENTITY_KEY];
  return typeof identity === 'object' && identity !== null ? (identity as ContainerIdentity) : undefined;
}
