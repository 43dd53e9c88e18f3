import type { CommandHandler, CommandRegistry } from '../../emulator/command-registry.js';
import { identityOf } from '../../emulator/windows-identity.js';
import type { ContainerIdentity } from './container-identity.js';
import { IDENTITY_COMMANDS, type CommandResult } from './identity-commands.js';

// The record's identity slot is the emulator's contract (it reads it for the identity page of an
// image's program); the Windows path writes it and registers the commands that answer from it.
export { identityOf, WINDOWS_IDENTITY_KEY } from '../../emulator/windows-identity.js';

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
 * `onAnswer` is told of every answer given from an identity (the runtime's identity journal).
 */
export function registerIdentityCommands(registry: CommandRegistry, onAnswer?: (containerId: string, argv: readonly string[], result: CommandResult) => void): void {
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
      onAnswer?.(ctx.target.containerId, ctx.argv, result);
      if (result.stdout !== '') ctx.stdout(result.stdout.replace(/\r?\n/g, '\r\n'));
      if (result.stderr !== '') ctx.stderr(result.stderr.replace(/\r?\n/g, '\r\n'));
      return result.exitCode;
    };
    registry.register(name, handler, previous?.options ?? {});
  }
}
