import type { CommandHandler, CommandRegistry } from '../../emulator/command-registry.js';
import { identityOf, sessionOf, type WindowsSession } from '../../emulator/windows-identity.js';
import type { ContainerIdentity } from './container-identity.js';
import { nltestScReset, nslookup } from './domain-commands.js';
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

/** Commands answered from the container's live session rather than from its identity alone. */
function sessionCommand(argv: readonly string[], session: WindowsSession): CommandResult | undefined {
  const name = argv[0]?.split(/[\\/]/).pop()?.replace(/\.exe$/i, '').toLowerCase();
  if (name === 'nslookup') return nslookup(argv, session);
  const option = argv[1]?.toLowerCase() ?? '';
  if (name === 'nltest' && argv.length === 2 && option.startsWith('/sc_reset:')) return nltestScReset(argv[1]!.slice('/sc_reset:'.length), session);
  return undefined;
}

/**
 * Registers `whoami`, `hostname`, `nltest`, `klist` and `nslookup` for Windows containers. For
 * targets without a Windows identity the command that was registered before (if any) runs
 * instead, so Linux containers keep their plain `whoami`/`hostname`. Windows output ends lines in
 * CRLF. Each run reads the container's identity and domain at that moment (its session).
 */
export function registerIdentityCommands(registry: CommandRegistry): void {
  for (const name of ['whoami', 'hostname', 'nltest', 'klist', 'nslookup'] as const) {
    const previous = registry.lookup(name);
    const handle = IDENTITY_COMMANDS[name];
    const handler: CommandHandler = (ctx) => {
      const identity = identityOf(ctx);
      if (identity === undefined) {
        if (previous !== undefined) return previous.handler(ctx);
        ctx.stderr(`${ctx.argv[0] ?? name}: command not found\n`);
        return 127;
      }
      const session = sessionOf(ctx);
      const result = (session === undefined ? undefined : sessionCommand(ctx.argv, session)) ?? handle?.([...ctx.argv], identity);
      if (result === undefined) {
        ctx.stderr(`'${ctx.argv[0] ?? name}' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n`);
        return 9009;
      }
      if (result.stdout !== '') ctx.stdout(result.stdout.replace(/\r?\n/g, '\r\n'));
      if (result.stderr !== '') ctx.stderr(result.stderr.replace(/\r?\n/g, '\r\n'));
      return result.exitCode;
    };
    registry.register(name, handler, previous?.options ?? {});
  }
}
