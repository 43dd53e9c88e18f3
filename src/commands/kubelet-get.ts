/**
 * `cri-winsim kubelet get`: the node's pods as `kubectl get pods` shows them — one namespace
 * (`-n`, default `default`) or all (`-A`, with a NAMESPACE column), names or a label selector
 * (`-l`), every `-o` of src/kubectl/pod-output.ts, and `-w`: after the list, a line (or object)
 * each time a pod's row changes or the pod goes away, until Ctrl-C or --timeout.
 */
import type { Command } from 'commander';
import { LabelSelectorError, parseLabelSelector, selectorMatches, type LabelSelector } from '../kubectl/label-selector.js';
import { podObject, type TableRow } from '../kubectl/pod-printers.js';
import { OutputFormatError, parseOutputFormat, PodPrinter, type PodOutput, type PrintablePod } from '../kubectl/pod-output.js';
import { PodRecordStore } from '../kubelet/pod-records.js';
import { readPodViews, selectPods, type PodView } from '../kubelet/pod-views.js';
import { UsageError, invalidFlagValue, positiveDurationFlag } from './cli-errors.js';
import { durationMs } from './go-duration.js';
import { nodeSettings, type NodeSettings } from './kubelet-flags.js';
import { withRuntime } from './kubelet-runtime.js';

export const DEFAULT_NAMESPACE = 'default';
/** How often `get -w` reads the node's pods again. */
const WATCH_POLL_MS = 500;

export interface GetFlags {
  output?: string;
  namespace?: string;
  allNamespaces?: boolean;
  selector?: string;
  watch?: boolean;
  timeout?: string;
  noHeaders?: boolean;
  showLabels?: boolean;
}

/** -o as a printer description; a bad value is a usage error (kubectl's text). */
export function outputFlag(value: string | undefined): PodOutput {
  try {
    return parseOutputFormat(value);
  } catch (err) {
    if (err instanceof OutputFormatError) throw new UsageError(err.message);
    throw err;
  }
}

export function selectorFlag(value: string | undefined): LabelSelector | undefined {
  if (value === undefined) return undefined;
  try {
    return parseLabelSelector(value);
  } catch (err) {
    if (err instanceof LabelSelectorError) throw new UsageError(err.message);
    throw err;
  }
}

export function tableRow(view: PodView, nodeName: string): TableRow {
  return { ...view.row, ...(view.status.startTime === undefined ? {} : { startTime: view.status.startTime }), nodeName };
}

export function printable(view: PodView, nodeName: string): PrintablePod {
  const labels = view.pod.metadata?.labels;
  return { object: podObject(view.pod, view.status, nodeName), row: tableRow(view, nodeName), ...(labels === undefined ? {} : { labels }) };
}

/** Pod names after kubectl's resource word (`pods`, `pod`, `po`). */
export function podNames(args: readonly string[]): string[] {
  return args[0] !== undefined && ['pods', 'pod', 'po'].includes(args[0]) ? args.slice(1) : [...args];
}

interface Selection {
  readonly views: PodView[];
  readonly errors: string[];
}

/** The pods a get/delete means: names in the namespace, or everything in scope matching -l. */
export function selectViews(views: readonly PodView[], names: readonly string[], flags: { namespace?: string; allNamespaces?: boolean }, selector: LabelSelector | undefined): Selection {
  const namespace = flags.allNamespaces === true ? undefined : (flags.namespace ?? DEFAULT_NAMESPACE);
  if (names.length > 0) {
    const { found, errors } = selectPods(views, names, namespace);
    return { views: found, errors };
  }
  return {
    views: views.filter((v) => (namespace === undefined || v.row.namespace === namespace) && (selector === undefined || selectorMatches(selector, v.pod.metadata?.labels))),
    errors: [],
  };
}

/** kubectl's line for an empty answer (on stderr). */
export function noResourcesText(flags: { namespace?: string; allNamespaces?: boolean }): string {
  return flags.allNamespaces === true ? 'No resources found' : `No resources found in ${flags.namespace ?? DEFAULT_NAMESPACE} namespace.`;
}

/** What a watch compares: the row without its ages. */
const rowState = (p: PrintablePod): string => JSON.stringify({ ...p.row, startTime: undefined, lastRestart: undefined, object: p.object['status'] });

export async function kubeletGet(args: string[], flags: GetFlags, command: Command, io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  const settings = nodeSettings(command, io.err);
  const names = podNames(args);
  const output = outputFlag(flags.output);
  const selector = selectorFlag(flags.selector);
  if (names.length > 0 && selector !== undefined) throw new UsageError('name cannot be provided when a selector is specified');
  if (names.length > 0 && flags.allNamespaces === true) throw new UsageError('a resource cannot be retrieved by name across all namespaces');
  const timeoutNs = flags.timeout === undefined ? undefined : positiveDurationFlag('--timeout', flags.timeout);
  if (timeoutNs !== undefined && flags.watch !== true) throw invalidFlagValue('--timeout', flags.timeout!, 'only a watch (-w) has a timeout');

  const printer = new PodPrinter(output, {
    ...(flags.allNamespaces === true ? { namespaceColumn: true } : {}),
    ...(flags.noHeaders === true ? { noHeaders: true } : {}),
    ...(flags.showLabels === true ? { showLabels: true } : {}),
  });
  const records = new PodRecordStore(settings.rootDir);
  return withRuntime(settings, async (cri) => {
    const read = async (): Promise<Selection> => selectViews(await readPodViews(cri, records, { callTimeoutMs: settings.callTimeoutMs }), names, flags, selector);
    const first = await read();
    const pods = first.views.map((v) => printable(v, settings.hostname));
    const asList = names.length !== 1;
    if (flags.watch === true) return watch(settings, read, pods, printer, timeoutNs, io, first.errors);
    if (pods.length === 0 && names.length === 0 && !['json', 'yaml', 'jsonpath'].includes(output.kind)) {
      io.err(`${noResourcesText(flags)}\n`);
      return 0;
    }
    if (pods.length > 0 || asList) io.out(printer.print(pods, asList));
    first.errors.forEach((e) => io.err(`${e}\n`));
    return first.errors.length > 0 ? 1 : 0;
  });
}

async function watch(
  settings: NodeSettings,
  read: () => Promise<Selection>,
  initial: PrintablePod[],
  printer: PodPrinter,
  timeoutNs: bigint | undefined,
  io: { out: (s: string) => void; err: (s: string) => void },
  errors: string[],
): Promise<number> {
  // kubectl prints the list first (as single objects for the object formats), then one entry per change.
  errors.forEach((e) => io.err(`${e}\n`));
  if (initial.length > 0) io.out(printer.isTable ? printer.print(initial, false) : initial.map((p) => printer.print([p], false)).join(''));
  const last = new Map(initial.map((p) => [`${p.row.namespace}/${p.row.name}`, p]));
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const timer = timeoutNs === undefined ? undefined : setTimeout(() => stop.abort(), durationMs(timeoutNs));
  try {
    while (!stop.signal.aborted) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, WATCH_POLL_MS);
        stop.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
      });
      if (stop.signal.aborted) break;
      const now = (await read()).views.map((v) => printable(v, settings.hostname));
      const seen = new Set<string>();
      for (const pod of now) {
        const key = `${pod.row.namespace}/${pod.row.name}`;
        seen.add(key);
        const before = last.get(key);
        if (before === undefined || rowState(before) !== rowState(pod)) io.out(printer.print([pod], false));
        last.set(key, pod);
      }
      // A pod that went away is shown once more, as kubectl shows the object of a DELETED event.
      for (const [key, pod] of last) {
        if (seen.has(key)) continue;
        io.out(printer.print([pod], false));
        last.delete(key);
      }
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return errors.length > 0 ? 1 : 0;
}
