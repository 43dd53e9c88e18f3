/**
 * The demo's result table: one row per container (or per pod that never reached the node), with
 * the effective user and gMSA as the runtime reports them, the outcome, whether that outcome was
 * the expected one, and the kubelet's reason/message. Plain text with aligned columns, so it reads
 * the same in a terminal, a CI log and a test.
 */
import { formatTable } from '../kubectl/pod-printers.js';
import type { ExampleReport, RowVerdict } from './run-example.js';

export const TABLE_HEADER = ['POD', 'CONTAINER', 'DESIGN', 'FLAVOR', 'USER', 'GMSA', 'OUTCOME', 'AS EXPECTED', 'MESSAGE'] as const;

export interface TableOptions {
  /** Width of a terminal: when the messages do not fit beside the other columns, they become numbered notes under the table. */
  readonly tableWidth?: number;
}

/** Messages may span lines (runtime errors do); a table cell may not. */
const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();

/**
 * The cells of one verdict's row; `design` is the GMSA design its run admitted pods with,
 * `flavor` the runtime flavor the node ran with.
 */
export function tableCells(v: RowVerdict, design: string, flavor: string): string[] {
  const row = v.row;
  if (row === undefined) {
    const e = v.expectation!;
    return [e.pod, e.container ?? '-', design, flavor, '-', '-', '(missing)', 'no', `expected ${e.outcome}`];
  }
  return [
    row.pod,
    row.container ?? '-',
    design,
    flavor,
    row.user ?? '-',
    row.gmsa ?? '-',
    row.outcome,
    v.problems.length === 0 ? 'yes' : 'no',
    row.message === '' ? '-' : oneLine(row.message),
  ];
}

/** The whole report as a table, followed by the details of every unexpected row. */
export function formatReport(report: ExampleReport, options: TableOptions = {}): string {
  const verdicts = report.runs.flatMap((r) => r.verdicts);
  let rows = report.runs.flatMap((r) => r.verdicts.map((v) => tableCells(v, r.run.gmsaDesign, report.manifest.runtimeFlavor)));
  const notes: string[] = [];
  if (options.tableWidth !== undefined) {
    // Too narrow for the messages: the MESSAGE cell refers to a numbered note under the table.
    const header: readonly string[] = TABLE_HEADER;
    const before = header.slice(0, -1).reduce((sum, _, i) => sum + Math.max(...[header, ...rows].map((r) => r[i]!.length)) + 2, 0);
    const room = options.tableWidth - before;
    if (rows.some((r) => r[r.length - 1]!.length > room)) {
      rows = rows.map((r) => {
        const message = r[r.length - 1]!;
        if (message === '-') return r;
        notes.push(`[${notes.length + 1}] ${message}`);
        return [...r.slice(0, -1), `[${notes.length}]`];
      });
    }
  }
  const lines = [formatTable(TABLE_HEADER, rows, 2).trimEnd()];
  if (notes.length > 0) lines.push('', ...notes);
  const failed = verdicts.filter((v) => v.problems.length > 0);
  if (failed.length > 0) {
    lines.push('', 'Unexpected:');
    for (const v of failed) {
      const who = v.row ?? v.expectation!;
      for (const p of v.problems) lines.push(`  ${who.pod}${who.container === undefined ? '' : `/${who.container}`}: ${p}`);
    }
  }
  const total = verdicts.length;
  lines.push('', `${total - failed.length} of ${total} results as expected.`);
  return lines.join('\n');
}
