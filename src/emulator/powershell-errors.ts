/**
 * A PowerShell error record as Windows PowerShell 5.1's console shows it (the default NormalView of
 * System.Management.Automation.ErrorRecord): the message after the command's name, its position in
 * the script, then the category and the fully qualified error id, and a line with one space.
 *
 *   Get-Content : Cannot find path '\\files01\data\f.txt' because it does not exist.
 *   At line:1 char:1
 *   + Get-Content \\files01\data\f.txt
 *   + ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 *       + CategoryInfo          : ObjectNotFound: (\\files01\data\f.txt:String) [Get-Content], ItemNotFoundException
 *       + FullyQualifiedErrorId : PathNotFound,Microsoft.PowerShell.Commands.GetContentCommand
 */
export interface PsErrorRecord {
  /** The cmdlet as the record names it (`Get-Content`). */
  activity: string;
  message: string;
  /** ErrorCategory (`ObjectNotFound`, `PermissionDenied`, `WriteError`, `ReadError`, `InvalidOperation`). */
  category: string;
  /** The target object (a path, a computer name); shown as `(target:String)`. */
  target: string;
  /** The exception's type name (`ItemNotFoundException`, `UnauthorizedAccessException`, `IOException`). */
  reason: string;
  /** `PathNotFound,Microsoft.PowerShell.Commands.GetContentCommand`. */
  fullyQualifiedErrorId: string;
}

/** Where the failing command stands in the script, for `At line:N char:M`. */
export interface PsPosition {
  script: string;
  statement: string;
}

const CRLF = '\r\n';

/** The `At line … char …` block: the line holding the statement, and tildes under it. */
function positionBlock(position: PsPosition): string {
  const lines = position.script.split(/\r?\n/);
  const statement = position.statement.trim();
  for (let i = 0; i < lines.length; i++) {
    const column = lines[i]!.indexOf(statement);
    if (column < 0) continue;
    return `At line:${i + 1} char:${column + 1}${CRLF}+ ${lines[i]}${CRLF}+ ${' '.repeat(column)}${'~'.repeat(Math.max(1, statement.length))}${CRLF}`;
  }
  return `At line:1 char:1${CRLF}+ ${statement}${CRLF}+ ${'~'.repeat(Math.max(1, statement.length))}${CRLF}`;
}

/** The record as the console writes it to the error stream. */
export function formatPsErrorRecord(record: PsErrorRecord, position: PsPosition): string {
  return (
    `${record.activity} : ${record.message}${CRLF}` +
    positionBlock(position) +
    `    + CategoryInfo          : ${record.category}: (${record.target}:String) [${record.activity}], ${record.reason}${CRLF}` +
    `    + FullyQualifiedErrorId : ${record.fullyQualifiedErrorId}${CRLF}` +
    ` ${CRLF}`
  );
}
