import type { ShareEntry } from '../runtime/windows/file-shares.js';
import type { CommandIo } from './command-registry.js';
import type { WindowsSession } from './windows-identity.js';

/**
 * cmd.exe on UNC paths (`\\server\share\…`): `type`, `dir` and the `>`/`>>` redirections. The
 * container's session decides each access against the domain as it is now; a refusal prints
 * the Win32 error's system message, as cmd does ("Access is denied.", "The network path was not
 * found.", "The trust relationship between this workstation and the primary domain failed."), and
 * the statement fails with status 1.
 */

const CRLF = '\r\n';

/** Whether a cmd/PowerShell argument is a UNC path. */
export function isUnc(path: string): boolean {
  return /^[\\/]{2}[^\\/]/.test(path.trim());
}

/** cmd strips the quotes around a path argument. */
export function unquotePath(path: string): string {
  const t = path.trim();
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t;
}

/** `type \\server\share\f.txt`. */
export function cmdTypeUnc(session: WindowsSession, path: string, io: CommandIo): number {
  const read = session.readFile(path);
  if (!read.ok) {
    io.stderr(`${read.error.text}${CRLF}`);
    return 1;
  }
  io.stdout(read.value);
  return 0;
}

/** `command > \\server\share\f.txt` (append for `>>`): the command's output, written to the share. */
export function cmdRedirectToUnc(session: WindowsSession, path: string, output: string, append: boolean, io: CommandIo): number {
  const written = session.writeFile(path, output, append);
  if (!written.ok) {
    io.stderr(`${written.error.text}${CRLF}`);
    return 1;
  }
  return 0;
}

/** en-US short date and time as dir prints them: `11/28/2026  01:31 PM`. */
function dirTimestamp(ms: number): string {
  const d = new Date(ms);
  const two = (n: number): string => String(n).padStart(2, '0');
  const hours = d.getUTCHours();
  const hour12 = hours % 12 === 0 ? 12 : hours % 12;
  return `${two(d.getUTCMonth() + 1)}/${two(d.getUTCDate())}/${d.getUTCFullYear()}  ${two(hour12)}:${two(d.getUTCMinutes())} ${hours < 12 ? 'AM' : 'PM'}`;
}

const thousands = (n: number): string => n.toLocaleString('en-US');

/** A fixed serial per path: the same share shows the same one in every run (the number is ours). */
function volumeSerial(path: string): string {
  let h = 0x811c9dc5;
  for (const ch of path.toLowerCase()) h = Math.imul(h ^ ch.codePointAt(0)!, 0x01000193) >>> 0;
  const hex = h.toString(16).toUpperCase().padStart(8, '0');
  return `${hex.slice(0, 4)}-${hex.slice(4)}`;
}

/** Free space the simulated file server reports (our figure: 50 GiB). */
const FREE_BYTES = 53_687_091_200;

/**
 * `dir \\server\share[\folder]`: cmd's listing layout — the volume header, `.` and `..`, one line
 * per entry (`<DIR>` or the size right-aligned), and the totals.
 */
export function cmdDirUnc(session: WindowsSession, path: string, io: CommandIo): number {
  const listed = session.list(path);
  if (!listed.ok) {
    io.stderr(`${listed.error.text}${CRLF}`);
    return 1;
  }
  const root = path.replace(/[\\/]+$/, '').replace(/\//g, '\\');
  const entries: ShareEntry[] = listed.value;
  const newest = entries.reduce((t, e) => Math.max(t, e.writtenAtMs), 0) || Date.now();
  const lines = [
    ` Volume in drive ${root.split('\\').slice(0, 4).join('\\')} has no label.`,
    ` Volume Serial Number is ${volumeSerial(root.split('\\').slice(0, 4).join('\\'))}`,
    '',
    ` Directory of ${root}`,
    '',
    `${dirTimestamp(newest)}    <DIR>          .`,
    `${dirTimestamp(newest)}    <DIR>          ..`,
  ];
  let files = 0;
  let bytes = 0;
  let dirs = 2;
  for (const e of entries) {
    if (e.directory) {
      dirs++;
      lines.push(`${dirTimestamp(e.writtenAtMs)}    <DIR>          ${e.name}`);
    } else {
      files++;
      bytes += e.size;
      lines.push(`${dirTimestamp(e.writtenAtMs)} ${thousands(e.size).padStart(17)} ${e.name}`);
    }
  }
  lines.push(`${String(files).padStart(16)} File(s) ${thousands(bytes).padStart(14)} bytes`);
  lines.push(`${String(dirs).padStart(16)} Dir(s) ${thousands(FREE_BYTES).padStart(15)} bytes free`);
  io.stdout(`${lines.join(CRLF)}${CRLF}`);
  return 0;
}
