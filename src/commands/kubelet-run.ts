/**
 * `cri-winsim kubelet run`: validate, admit and start the pods of files (or of an expectation
 * file, `--expect`), then print their status; kubelet.ts wires it to its flags.
 */
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Command } from 'commander';
import type { ExampleReport } from '../demo/run-example.js';
import type { ExampleManifest } from '../demo/example-manifest.js';
import type { FieldValidation } from '../apiserver/api-decoding.js';
import { ManifestError, ManifestErrors } from '../apiserver/manifests.js';
import { admissionErrorText, alreadyExistsText, manifestErrorTexts } from '../kubectl/pod-printers.js';
import { PodPrinter } from '../kubectl/pod-output.js';
import { RunReadiness } from '../kubelet/run-readiness.js';
import { PodRecordStore } from '../kubelet/pod-records.js';
import { podFailed } from '../kubelet/pod-status.js';
import { readPodViews, type PodView } from '../kubelet/pod-views.js';
import { maxPodWorkers, runPods, type PodRunResult } from '../kubelet/run-pods.js';
import { junitReport, jsonReport, runReportCases, type ReportCase } from '../kubectl/run-report.js';
import { UsageError, integerFlag, invalidFlagValue, positiveDurationFlag } from './cli-errors.js';
import { durationMs, formatGoDuration } from './go-duration.js';
import { gmsaDesign, nodeSettings, randomHostname, type NodeSettings } from './kubelet-flags.js';
import { clusterSource, requestUser } from './kubelet-cluster.js';
import { outputFlag, printable } from './kubelet-get.js';
import { withRuntime } from './kubelet-runtime.js';
import { standaloneNodeOf } from './gc-flags.js';
import { io, writeError } from './kubelet-io.js';

/** Pod files from the arguments: files as given, directories by their *.yaml, *.yml, *.json (like kubectl -f DIR). */
async function podFiles(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const path of paths) {
    const info = await stat(path).catch(() => undefined);
    if (info?.isDirectory()) {
      const entries = (await readdir(path)).filter((f) => /\.(ya?ml|json)$/.test(f)).sort();
      files.push(...entries.map((f) => join(path, f)));
    } else files.push(path); // a missing file is reported by the loader with its name
  }
  return files;
}


// ---- run ----

export interface RunFlags {
  output?: string;
  validate: string;
  waitReady?: boolean;
  timeout: string;
  podWorkers: string;
  report: string[];
  expect?: string;
}

/** kubectl's --validate values as the API server's fieldValidation. */
function fieldValidation(mode: string): FieldValidation {
  if (mode === 'warn') return 'Warn';
  if (mode === 'ignore' || mode === 'false') return 'Ignore';
  return 'Strict';
}

interface ReportTarget {
  readonly format: 'junit' | 'json';
  readonly file: string;
}

/** --report junit=FILE|json=FILE (repeatable). */
function reportTargets(values: readonly string[]): ReportTarget[] {
  return values.map((value) => {
    const m = /^(junit|json)=(.+)$/.exec(value);
    if (m === null) throw invalidFlagValue('--report', value, 'expected junit=FILE or json=FILE');
    return { format: m[1] as 'junit' | 'json', file: resolve(m[2]!) };
  });
}

async function writeReports(targets: readonly ReportTarget[], cases: readonly ReportCase[], began: Date): Promise<void> {
  const meta = { suite: 'cri-winsim kubelet run', timestamp: began, durationSeconds: (Date.now() - began.getTime()) / 1000 };
  for (const target of targets) {
    await writeFile(target.file, target.format === 'junit' ? junitReport(cases, meta) : jsonReport(cases, meta));
  }
}

export async function kubeletRun(files: string[], flags: RunFlags, command: Command): Promise<number> {
  const settings = nodeSettings(command, io.err);
  const output = outputFlag(flags.output);
  const workers = integerFlag('--pod-workers', flags.podWorkers, { min: 1, max: maxPodWorkers });
  const timeoutNs = positiveDurationFlag('--timeout', flags.timeout);
  const reports = reportTargets(flags.report);
  if (flags.expect !== undefined) {
    if (files.length > 0) throw new UsageError('give pod files or --expect FILE, not both: the expectation file names its pod files');
    return runExpectations(flags, reports, settings, command);
  }
  if (files.length === 0) throw new UsageError("missing required argument 'files' (or --expect FILE)");
  const cluster = clusterSource(command);
  const user = requestUser(command);
  const began = new Date();
  return withRuntime(settings, async (cri) => {
    const records = new PodRecordStore(settings.rootDir);
    let results: PodRunResult[];
    try {
      results = await runPods(cri, await podFiles(files), {
        cluster,
        user,
        design: gmsaDesign(command),
        randomHostname: randomHostname(command),
        podLogsRoot: settings.podLogsRoot,
        nodeName: settings.hostname,
        callTimeoutMs: settings.callTimeoutMs,
        records,
        node: standaloneNodeOf(command, settings.hostname),
        podWorkers: workers,
        manifests: { fieldValidation: fieldValidation(flags.validate), onWarning: (warning) => writeError(`Warning: ${warning}`) },
      });
    } catch (err) {
      // A broken cluster stops everything before any pod is touched.
      if (err instanceof ManifestErrors) {
        for (const e of err.errors) writeError(`error: ${e.message}`);
        writeError(`error: ${cluster.description} is invalid; no pod was started`);
        return 1;
      }
      throw err;
    }

    let failed = false;
    const manifestErrors: Error[] = [];
    const started: string[] = [];
    for (const result of results) {
      if (result.stage === 'manifest') manifestErrors.push(result.error);
      else if (result.stage === 'admission' && result.error.fields !== undefined) {
        // A 422 from field validation reads as kubectl prints it, as a file's invalid pod always did.
        const object = { kind: 'Pod', name: result.pod.metadata?.name ?? '' };
        manifestErrors.push(...result.error.fields.map((f) => new ManifestError(result.source, f, object)));
      } else if (result.stage === 'admission') writeError(admissionErrorText(result.error, result.pod.metadata?.name ?? '', result.source.file, result.operation));
      else if (result.stage === 'exists') writeError(alreadyExistsText(result.pod.metadata?.name ?? '', result.source.file));
      // The pod was created; the kubelet refused to run it (its status: Failed, with this reason).
      else if (result.stage === 'rejected') writeError(`pod ${JSON.stringify(result.pod.metadata?.name ?? '')} failed: ${result.reason}: ${result.message}`);
      else started.push(result.pod.metadata!.uid!);
      if (result.stage !== 'runtime') failed = true;
    }
    for (const line of manifestErrorTexts(manifestErrors)) writeError(line);

    const ours = async (): Promise<PodView[]> => (await readPodViews(cri, records, { callTimeoutMs: settings.callTimeoutMs })).filter((v) => started.includes(v.pod.metadata?.uid ?? ''));
    let views = await ours();
    if (flags.waitReady === true && views.length > 0) {
      const deadline = Date.now() + durationMs(timeoutNs);
      // Readiness and startup probes run while the command waits: a probed pod is done once Ready.
      const readiness = new RunReadiness(cri, records, settings.callTimeoutMs);
      try {
        await readiness.observe(views);
        views = await ours();
        while (!views.every((v) => readiness.done(v)) && Date.now() < deadline) {
          await delay(200);
          await readiness.observe(await ours());
          views = await ours();
        }
      } finally {
        await readiness.stop();
      }
      const waiting = views.filter((v) => !readiness.done(v));
      for (const v of waiting) writeError(`error: timed out after ${formatGoDuration(timeoutNs)} waiting for pod ${v.row.namespace}/${v.row.name} to be ready (${v.row.status})`);
      if (waiting.length > 0) failed = true;
    }
    if (views.length > 0) io.out(new PodPrinter(output).print(views.map((v) => printable(v, settings.hostname)), views.length !== 1));
    if (views.some((v) => podFailed(v.status, v.record))) failed = true;
    if (reports.length > 0) await writeReports(reports, runReportCases(results, views), began);
    return failed ? 1 : 0;
  });
}

/** `run --expect FILE`: the example's runs on this node, judged against its expectations. */
async function runExpectations(flags: RunFlags, reports: readonly ReportTarget[], settings: NodeSettings, command: Command): Promise<number> {
  // Loaded for --expect only: the expectation file's schema is compiled when its module loads.
  const { loadExampleManifest, ExampleManifestError } = await import('../demo/example-manifest.js');
  const { runExample } = await import('../demo/run-example.js');
  let manifest: ExampleManifest;
  try {
    manifest = await loadExampleManifest(flags.expect!);
  } catch (err) {
    if (err instanceof ExampleManifestError) throw new UsageError(`--expect: ${err.message}`);
    throw err;
  }
  const raw = command.optsWithGlobals<{ cluster?: string; kubeconfig?: string }>();
  const cluster = raw.cluster !== undefined || raw.kubeconfig !== undefined ? clusterSource(command) : undefined;
  const began = new Date();
  const report: ExampleReport = await withRuntime(settings, (cri) =>
    runExample(cri, manifest, {
      podLogsRoot: settings.podLogsRoot,
      callTimeoutMs: settings.callTimeoutMs,
      records: new PodRecordStore(settings.rootDir),
      nodeName: settings.hostname,
      ...(cluster === undefined ? {} : { cluster }),
    }),
  );
  const cases: ReportCase[] = [];
  for (const run of report.runs) {
    const durations = new Map(run.results.map((r) => [r.stage === 'manifest' ? '' : (r.pod.metadata?.name ?? ''), r.stage === 'manifest' ? 0 : (r.durationMs ?? 0)]));
    for (const v of run.verdicts) {
      const pod = v.row?.pod ?? v.expectation?.pod ?? '';
      const container = v.row?.container ?? v.expectation?.container;
      const ok = v.problems.length === 0;
      cases.push({
        name: container === undefined ? pod : `${pod}/${container}`,
        namespace: v.row?.namespace ?? '',
        pod,
        ...(container === undefined ? {} : { container }),
        outcome: ok ? 'passed' : 'failed',
        reason: v.row?.outcome ?? 'Missing',
        message: ok ? (v.row?.message ?? '') : v.problems.join('; '),
        durationSeconds: Math.round(durations.get(pod) ?? 0) / 1000,
      });
      io.out(`${ok ? 'ok  ' : 'FAIL'} ${container === undefined ? pod : `${pod}/${container}`}: ${v.row?.outcome ?? 'missing'}${ok ? '' : ` — ${v.problems.join('; ')}`}\n`);
    }
  }
  const failed = cases.filter((c) => c.outcome === 'failed').length;
  io.out(`${cases.length - failed} of ${cases.length} as expected (${manifest.file})\n`);
  if (reports.length > 0) await writeReports(reports, cases, began);
  return report.ok ? 0 : 1;
}
