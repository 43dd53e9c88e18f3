import type { Win32Status } from '../runtime/windows/windows-status.js';
import type { CommandContext, CommandIo } from './command-registry.js';
import { formatPsErrorRecord, type PsErrorRecord, type PsPosition } from './powershell-errors.js';
import { isUnc } from './smb-commands.js';
import { sessionOf, type WindowsSession } from './windows-identity.js';

/**
 * PowerShell cmdlets on files and on the domain: `Set-Content`/`Add-Content`, `Get-Content` and
 * `Test-Path` (UNC paths through the container's session, other paths on the container's own
 * files), and `Test-ComputerSecureChannel`. Failures are error records in Windows PowerShell
 * 5.1's layout with the FileSystem provider's error ids (PowerShell's FileSystemProvider.cs:
 * GetContentReader… and GetContentWriter… ids; Computer.cs and ComputerResources.resx for
 * Test-ComputerSecureChannel).
 */

const CRLF = '\r\n';

export interface CmdletCall {
  /** The cmdlet as typed, lower-cased (`get-content`, `gc`, `cat`, `type`). */
  name: string;
  /** Arguments with the shell's quoting and variables already resolved. */
  args: string[];
  position: PsPosition;
  io: CommandIo;
}

/** `-Name value` and `-Switch` parameters, and the positional rest, of a cmdlet call. */
function parameters(args: readonly string[], switches: readonly string[]): { named: Map<string, string>; positional: string[] } {
  const named = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const m = /^-([A-Za-z]+):?(.*)$/.exec(a);
    if (m === null || /^-\d/.test(a)) {
      positional.push(a);
      continue;
    }
    const name = m[1]!.toLowerCase();
    if (switches.includes(name)) named.set(name, m[2] === '' ? 'true' : m[2]!);
    else named.set(name, m[2] !== '' ? m[2]! : (args[++i] ?? ''));
  }
  return { named, positional };
}

const cmdletClass = (activity: string): string => `Microsoft.PowerShell.Commands.${activity.replace('-', '')}Command`;

function writeRecord(call: CmdletCall, record: Omit<PsErrorRecord, 'fullyQualifiedErrorId'> & { errorId: string }): void {
  const { errorId, ...rest } = record;
  call.io.stderr(formatPsErrorRecord({ ...rest, fullyQualifiedErrorId: `${errorId},${cmdletClass(record.activity)}` }, call.position));
}

const NOT_FOUND_CODES = new Set([2, 3, 53, 67]);

/** Get-Content's record for a failed read (FileSystemProvider's item check, then GetContentReader). */
function readFailure(call: CmdletCall, path: string, error: Win32Status): void {
  const activity = 'Get-Content';
  if (NOT_FOUND_CODES.has(error.code)) {
    writeRecord(call, { activity, message: `Cannot find path '${path}' because it does not exist.`, category: 'ObjectNotFound', target: path, reason: 'ItemNotFoundException', errorId: 'PathNotFound' });
  } else if (error.code === 5) {
    writeRecord(call, { activity, message: `Access to the path '${path}' is denied.`, category: 'PermissionDenied', target: path, reason: 'UnauthorizedAccessException', errorId: 'GetContentReaderUnauthorizedAccessError' });
  } else {
    writeRecord(call, { activity, message: error.text, category: 'ReadError', target: path, reason: 'IOException', errorId: 'GetContentReaderIOError' });
  }
}

/** Set-Content's / Add-Content's record for a failed write (GetContentWriter). */
function writeFailure(call: CmdletCall, activity: string, path: string, error: Win32Status): void {
  if (error.code === 5) {
    writeRecord(call, { activity, message: `Access to the path '${path}' is denied.`, category: 'PermissionDenied', target: path, reason: 'UnauthorizedAccessException', errorId: 'GetContentWriterUnauthorizedAccessError' });
  } else if (error.code === 3) {
    writeRecord(call, { activity, message: `Could not find a part of the path '${path}'.`, category: 'ObjectNotFound', target: path, reason: 'DirectoryNotFoundException', errorId: 'GetContentWriterDirectoryNotFoundError' });
  } else {
    writeRecord(call, { activity, message: error.text, category: 'WriteError', target: path, reason: 'IOException', errorId: 'GetContentWriterIOError' });
  }
}

/** Content as Get-Content emits it: one object per line, the last line's terminator dropped. */
function lines(content: string): string[] {
  if (content === '') return [];
  const split = content.split(/\r?\n/);
  if (split.at(-1) === '') split.pop();
  return split;
}

type Result = { ok: true; value: string } | { ok: false; error: Win32Status };

const FILE_NOT_FOUND: Win32Status = { code: 2, name: 'ERROR_FILE_NOT_FOUND', text: 'The system cannot find the file specified.' };

function readPath(ctx: CommandContext, session: WindowsSession | undefined, path: string): Result {
  if (isUnc(path)) return session === undefined ? { ok: false, error: FILE_NOT_FOUND } : session.readFile(path);
  const content = ctx.target.files.get(path);
  return content === undefined ? { ok: false, error: FILE_NOT_FOUND } : { ok: true, value: content };
}

/** Get-Content (gc, cat, type): false when it wrote an error record. */
function getContent(ctx: CommandContext, call: CmdletCall): boolean {
  const { named, positional } = parameters(call.args, []);
  const paths = (named.get('path') ?? named.get('literalpath') ?? positional[0] ?? '').split(',').filter((p) => p !== '');
  let ok = true;
  for (const path of paths) {
    const read = readPath(ctx, sessionOf(ctx), path);
    if (!read.ok) {
      readFailure(call, path, read.error);
      ok = false;
      continue;
    }
    for (const line of lines(read.value)) call.io.stdout(`${line}${CRLF}`);
  }
  return ok;
}

/** Set-Content / Add-Content: each value a line ending in CRLF (none with -NoNewline). */
function setContent(ctx: CommandContext, call: CmdletCall, append: boolean): boolean {
  const activity = append ? 'Add-Content' : 'Set-Content';
  const { named, positional } = parameters(call.args, ['nonewline', 'force']);
  const path = named.get('path') ?? named.get('literalpath') ?? positional.shift() ?? '';
  const values = named.has('value') ? [named.get('value')!] : positional;
  const text = named.has('nonewline') ? values.join('') : values.map((v) => `${v}${CRLF}`).join('');
  if (!isUnc(path)) {
    ctx.target.files.set(path, append ? (ctx.target.files.get(path) ?? '') + text : text);
    return true;
  }
  const session = sessionOf(ctx);
  const written = session === undefined ? { ok: false as const, error: FILE_NOT_FOUND } : session.writeFile(path, text, append);
  if (written.ok) return true;
  writeFailure(call, activity, path, written.error);
  return false;
}

/** Test-Path: True or False, never an error (access denied and unreachable servers are False). */
function testPath(ctx: CommandContext, call: CmdletCall): boolean {
  const { named, positional } = parameters(call.args, ['isvalid']);
  const path = named.get('path') ?? named.get('literalpath') ?? positional[0] ?? '';
  let exists: boolean;
  if (isUnc(path)) {
    const kind = sessionOf(ctx)?.itemKind(path);
    exists = kind !== undefined && kind.ok && kind.value !== undefined;
  } else {
    exists = ctx.target.files.has(path);
  }
  call.io.stdout(`${exists ? 'True' : 'False'}${CRLF}`);
  return true;
}

/**
 * Test-ComputerSecureChannel [-Repair] [-Verbose] (PowerShell Computer.cs): a container without a
 * gMSA is not part of a domain (a terminating error); otherwise True when the secure channel
 * works, False when it does not; -Repair resets it as `nltest /sc_reset` does.
 */
function testComputerSecureChannel(ctx: CommandContext, call: CmdletCall): boolean {
  const activity = 'Test-ComputerSecureChannel';
  const { named } = parameters(call.args, ['repair', 'verbose', 'whatif', 'confirm']);
  const verbose = named.has('verbose') && !/^\$?false$/i.test(named.get('verbose')!);
  const session = sessionOf(ctx);
  const identity = session?.identity();
  const host = identity?.hostname ?? ctx.target.hostname;
  if (session === undefined || identity === undefined || identity.domainAccess.kind === 'none') {
    writeRecord(call, {
      activity,
      message: 'Cannot verify the secure channel password for the local computer. The local computer is not currently part of a domain.',
      category: 'InvalidOperation',
      target: host,
      reason: 'InvalidOperationException',
      errorId: 'ComputerNotInDomain',
    });
    return false;
  }
  const domain = identity.domainAccess.domain.dnsName;
  if (verbose) call.io.stdout(`VERBOSE: Performing the operation "${activity}" on target "${host}".${CRLF}`);
  let good: boolean;
  let message: string;
  if (named.has('repair')) {
    const channelTaken = identity.domainAccess.kind === 'failed' && identity.domainAccess.failure.reason === 'secure-channel-taken';
    if (identity.domainAccess.kind === 'ok' || channelTaken) session.resetSecureChannel();
    good = session.identity()?.domainAccess.kind === 'ok';
    message = good
      ? `The secure channel between the local computer and the domain ${domain} was successfully repaired.`
      : `The attempt to repair the secure channel between the local computer and the domain ${domain} has failed.`;
  } else {
    good = identity.domainAccess.kind === 'ok';
    message = good
      ? `The secure channel between the local computer and the domain ${domain} is in good condition.`
      : `The secure channel between the local computer and the domain ${domain} is broken.`;
  }
  call.io.stdout(`${good ? 'True' : 'False'}${CRLF}`);
  if (verbose) call.io.stdout(`VERBOSE: ${message}${CRLF}`);
  return true;
}

/**
 * Runs the cmdlet when it is one of these; undefined when not (the shell goes on), else whether
 * it succeeded (false: it wrote an error record, `$?` is False).
 */
export function runBuiltinCmdlet(ctx: CommandContext, call: CmdletCall): boolean | undefined {
  switch (call.name) {
    case 'get-content':
    case 'gc':
    case 'cat':
    case 'type':
      return getContent(ctx, call);
    case 'set-content':
    case 'sc':
      return setContent(ctx, call, false);
    case 'add-content':
    case 'ac':
      return setContent(ctx, call, true);
    case 'test-path':
      return testPath(ctx, call);
    case 'test-computersecurechannel':
      return testComputerSecureChannel(ctx, call);
    default:
      return undefined;
  }
}
