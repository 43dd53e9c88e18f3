import type { ContainerIdentity, IdentityFailure } from './container-identity.js';
import { LogonSession, type KerberosTicket } from './logon-session.js';
import {
  ERROR_NO_SUCH_DOMAIN,
  NERR_SUCCESS,
  RPC_S_SERVER_UNAVAILABLE,
  STATUS_NO_LOGON_SERVERS,
  formatNtStatus,
  formatWin32Status,
  type NtStatus,
} from './windows-status.js';

/**
 * The identity commands of the container command emulator: `whoami`, `whoami /upn`, `hostname`,
 * `echo` with `%USERNAME%`/`%USERDOMAIN%`/`%COMPUTERNAME%` expansion, `nltest /parentdomain`,
 * `nltest /query`, `nltest /sc_verify:<domain>`, `klist` and `klist get <spn>`.
 * Each is a pure function of argv and the container's identity (see container-identity.ts).
 *
 * Choices (how real containers behave, per Microsoft's gMSA container docs and troubleshooting guide):
 * - whoami prints `domain\user` lower-cased: `user manager\containeruser` for the virtual accounts,
 *   `nt authority\system` for service accounts, `<computername>\<user>` for image-local users.
 *   A gMSA does not change whoami: processes keep their local account and use the gMSA on the network.
 * - `whoami /upn` succeeds only for SYSTEM and NETWORK SERVICE when the gMSA logon works (they act
 *   as the container's computer account, i.e. the gMSA); every other account is local and gets the
 *   "not a domain user" error.
 * - `nltest /parentdomain` answers from the credential spec, so it succeeds even when the gMSA
 *   cannot log on (the upstream e2e test relies on this); without a credential spec netlogon has
 *   no domain: RPC_S_SERVER_UNAVAILABLE. `/query` and `/sc_verify` show the real secure-channel state.
 * - klist shows the Kerberos tickets cached in the container's logon session (logon-session.ts) for
 *   its network identity (`WebApplication1$ @ CONTOSO.COM`); an empty cache gets the logon's TGT
 *   when the domain answers. Cached tickets stay until they end or `klist purge`, whatever the
 *   domain does meanwhile; asking for a new one is what fails when the gMSA cannot log on.
 * - Output lines end in `\n` (the CRI log writer splits lines), not `\r\n`.
 */
export interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * `session`: the container's logon session (its ticket cache); without one, a fresh session for
 * this command alone.
 */
export type IdentityCommandHandler = (argv: string[], identity: ContainerIdentity, session?: LogonSession) => CommandResult;

const ok = (stdout: string): CommandResult => ({ stdout, stderr: '', exitCode: 0 });
const fail = (stdout: string, stderr = '', exitCode = 1): CommandResult => ({ stdout, stderr, exitCode });

/** Program name without directory and `.exe`, lower-cased: `C:\Windows\System32\nltest.exe` -> `nltest`. */
export function programName(arg0: string): string {
  const base = arg0.split(/[\\/]/).pop() ?? arg0;
  return base.replace(/\.exe$/i, '').toLowerCase();
}

/** cmd.exe's `%NAME%` expansion: names are case-insensitive; unknown variables stay as written. */
export function expandWindowsVariables(text: string, environment: Record<string, string>): string {
  const upper = new Map(Object.entries(environment).map(([k, v]) => [k.toUpperCase(), v]));
  return text.replace(/%([^%\r\n]+)%/g, (whole, name: string) => upper.get(name.toUpperCase()) ?? whole);
}

function whoami(argv: string[], identity: ContainerIdentity): CommandResult {
  const options = argv.slice(1).map((a) => a.toLowerCase());
  if (options.length === 0) {
    return ok(`${identity.userDomain.toLowerCase()}\\${identity.userName.toLowerCase()}\n`);
  }
  if (options.length === 1 && (options[0] === '/upn' || options[0] === '-upn')) {
    if (identity.upn !== undefined) return ok(`${identity.upn}\n`);
    return fail('', 'ERROR: Unable to get User Principal Name (UPN) as the current logged-on user is not a domain user.\n');
  }
  return fail('', `ERROR: Invalid argument/option - '${argv[1] ?? ''}'.\nType "WHOAMI /?" for usage.\n`);
}

function hostname(argv: string[], identity: ContainerIdentity): CommandResult {
  if (argv.length > 1) return fail('', 'sethostname: Use the Network Control Panel Applet to set hostname.\n');
  return ok(`${identity.hostname}\n`);
}

function echo(argv: string[], identity: ContainerIdentity): CommandResult {
  if (argv.length === 1) return ok('ECHO is on.\n');
  return ok(`${expandWindowsVariables(argv.slice(1).join(' '), identity.environment)}\n`);
}

const NLTEST_DONE = 'The command completed successfully\n';

function nltest(argv: string[], identity: ContainerIdentity): CommandResult {
  const option = (argv[1] ?? '').toLowerCase();
  const access = identity.domainAccess;
  if (argv.length !== 2) return fail('Usage: nltest [/OPTIONS]\n');
  if (option === '/parentdomain') {
    if (access.kind === 'none') {
      return fail(`Getting parent domain failed: Status = ${formatWin32Status(RPC_S_SERVER_UNAVAILABLE)}\n`);
    }
    return ok(`${access.domain.dnsName}. (1)\n${NLTEST_DONE}`);
  }
  if (option === '/query') {
    if (access.kind === 'none') {
      return fail(`I_NetLogonControl failed: Status = ${formatWin32Status(RPC_S_SERVER_UNAVAILABLE)}\n`);
    }
    const status = access.kind === 'ok' ? NERR_SUCCESS : access.failure.netlogonStatus;
    return ok(`Flags: 0\nConnection Status = ${formatWin32Status(status)}\n${NLTEST_DONE}`);
  }
  if (option.startsWith('/sc_verify:')) {
    const target = option.slice('/sc_verify:'.length);
    if (access.kind === 'none') {
      return fail(`I_NetLogonControl failed: Status = ${formatWin32Status(RPC_S_SERVER_UNAVAILABLE)}\n`);
    }
    const known = [access.domain.dnsName, access.domain.netbiosName].some((d) => d.toLowerCase() === target);
    if (!known) return fail(`I_NetLogonControl failed: Status = ${formatWin32Status(ERROR_NO_SUCH_DOMAIN)}\n`);
    if (access.kind === 'failed') {
      return fail(`I_NetLogonControl failed: Status = ${formatWin32Status(access.failure.netlogonStatus)}\n`);
    }
    return ok(
      'Flags: b0 HAS_IP  HAS_TIMESERV\n' +
        `Trusted DC Name \\\\${access.domainController}\n` +
        `Trusted DC Connection Status Status = ${formatWin32Status(NERR_SUCCESS)}\n` +
        `Trust Verification Status = ${formatWin32Status(NERR_SUCCESS)}\n` +
        NLTEST_DONE,
    );
  }
  return fail(`Usage: nltest [/OPTIONS]\nUnknown option: ${argv[1] ?? ''}\n`);
}

function klistFailure(identity: ContainerIdentity, failure: Pick<IdentityFailure, 'kerberosStatus'> | NtStatus): CommandResult {
  const status = 'kerberosStatus' in failure ? failure.kerberosStatus : failure;
  return fail(`\nCurrent LogonId is 0:${identity.logonId}\nklist failed with ${formatNtStatus(status)}: ${status.text}\n\n`);
}

function kerberosTicket(index: number, ticket: KerberosTicket): string {
  return (
    `#${index}>\tClient: ${ticket.client}\n` +
    `\tServer: ${ticket.server}\n` +
    '\tKerbTicket Encryption Type: AES-256-CTS-HMAC-SHA1-96\n' +
    '\tTicket Flags 0x40e10000 -> forwardable renewable initial pre_authent name_canonicalize\n' +
    '\tSession Key Type: AES-256-CTS-HMAC-SHA1-96\n' +
    `\tCache Flags: ${index === 0 ? '0x1 -> PRIMARY' : '0'}\n` +
    `\tKdc Called: ${ticket.kdc}\n`
  );
}

function klist(argv: string[], identity: ContainerIdentity, session: LogonSession = new LogonSession(Date.now)): CommandResult {
  const sub = (argv[1] ?? 'tickets').toLowerCase();
  if (sub !== 'tickets' && sub !== 'tgt' && sub !== 'get' && sub !== 'purge') {
    return fail(`klist: unknown option ${argv[1] ?? ''}\nUsage: klist [tickets | tgt | purge | get <spn>]\n`);
  }
  if (sub === 'get' && argv.length !== 3) return fail('klist get: a service principal name is required\n');
  const header = `\nCurrent LogonId is 0:${identity.logonId}\n`;
  if (sub === 'purge') {
    session.purge();
    return ok(`${header}\tDeleting all tickets:\n\tTicket(s) purged!\n`);
  }
  const access = identity.domainAccess;
  const show = (tickets: readonly KerberosTicket[]): CommandResult => ok(`${header}\nCached Tickets: (${tickets.length})\n\n${tickets.map((t, i) => kerberosTicket(i, t)).join('\n')}${tickets.length === 0 ? '' : '\n'}`);
  if (identity.networkIdentity === undefined || access.kind === 'none') {
    if (sub === 'get') return klistFailure(identity, STATUS_NO_LOGON_SERVERS);
    return ok(`${header}\nCached Tickets: (0)\n\n`);
  }
  const realm = access.domain.dnsName.toUpperCase();
  const client = `${identity.networkIdentity.slice(identity.networkIdentity.indexOf('\\') + 1)} @ ${realm}`;
  const tgtName = `krbtgt/${realm} @ ${realm}`;
  // A new ticket needs the domain as it is now: a working logon and clocks within Kerberos' limit.
  const request = (server: string): KerberosTicket | CommandResult => {
    if (access.kind === 'failed') return klistFailure(identity, access.failure);
    if (access.kerberosFailure !== undefined) return klistFailure(identity, access.kerberosFailure);
    return session.obtain(client, server, access.domainController, access.passwordVersion ?? 1);
  };
  const tgt = session.find(tgtName) ?? request(tgtName);
  if (!('server' in tgt)) return tgt;
  if (sub === 'get') {
    const spn = argv[2]!;
    if (!/^krbtgt(\/|$)/i.test(spn)) {
      const server = `${spn} @ ${realm}`;
      const ticket = session.find(server) ?? request(server);
      if (!('server' in ticket)) return ticket;
    }
  }
  const cached = session.cached();
  return show(sub === 'tgt' ? cached.filter((t) => t === tgt) : cached);
}

/** Handlers by program name, for the command emulator's registry. */
export const IDENTITY_COMMANDS: Readonly<Record<string, IdentityCommandHandler>> = Object.freeze({
  whoami,
  hostname,
  echo,
  nltest,
  klist,
});

/** The handler for argv, or undefined when argv is not an identity command. */
export function identityCommandFor(argv: readonly string[]): IdentityCommandHandler | undefined {
  if (argv.length === 0) return undefined;
  return IDENTITY_COMMANDS[programName(argv[0]!)];
}

/** Runs argv if it is an identity command; undefined otherwise (the emulator handles it). */
export function runIdentityCommand(argv: readonly string[], identity: ContainerIdentity, session?: LogonSession): CommandResult | undefined {
  const handler = identityCommandFor(argv);
  return handler === undefined ? undefined : handler([...argv], identity, session);
}

/** Splits a cmd.exe command line into words (double quotes group; they are removed). */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let current = '';
  let quoted = false;
  let inWord = false;
  for (const ch of line) {
    if (ch === '"') {
      quoted = !quoted;
      inWord = true;
    } else if (!quoted && (ch === ' ' || ch === '\t')) {
      if (inWord) words.push(current);
      current = '';
      inWord = false;
    } else {
      current += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(current);
  return words;
}

/**
 * `cmd /c <line>` for identity commands: cmd expands `%VAR%` in the whole line first, then runs
 * the command. Undefined when the line is not an identity command.
 */
export function runIdentityCommandLine(line: string, identity: ContainerIdentity, session?: LogonSession): CommandResult | undefined {
  const expanded = expandWindowsVariables(line, identity.environment);
  return runIdentityCommand(splitCommandLine(expanded.trim()), identity, session);
}
