import type { CommandHandler, CommandRegistry } from '../../emulator/command-registry.js';
import { identityOf, logonSessionOf, sessionOf, type WindowsSession } from '../../emulator/windows-identity.js';
import { performance } from 'node:perf_hooks';
import type { ContainerIdentity } from './container-identity.js';
import { nltestScReset, nslookup } from './domain-commands.js';
import { IDENTITY_COMMANDS, programName, type CommandResult } from './identity-commands.js';

/**
 * Told of every identity operation that asks the domain (nltest, klist), with its outcome
 * (`success`, or the failure's reason: `domain-controller-unreachable`, `clock-skew`, …) and how
 * long it took; structurally src/cri/metrics.ts AdOperationMetrics, without importing src/cri.
 */
export interface AdOperationCounters {
  onOperation(op: string, result: string, seconds: number): void;
}

/** `nltest /sc_verify:contoso.com` → `nltest_sc_verify`; `klist get x` → `klist_get`: a bounded label. */
export function adOperationName(argv: readonly string[]): string {
  const program = programName(argv[0] ?? '');
  const option = (argv[1] ?? (program === 'klist' ? 'tickets' : '')).toLowerCase().replace(/^[/-]/, '').replace(/:.*$/, '');
  const known = program === 'nltest' ? ['sc_verify', 'sc_query', 'query', 'parentdomain', 'sc_reset', 'dsgetdc'] : ['tickets', 'tgt', 'get', 'purge'];
  return `${program}_${known.includes(option) ? option : 'other'}`;
}

/** `success`, or why the domain said no (the identity's failure reason), for the metric's label. */
export function adOperationResult(result: CommandResult, identity: ContainerIdentity): string {
  if (result.exitCode === 0) return 'success';
  const access = identity.domainAccess;
  if (access.kind === 'failed') return access.failure.reason;
  if (access.kind === 'ok' && access.kerberosFailure !== undefined) return access.kerberosFailure.reason;
  return access.kind === 'none' ? 'no-domain' : 'error';
}

/** Who hears of the identity commands' answers. */
export interface IdentityCommandObservers {
  readonly metrics?: AdOperationCounters | undefined;
  readonly onAnswer?: (containerId: string, argv: readonly string[], result: CommandResult) => void;
}

/** The commands whose every run asks the domain. */
const DOMAIN_COMMANDS = new Set(['nltest', 'klist']);

// The record's identity slot is the emulator's contract (it reads it for the identity page of an
// image's program); the Windows path writes it and registers the commands that answer from it.
export { identityOf, logonSessionOf, WINDOWS_IDENTITY_KEY, WINDOWS_IDENTITY_SOURCE_KEY, WINDOWS_LOGON_SESSION_KEY } from '../../emulator/windows-identity.js';

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
 * `observers.metrics` counts the operations that ask the domain; `observers.onAnswer` is told of
 * every answer given from an identity (the runtime's identity journal, `cri-winsim explain`).
 */
export function registerIdentityCommands(registry: CommandRegistry, observers: IdentityCommandObservers = {}): void {
  const { metrics, onAnswer } = observers;
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
      const started = performance.now();
      const result = (session === undefined ? undefined : sessionCommand(ctx.argv, session)) ?? handle?.([...ctx.argv], identity, logonSessionOf(ctx));
      if (result === undefined) {
        ctx.stderr(`'${ctx.argv[0] ?? name}' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n`);
        return 9009;
      }
      if (metrics !== undefined && DOMAIN_COMMANDS.has(name)) metrics.onOperation(adOperationName(ctx.argv), adOperationResult(result, identity), (performance.now() - started) / 1000);
      onAnswer?.(ctx.target.containerId, ctx.argv, result);
      if (result.stdout !== '') ctx.stdout(result.stdout.replace(/\r?\n/g, '\r\n'));
      if (result.stderr !== '') ctx.stderr(result.stderr.replace(/\r?\n/g, '\r\n'));
      return result.exitCode;
    };
    registry.register(name, handler, previous?.options ?? {});
  }
}
