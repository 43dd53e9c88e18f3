import type { CommandContext, CommandHandler, CommandRegistry } from '../../emulator/command-registry.js';
import type { ContainerIdentity } from './container-identity.js';
import { IDENTITY_COMMANDS } from './identity-commands.js';

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

/**
 * The environment a Windows container process starts with for its identity (USERNAME,
 * USERDOMAIN, COMPUTERNAME, USERDNSDOMAIN): merge into the process env so `cmd /c echo %USERNAME%`
 * expands as on Windows.
 */
export function identityEnvironment(identity: ContainerIdentity): Map<string, string> {
  return new Map(Object.entries(identity.environment));
}

/**
 * Registers `whoami`, `hostname`, `nltest` and `klist` for Windows containers. For targets
 * without a Windows identity the command that was registered before (if any) runs instead, so
 * Linux containers keep their plain `whoami`/`hostname`. Windows output ends lines in CRLF.
 */
export function registerIdentityCommands(registry: CommandRegistry): void {
  for (const name of ['whoami', 'hostname', 'nltest', 'klist'] as const) {
    const previous = registry.lookup(name);
    const handle = IDENTITY_COMMANDS[name]!;
    const handler: CommandHandler = (ctx) => {
      const identity = identityOf(ctx);
      if (identity === undefined) {
        if (previous !== undefined) return previous.handler(ctx);
        ctx.stderr(`${ctx.argv[0] ?? name}: command not found\n`);
        return 127;
      }
      const result = handle([...ctx.argv], identity);
      if (result.stdout !== '') ctx.stdout(result.stdout.replace(/\r?\n/g, '\r\n'));
      if (result.stderr !== '') ctx.stderr(result.stderr.replace(/\r?\n/g, '\r\n'));
      return result.exitCode;
    };
    registry.register(name, handler, previous?.options ?? {});
  }
}
