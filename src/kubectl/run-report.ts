/**
 * What `kubelet run --report junit=FILE|json=FILE` writes for CI: one test case per container
 * of every pod that reached the node, and one per pod refused before it did (bad manifest,
 * admission, already there) — each with its name, outcome, reason, message and duration. The
 * JUnit XML is the shape CI systems read (testsuites/testsuite/testcase with failure); the JSON
 * is this project's own (docs/ci.md).
 */
import { basename } from 'node:path';
import { describeRejection } from '../apiserver/admission.js';
import { ManifestError } from '../apiserver/manifests.js';
import type { PodView } from '../kubelet/pod-views.js';
import type { ContainerStatusView } from '../kubelet/pod-status.js';
import type { PodRunResult } from '../kubelet/run-pods.js';

export interface ReportCase {
  /** `POD/CONTAINER`, or `POD` for a pod that never reached the node (a file's base name when it had no name). */
  readonly name: string;
  readonly namespace: string;
  readonly pod: string;
  readonly container?: string;
  readonly outcome: 'passed' | 'failed';
  /** `Running`, `Completed`, the waiting or terminated reason, or the refusal's reason. */
  readonly reason: string;
  readonly message: string;
  readonly durationSeconds: number;
}

const httpReasons: Record<number, string> = { 400: 'BadRequest', 403: 'Forbidden', 404: 'NotFound', 409: 'AlreadyExists', 417: 'ExpectationFailed', 422: 'Invalid', 500: 'InternalError' };

const seconds = (ms: number | undefined): number => Math.round((ms ?? 0)) / 1000;

function containerCase(view: PodView, status: ContainerStatusView | undefined, name: string, durationSeconds: number): ReportCase {
  const base = { name: `${view.row.name}/${name}`, namespace: view.row.namespace, pod: view.row.name, container: name, durationSeconds };
  const state = status?.state;
  if (state?.running !== undefined) return { ...base, outcome: 'passed', reason: 'Running', message: '' };
  if (state?.terminated !== undefined) {
    const t = state.terminated;
    if (t.exitCode === 0) return { ...base, outcome: 'passed', reason: 'Completed', message: t.message ?? '' };
    return { ...base, outcome: 'failed', reason: t.reason || 'Error', message: t.message || `exited with code ${t.exitCode}` };
  }
  const waiting = state?.waiting;
  const sandbox = view.record?.sandboxError?.message;
  return { ...base, outcome: 'failed', reason: waiting?.reason ?? 'Waiting', message: waiting?.message ?? sandbox ?? '' };
}

/**
 * The test cases of one `kubelet run`: `results` in file order, `views` what the node shows of the
 * pods that reached it (after --wait-ready, when given).
 */
export function runReportCases(results: readonly PodRunResult[], views: readonly PodView[]): ReportCase[] {
  const cases: ReportCase[] = [];
  for (const result of results) {
    if (result.stage === 'manifest') {
      const error = result.error;
      const file = error instanceof ManifestError ? error.source.file : undefined;
      const name = (error instanceof ManifestError ? error.invalidObject?.name : undefined) ?? (file === undefined ? '(manifest)' : basename(file));
      cases.push({ name, namespace: '', pod: name, outcome: 'failed', reason: 'Invalid', message: error.message, durationSeconds: 0 });
      continue;
    }
    const pod = result.pod.metadata?.name ?? '';
    const namespace = result.pod.metadata?.namespace ?? 'default';
    const durationSeconds = seconds(result.durationMs);
    if (result.stage === 'admission') {
      cases.push({ name: pod, namespace, pod, outcome: 'failed', reason: httpReasons[result.error.code] ?? String(result.error.code), message: describeRejection(result.error), durationSeconds });
      continue;
    }
    if (result.stage === 'rejected') {
      cases.push({ name: pod, namespace, pod, outcome: 'failed', reason: result.reason, message: result.message, durationSeconds });
      continue;
    }
    if (result.stage === 'exists') {
      cases.push({ name: pod, namespace, pod, outcome: 'failed', reason: 'AlreadyExists', message: `pods ${JSON.stringify(pod)} already exists`, durationSeconds });
      continue;
    }
    const view = views.find((v) => v.pod.metadata?.uid === result.pod.metadata?.uid);
    if (view === undefined) {
      cases.push({ name: pod, namespace, pod, outcome: 'failed', reason: 'NotFound', message: 'the pod is gone from the node', durationSeconds });
      continue;
    }
    const init = result.pod.spec?.initContainers ?? [];
    for (const c of init) {
      const status = view.status.initContainerStatuses?.find((s) => s.name === c.name);
      cases.push(containerCase(view, status, c.name, durationSeconds));
    }
    for (const c of result.pod.spec?.containers ?? []) {
      cases.push(containerCase(view, view.status.containerStatuses.find((s) => s.name === c.name), c.name, durationSeconds));
    }
  }
  return cases;
}

const xml = (s: string): string =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!)
    // XML 1.0 has no place for most control characters.
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');

export interface ReportMeta {
  readonly suite: string;
  readonly timestamp: Date;
  readonly durationSeconds: number;
}

/** JUnit XML: one testsuite, a testcase per case, `<failure>` for the failed ones. */
export function junitReport(cases: readonly ReportCase[], meta: ReportMeta): string {
  const failures = cases.filter((c) => c.outcome === 'failed').length;
  const time = meta.durationSeconds.toFixed(3);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(meta.suite)}" tests="${cases.length}" failures="${failures}" errors="0" time="${time}">`,
    `  <testsuite name="${xml(meta.suite)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="0" time="${time}" timestamp="${meta.timestamp.toISOString().replace(/\.\d+Z$/, '')}">`,
  ];
  for (const c of cases) {
    const head = `    <testcase classname="${xml(`${c.namespace}/${c.pod}`)}" name="${xml(c.name)}" time="${c.durationSeconds.toFixed(3)}"`;
    if (c.outcome === 'passed') {
      lines.push(`${head}>`, `      <system-out>${xml(c.message === '' ? c.reason : `${c.reason}: ${c.message}`)}</system-out>`, '    </testcase>');
    } else {
      lines.push(`${head}>`, `      <failure type="${xml(c.reason)}" message="${xml(c.message === '' ? c.reason : c.message)}">${xml(`${c.reason}: ${c.message}`)}</failure>`, '    </testcase>');
    }
  }
  lines.push('  </testsuite>', '</testsuites>', '');
  return lines.join('\n');
}

/** The JSON report: the cases and their totals. */
export function jsonReport(cases: readonly ReportCase[], meta: ReportMeta): string {
  const failed = cases.filter((c) => c.outcome === 'failed').length;
  return `${JSON.stringify(
    {
      kind: 'KubeletRunReport',
      apiVersion: 'cri-winsim/v1',
      suite: meta.suite,
      timestamp: meta.timestamp.toISOString(),
      durationSeconds: meta.durationSeconds,
      summary: { tests: cases.length, passed: cases.length - failed, failed },
      testCases: cases.map((c) => ({
        name: c.name,
        namespace: c.namespace,
        pod: c.pod,
        ...(c.container === undefined ? {} : { container: c.container }),
        outcome: c.outcome,
        reason: c.reason,
        message: c.message,
        durationSeconds: c.durationSeconds,
      })),
    },
    null,
    2,
  )}\n`;
}
