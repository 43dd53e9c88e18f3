/**
 * `-o` of `kubelet get` and `kubelet run` in kubectl's shapes (k8s.io/cli-runtime and kubectl
 * v0.34.12): the table (`wide` adds IP and NODE; `-A` a NAMESPACE column; `--show-labels` a
 * LABELS column), `yaml` and `json` (a `List` for several pods), `name` (`pod/NAME`),
 * `jsonpath=TEMPLATE` and `custom-columns=HEADER:PATH,…`. A PodPrinter keeps what kubectl keeps
 * between the prints of `get -w`: the header printed once and the table's column widths
 * (cli-runtime's tabwriter remembers them: liggitt/tabwriter RememberWidths).
 */
import { stringify } from 'yaml';
import { executeJsonPathTemplate, findResults, goSprint, parseJsonPathTemplate, relaxedJsonPathExpression, type JsonPathTemplate } from './jsonpath-template.js';
import { humanDuration } from '../kubelet/pod-status.js';
import type { TableRow } from './pod-printers.js';

export type PodOutput =
  | { readonly kind: 'table'; readonly wide: boolean }
  | { readonly kind: 'yaml' | 'json' | 'name' }
  | { readonly kind: 'jsonpath'; readonly template: JsonPathTemplate }
  | { readonly kind: 'custom-columns'; readonly columns: readonly { readonly header: string; readonly template: JsonPathTemplate }[] };

export const OUTPUT_FORMATS = ['custom-columns', 'json', 'jsonpath', 'name', 'wide', 'yaml'] as const;

/** A -o value that names no printer or carries a bad template (kubectl's texts). */
export class OutputFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutputFormatError';
  }
}

/** Parses -o: `wide`, `yaml`, `json`, `name`, `jsonpath=…`, `custom-columns=…`; undefined: the table. */
export function parseOutputFormat(value: string | undefined): PodOutput {
  if (value === undefined || value === '') return { kind: 'table', wide: false };
  const eq = value.indexOf('=');
  const [format, argument] = eq === -1 ? [value, ''] : [value.slice(0, eq), value.slice(eq + 1)];
  switch (format) {
    case 'wide':
    case 'yaml':
    case 'json':
    case 'name':
      if (eq !== -1) break;
      return format === 'wide' ? { kind: 'table', wide: true } : { kind: format };
    case 'jsonpath': {
      if (argument === '') throw new OutputFormatError('template format specified but no template given');
      try {
        return { kind: 'jsonpath', template: parseJsonPathTemplate(argument) };
      } catch (err) {
        throw new OutputFormatError(`error parsing jsonpath ${argument}, ${(err as Error).message}`);
      }
    }
    case 'custom-columns': {
      if (argument === '') throw new OutputFormatError('custom-columns format specified but no custom columns given');
      const columns = argument.split(',').map((part) => {
        const colon = part.indexOf(':');
        if (colon === -1) throw new OutputFormatError(`unexpected custom-columns spec: ${part}, expected <header>:<json-path-expr>`);
        try {
          return { header: part.slice(0, colon), template: parseJsonPathTemplate(relaxedJsonPathExpression(part.slice(colon + 1))) };
        } catch (err) {
          throw new OutputFormatError((err as Error).message);
        }
      });
      return { kind: 'custom-columns', columns };
    }
    default:
      break;
  }
  throw new OutputFormatError(`unable to match a printer suitable for the output format ${JSON.stringify(value)}, allowed formats are: ${OUTPUT_FORMATS.join(',')}`);
}

/** What one pod is to a printer: its Pod object and its `get pods` row. */
export interface PrintablePod {
  readonly object: Record<string, unknown>;
  readonly row: TableRow;
  readonly labels?: Readonly<Record<string, string>>;
}

export interface PrinterOptions {
  readonly namespaceColumn?: boolean;
  readonly noHeaders?: boolean;
  readonly showLabels?: boolean;
  readonly now?: () => number;
}

/** cli-runtime's tabwriter: min width 6, padding 3, widths remembered across prints. */
class RememberingTable {
  private widths: number[] = [];

  format(lines: readonly (readonly string[])[]): string {
    for (const cells of lines) {
      cells.forEach((cell, i) => {
        if (i < cells.length - 1) this.widths[i] = Math.max(this.widths[i] ?? 6, cell.length + 3);
      });
    }
    return lines.map((cells) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(this.widths[i]!))).join('').trimEnd() + '\n').join('');
  }
}

const labelsText = (labels: Readonly<Record<string, string>> | undefined): string => {
  const entries = Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length === 0 ? '<none>' : entries.map(([k, v]) => `${k}=${v}`).join(',');
};

export class PodPrinter {
  private readonly table = new RememberingTable();
  private headerPrinted = false;
  private printed = 0;

  /** Table-like outputs print a header once and rows after it; the others one object at a time. */
  get isTable(): boolean {
    return this.output.kind === 'table' || this.output.kind === 'custom-columns';
  }

  constructor(
    private readonly output: PodOutput,
    private readonly options: PrinterOptions = {},
  ) {}

  /**
   * The pods as one answer of `get` (`asList`: several pods, or pods listed rather than named,
   * become one `List` for yaml, json and jsonpath), or one watch event when called again.
   */
  print(pods: readonly PrintablePod[], asList: boolean): string {
    const output = this.output;
    switch (output.kind) {
      case 'table':
        return this.tableText(pods, output.wide);
      case 'name':
        return pods.map((p) => `pod/${p.row.name}\n`).join('');
      case 'json':
      case 'yaml':
      case 'jsonpath': {
        const value = asList ? { apiVersion: 'v1', items: pods.map((p) => p.object), kind: 'List', metadata: { resourceVersion: '' } } : pods[0]?.object;
        if (value === undefined) return '';
        this.printed++;
        if (output.kind === 'json') return `${JSON.stringify(value, null, 4)}\n`;
        if (output.kind === 'yaml') return `${this.printed > 1 ? '---\n' : ''}${stringify(value, { lineWidth: 0 })}`;
        return output.kind === 'jsonpath' ? executeJsonPathTemplate(output.template, value) : '';
      }
      case 'custom-columns': {
        const { columns } = output;
        const lines: string[][] = [];
        if (!this.headerPrinted && this.options.noHeaders !== true) lines.push(columns.map((c) => c.header));
        this.headerPrinted = true;
        for (const pod of pods) {
          lines.push(
            columns.map((c) => {
              const values = findResults(c.template, pod.object).flat();
              return values.length === 0 ? '<none>' : values.map(goSprint).join(',');
            }),
          );
        }
        return this.table.format(lines);
      }
    }
  }

  private tableText(pods: readonly PrintablePod[], wide: boolean): string {
    const now = this.options.now?.() ?? Date.now();
    const withNamespace = this.options.namespaceColumn ?? new Set(pods.map((p) => p.row.namespace)).size > 1;
    const age = (t: string | undefined) => (t === undefined ? '<unknown>' : humanDuration(now - Date.parse(t)));
    const lines: string[][] = [];
    if (!this.headerPrinted && this.options.noHeaders !== true) {
      lines.push([
        ...(withNamespace ? ['NAMESPACE'] : []),
        'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE',
        ...(wide ? ['IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES'] : []),
        ...(this.options.showLabels === true ? ['LABELS'] : []),
      ]);
    }
    this.headerPrinted = true;
    for (const { row, labels } of pods) {
      lines.push([
        ...(withNamespace ? [row.namespace] : []),
        row.name,
        row.ready,
        row.status,
        row.lastRestart === undefined ? String(row.restarts) : `${row.restarts} (${age(row.lastRestart)} ago)`,
        age(row.startTime),
        ...(wide ? [row.podIP || '<none>', row.nodeName || '<none>', '<none>', '<none>'] : []),
        ...(this.options.showLabels === true ? [labelsText(labels)] : []),
      ]);
    }
    return this.table.format(lines);
  }
}
