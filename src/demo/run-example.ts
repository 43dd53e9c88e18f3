/**
 * Runs one example (an expect.yaml) against a CRI endpoint: each run's pod files through the fake
 * kubelet (`runPods`: validation, admission, SyncPod over CRI), then reads what the runtime made of
 * every container (ContainerStatus verbose: the OCI spec's `process.user.username` and
 * `windows.credentialSpec`), runs the expected identity commands inside the started containers,
 * and compares everything with the manifest. Nothing here knows how the runtime was started.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { ManifestError } from '../apiserver/manifests.js';
import type { PodRunResult, RunPodsOptions } from '../kubelet/run-pods.js';
import { runPods, summarizePodRun } from '../kubelet/run-pods.js';
import { DirectoryClusterSource, type ClusterSource } from '../apiserver/cluster.js';
import { defaultRequestingUser } from '../apiserver/admission.js';
import { requestingUser } from '../apiserver/rbac.js';
import { unaryCall, type CriClient } from '../cri/proto.js';
import type { ExampleManifest, ExampleRun, ExecExpectation, OutcomeExpectation } from './example-manifest.js';
import { setTimeout as delay } from 'node:timers/promises';

/** What one pod (or one container of it) came to, as the demo table shows it. */
export interface ObservedRow {
  readonly namespace: string;
  readonly pod: string;
  /** Absent for a pod that never reached the runtime, or whose sandbox failed. */
  readonly container?: string;
  readonly containerId?: string;
  /** `Running`, the kubelet's waiting reason, or the admission refusal's HTTP reason. */
  readonly outcome: string;
  readonly message: string;
  /** Effective run-as user from the runtime's OCI spec; undefined when no container exists. */
  readonly user?: string;
  /** `NETBIOS\Account` of the credential spec in the runtime's OCI spec, `none`, or undefined when no container exists. */
  readonly gmsa?: string;
  /** The runtime's container state when the row was read (`CONTAINER_RUNNING`, `CONTAINER_EXITED`, …). */
  readonly state?: string;
}

export interface ExecResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command in a container (ExecSync over CRI by default; the tests use crictl exec -s). */
export type ExecFunction = (containerId: string, command: readonly string[]) => Promise<ExecResult>;

export interface ExecCheck {
  readonly expectation: ExecExpectation;
  readonly result?: ExecResult;
  /** Set when the command could not be run at all. */
  readonly error?: string;
}

/** Reads what a container's own command printed (its CRI log, as text); the tests use crictl logs. */
export type LogReader = (containerId: string) => Promise<string>;

export interface LogCheck {
  readonly expected: string;
  readonly text?: string;
  readonly error?: string;
}

/** A row and its expectation, with every way they differ. */
export interface RowVerdict {
  readonly row?: ObservedRow;
  readonly expectation?: OutcomeExpectation;
  readonly exec: readonly ExecCheck[];
  readonly log?: LogCheck;
  /** Empty when the row is exactly as expected. */
  readonly problems: readonly string[];
}

export interface RunReport {
  readonly run: ExampleRun;
  readonly results: readonly PodRunResult[];
  readonly verdicts: readonly RowVerdict[];
}

export interface ExampleReport {
  readonly manifest: ExampleManifest;
  readonly runs: readonly RunReport[];
  /** True when every row was expected and came out as expected. */
  readonly ok: boolean;
}

export interface ExampleProgress {
  /** A step begins (one line). */
  step(text: string): void;
  /** A step's result; `ok` false marks an unexpected result. */
  result(text: string, ok: boolean): void;
}

export interface RunExampleOptions {
  /** Root of the pod log directories (the kubelet's /var/log/pods). */
  readonly podLogsRoot: string;
  readonly exec?: ExecFunction;
  readonly logs?: LogReader;
  readonly progress?: ExampleProgress;
  /** Deadline of each CRI call the kubelet makes (default 30 s). */
  readonly callTimeoutMs?: number;
  /** Where the started pods are recorded (`kubelet run --expect`: so get, logs and describe find them). */
  readonly records?: RunPodsOptions['records'];
  readonly nodeName?: string;
  /** Admission reads these cluster objects instead of the example's cluster directory. */
  readonly cluster?: ClusterSource;
  /**
   * A container's OCI spec as the node's own tools show it (`docker inspect` on a cri-dockerd
   * node, whose verbose ContainerStatus carries no spec): the USER and GMSA columns' fallback.
   */
  readonly inspectContainer?: ContainerSpecReader;
}

/** A container's OCI spec (user and credential spec), or undefined when the container is unknown. */
export type ContainerSpecReader = (containerId: string) => RuntimeSpecView | undefined;

/** The parts of an OCI spec the USER and GMSA columns show. */
export interface RuntimeSpecView {
  process?: { user?: { username?: unknown } };
  windows?: { credentialSpec?: unknown };
}

const EXEC_TIMEOUT_SECONDS = 10;

/** ExecSync over the CRI client, as `crictl exec -s` does it. */
export function criExec(cri: CriClient): ExecFunction {
  return async (containerId, command) => {
    const response = await unaryCall(
      cri.runtime,
      'ExecSync',
      { container_id: containerId, cmd: [...command], timeout: EXEC_TIMEOUT_SECONDS },
      { timeoutMs: (EXEC_TIMEOUT_SECONDS + 5) * 1000 },
    );
    return { exitCode: response.exit_code, stdout: response.stdout.toString('utf8'), stderr: response.stderr.toString('utf8') };
  };
}

/** The text of a CRI log line: `<RFC3339Nano> stdout|stderr P|F <text>` (P joins with the next). */
export function criLogText(content: string): string {
  let out = '';
  for (const line of content.split('\n')) {
    const m = /^\S+ (?:stdout|stderr) ([PF]) ?(.*)$/.exec(line);
    if (m === null) continue;
    out += m[2]! + (m[1] === 'F' ? '\n' : '');
  }
  return out;
}

/** Reads the log file ContainerStatus names (absolute, as crictl logs reads it). */
export function criLogs(cri: CriClient): LogReader {
  return async (containerId) => {
    const status = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId, verbose: false }, { timeoutMs: 10_000 });
    const path = status.status?.log_path ?? '';
    if (path === '') throw new Error(`container ${containerId} has no log path`);
    return criLogText(await readFile(path, 'utf8'));
  };
}

const LOG_WAIT_MS = 3000;
const LOG_POLL_MS = 100;
const ContainerStateRunning = 1;

/** Waits (bounded) until the log holds the fragment, or the container no longer runs. */
async function checkLog(cri: CriClient, containerId: string, expected: string, read: LogReader): Promise<LogCheck> {
  const deadline = Date.now() + LOG_WAIT_MS;
  for (;;) {
    let text: string;
    try {
      text = await read(containerId);
    } catch (err) {
      return { expected, error: err instanceof Error ? err.message : String(err) };
    }
    if (text.includes(expected) || Date.now() >= deadline) return { expected, text };
    const status = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId, verbose: false }, { timeoutMs: 10_000 });
    if (status.status?.state !== ContainerStateRunning) return { expected, text: await read(containerId) };
    await delay(LOG_POLL_MS);
  }
}

function logProblems(check: LogCheck | undefined): string[] {
  if (check === undefined) return [];
  if (check.error !== undefined) return [`log could not be read: ${check.error}`];
  if (check.text !== undefined && !check.text.includes(check.expected)) {
    return [`log ${JSON.stringify(check.text.trim())} does not contain ${JSON.stringify(check.expected)}`];
  }
  return [];
}

/** The gMSA a credential spec names: `NetBiosName\MachineAccountName` of its DomainJoinConfig. */
export function credentialSpecAccount(spec: unknown): string {
  let doc = spec;
  if (typeof doc === 'string') {
    if (doc.trim() === '') return 'none';
    try {
      doc = JSON.parse(doc) as unknown;
    } catch {
      return '(not JSON)';
    }
  }
  if (doc === undefined || doc === null) return 'none';
  const join = (doc as { DomainJoinConfig?: { NetBiosName?: unknown; MachineAccountName?: unknown } }).DomainJoinConfig;
  const account = typeof join?.MachineAccountName === 'string' ? join.MachineAccountName : '?';
  const domain = typeof join?.NetBiosName === 'string' ? join.NetBiosName : '?';
  return `${domain}\\${account}`;
}

/** The runtime's view of a container's identity, from ContainerStatus verbose `info.runtimeSpec`. */
export async function runtimeIdentity(cri: CriClient, containerId: string, inspect?: ContainerSpecReader): Promise<{ user: string; gmsa: string; state: string }> {
  const status = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId, verbose: true }, { timeoutMs: 10_000 });
  const state = containerStateNames[status.status?.state ?? -1] ?? 'CONTAINER_UNKNOWN';
  const raw = status.info?.info;
  if (raw === undefined) return { user: '(no info)', gmsa: '(no info)', state };
  let spec: RuntimeSpecView | undefined;
  try {
    spec = (JSON.parse(raw) as { runtimeSpec?: RuntimeSpecView }).runtimeSpec ?? inspect?.(containerId);
  } catch {
    return { user: '(no info)', gmsa: '(no info)', state };
  }
  if (spec === undefined) return { user: '(no info)', gmsa: '(no info)', state };
  const username = spec?.process?.user?.username;
  return {
    user: typeof username === 'string' && username !== '' ? username : '(image default)',
    gmsa: credentialSpecAccount(spec?.windows?.credentialSpec),
    state,
  };
}

const containerStateNames = ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'];

function containerOutcome(c: { state: string; reason?: string; exitCode?: number }): string {
  if (c.state === 'started') return 'Running';
  if (c.state === 'exited') return c.exitCode === 0 ? 'Completed' : (c.reason ?? 'Error');
  return c.reason ?? 'Waiting';
}

/** The table rows of one kubelet run, with the runtime's view of each container's identity. */
export async function observeRows(cri: CriClient, results: readonly PodRunResult[], inspect?: ContainerSpecReader): Promise<ObservedRow[]> {
  const rows: ObservedRow[] = [];
  for (const result of results) {
    if (result.stage === 'manifest') {
      // A pod refused before it had a name to show: the file stands for it.
      const error = result.error;
      const named = error instanceof ManifestError ? error.invalidObject?.name : undefined;
      const file = error instanceof ManifestError ? error.source.file : undefined;
      const message = file !== undefined && error.message.startsWith(`${file}: `) ? error.message.slice(file.length + 2) : error.message;
      rows.push({ namespace: '', pod: named ?? (file === undefined ? '(manifest)' : basename(file)), outcome: 'Invalid', message });
      continue;
    }
    if (result.stage !== 'runtime' || result.outcome.sandboxError !== undefined) {
      const summary = summarizePodRun(result);
      rows.push({ namespace: summary.namespace, pod: summary.name === '' ? '(manifest)' : summary.name, outcome: summary.status, message: summary.detail });
      continue;
    }
    const namespace = result.pod.metadata?.namespace ?? 'default';
    const pod = result.pod.metadata?.name ?? '';
    for (const c of result.outcome.containers) {
      const base = { namespace, pod, container: c.name, outcome: containerOutcome(c), message: c.message ?? '' };
      if (c.containerId === undefined) {
        rows.push(base);
        continue;
      }
      const identity = await runtimeIdentity(cri, c.containerId, inspect);
      rows.push({ ...base, containerId: c.containerId, ...identity });
    }
  }
  return rows;
}

const rowKey = (pod: string, container: string | undefined): string => `${pod}/${container ?? ''}`;

async function runExecChecks(row: ObservedRow, expectation: OutcomeExpectation, exec: ExecFunction): Promise<ExecCheck[]> {
  const checks: ExecCheck[] = [];
  for (const x of expectation.exec) {
    if (row.containerId === undefined || row.outcome !== 'Running') {
      checks.push({ expectation: x, error: 'the container is not running' });
      continue;
    }
    try {
      checks.push({ expectation: x, result: await exec(row.containerId, x.command) });
    } catch (err) {
      checks.push({ expectation: x, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return checks;
}

function execProblems(checks: readonly ExecCheck[]): string[] {
  const problems: string[] = [];
  for (const { expectation, result, error } of checks) {
    const what = `\`${expectation.command.join(' ')}\``;
    if (error !== undefined) {
      problems.push(`${what} could not run: ${error}`);
      continue;
    }
    if (result === undefined) continue;
    const output = `${result.stdout}${result.stderr}`;
    if (result.exitCode !== expectation.exitCode) problems.push(`${what} exited ${result.exitCode}, expected ${expectation.exitCode}; output: ${JSON.stringify(output.trim())}`);
    if (expectation.output !== undefined && !output.includes(expectation.output)) {
      problems.push(`${what} printed ${JSON.stringify(output.trim())}, expected it to contain ${JSON.stringify(expectation.output)}`);
    }
  }
  return problems;
}

/** Compares one row with its expectation (pure, apart from the exec results passed in). */
export function compareRow(row: ObservedRow | undefined, expectation: OutcomeExpectation | undefined, exec: readonly ExecCheck[] = [], log?: LogCheck): string[] {
  if (row === undefined) {
    return [`expected ${expectation!.pod}${expectation!.container === undefined ? '' : `/${expectation!.container}`} to come out ${expectation!.outcome}, but the kubelet reported no such ${expectation!.container === undefined ? 'pod' : 'container'}`];
  }
  if (expectation === undefined) return [`not in the example's expectations (outcome ${row.outcome}${row.message === '' ? '' : `: ${row.message}`})`];
  const problems: string[] = [];
  if (row.outcome !== expectation.outcome) problems.push(`outcome ${row.outcome}, expected ${expectation.outcome}${row.message === '' ? '' : ` (message: ${row.message})`}`);
  if (expectation.message !== undefined && !row.message.includes(expectation.message)) {
    problems.push(`message ${JSON.stringify(row.message)} does not contain ${JSON.stringify(expectation.message)}`);
  }
  if (expectation.user !== undefined && row.user !== expectation.user) problems.push(`user ${row.user === undefined ? '(no container)' : JSON.stringify(row.user)}, expected ${JSON.stringify(expectation.user)}`);
  if (expectation.gmsa !== undefined && row.gmsa !== expectation.gmsa) problems.push(`gMSA ${row.gmsa === undefined ? '(no container)' : JSON.stringify(row.gmsa)}, expected ${JSON.stringify(expectation.gmsa)}`);
  problems.push(...logProblems(log));
  problems.push(...execProblems(exec));
  return problems;
}

function describeRow(row: ObservedRow): string {
  const who = row.container === undefined ? row.pod : `${row.pod}/${row.container}`;
  return `${who}: ${row.outcome}${row.message === '' ? '' : ` — ${row.message}`}`;
}

/** Runs every run of the example on the CRI endpoint behind `cri` and judges the outcome. */
export async function runExample(cri: CriClient, manifest: ExampleManifest, options: RunExampleOptions): Promise<ExampleReport> {
  const exec = options.exec ?? criExec(cri);
  const logs = options.logs ?? criLogs(cri);
  const progress = options.progress;
  const cluster = options.cluster ?? new DirectoryClusterSource(manifest.cluster);
  const reports: RunReport[] = [];
  for (const run of manifest.runs) {
    const user = run.as === undefined ? defaultRequestingUser : requestingUser(run.as, run.groups);
    progress?.step(`kubelet run ${run.pods.length} pod file(s) as ${user.name} (--gmsa-design ${run.gmsaDesign})`);
    const results = await runPods(cri, run.pods, {
      cluster,
      user,
      design: run.gmsaDesign,
      podLogsRoot: options.podLogsRoot,
      ...(options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs }),
      ...(options.records === undefined ? {} : { records: options.records }),
      ...(options.nodeName === undefined ? {} : { nodeName: options.nodeName }),
    });
    const rows = await observeRows(cri, results, options.inspectContainer);
    const expected = new Map(run.expect.map((e) => [rowKey(e.pod, e.container), e]));
    const verdicts: RowVerdict[] = [];
    for (const row of rows) {
      const key = rowKey(row.pod, row.container);
      const expectation = expected.get(key);
      expected.delete(key);
      const log = expectation?.log === undefined
        ? undefined
        : row.containerId === undefined
          ? { expected: expectation.log, error: 'no container was created' }
          : await checkLog(cri, row.containerId, expectation.log, logs);
      const checks = expectation === undefined ? [] : await runExecChecks(row, expectation, exec);
      const problems = compareRow(row, expectation, checks, log);
      verdicts.push({ row, ...(expectation === undefined ? {} : { expectation }), exec: checks, ...(log === undefined ? {} : { log }), problems });
      progress?.result(describeRow(row) + checks.map((c) => `; \`${c.expectation.command.join(' ')}\` → ${c.result === undefined ? 'failed' : `exit ${c.result.exitCode}`}`).join(''), problems.length === 0);
    }
    for (const expectation of expected.values()) {
      const problems = compareRow(undefined, expectation);
      verdicts.push({ expectation, exec: [], problems });
      progress?.result(problems[0]!, false);
    }
    reports.push({ run, results, verdicts });
  }
  return { manifest, runs: reports, ok: reports.every((r) => r.verdicts.every((v) => v.problems.length === 0)) };
}
