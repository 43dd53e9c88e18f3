/**
 * `cri-winsim kubelet`: the fake kubelet's command line.
 *
 *   kubelet run POD.yaml… (--cluster DIR | --kubeconfig FILE) [-o …] [--wait-ready [--timeout 60s]]
 *               [--report junit=FILE|json=FILE] ;  kubelet run --expect expect.yaml
 *   kubelet --pod-manifest-path DIR (--cluster DIR | --kubeconfig FILE)   the static-pod sync loop, until SIGTERM/SIGINT
 *   kubelet get [pods] [NAME…] [-n NS | -A] [-l SELECTOR] [-o …] [-w [--timeout D]]
 *   kubelet describe NAME [-n NS];  kubelet delete NAME… | --all | -l SELECTOR [-n NS]
 *   kubelet logs POD [-c CTR] [-f] [--tail N] [--timestamps] [--previous];  kubelet exec POD [-c CTR] -- CMD…
 *
 * Flags are the kubelet's (--container-runtime-endpoint, --runtime-request-timeout,
 * --hostname-override; src/commands/kubelet-flags.ts). All talk to the runtime over CRI only.
 * What the runtime cannot tell (the admitted spec, why a container never started, events) is kept
 * under --root-dir, which defaults to a `kubelet` directory beside the runtime's socket, so the
 * commands find each other's pods. Exit status (docs/cli.md): 0 every pod running or completed
 * (with --expect: every expectation held), 1 a file, an admission, a pod or an expectation
 * failed, 2 the command line is wrong.
 */
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { loadExampleManifest, ExampleManifestError, type ExampleManifest } from '../demo/example-manifest.js';
import { runExample, type ExampleReport } from '../demo/run-example.js';
import type { FieldValidation } from '../apiserver/api-decoding.js';
import { ManifestError, ManifestErrors } from '../apiserver/manifests.js';
import { deleteNodePod } from '../kubelet/node-pods.js';
import { admissionErrorText, alreadyExistsText, describePod, manifestErrorTexts } from '../kubectl/pod-printers.js';
import { PodPrinter } from '../kubectl/pod-output.js';
import { RunReadiness } from '../kubelet/run-readiness.js';
import { PodRecordStore } from '../kubelet/pod-records.js';
import { podFailed } from '../kubelet/pod-status.js';
import { readPodViews, type PodView } from '../kubelet/pod-views.js';
import { defaultPodWorkers, maxPodWorkers, runPods, type PodRunResult } from '../kubelet/run-pods.js';
import { junitReport, jsonReport, runReportCases, type ReportCase } from '../kubectl/run-report.js';
import { kubeletSyncLoop, type SyncFlags } from './kubelet-sync-loop.js';
import { UsageError, integerFlag, invalidFlagValue, positiveDurationFlag } from './cli-errors.js';
import { durationMs, formatGoDuration } from './go-duration.js';
import { withExamples } from './help-examples.js';
import { addClusterFlags, addLogFlags, addNodeFlags, clusterSource, gmsaDesign, nodeSettings, randomHostname, requestUser, type NodeSettings } from './kubelet-flags.js';
import { createIdentityClient } from '../cri/identity-service.js';
import { recordIdentityEvents } from '../kubelet/explain/identity-events.js';
import { kubeletGet, noResourcesText, outputFlag, podNames, printable, selectViews, selectorFlag, type GetFlags } from './kubelet-get.js';
import { kubeletExec, kubeletLogs, type ExecFlags, type LogsFlags } from './kubelet-logs.js';
import { connectRuntime, withRuntime } from './kubelet-runtime.js';
import { nodeModeOptions, runNodeKubelet, type NodeModeOptions } from './node.js';
import { kubeletStreamingCommands } from './kubelet-streaming.js';
import { standaloneNodeOf } from './gc-flags.js';
import { setTimeout as delay } from 'node:timers/promises';

const io = {
  out: (text: string | Buffer): void => {
    process.stdout.write(text);
  },
  err: (text: string): void => {
    process.stderr.write(text);
  },
};
const writeError = (line: string): void => io.err(`${line}\n`);

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

interface RunFlags {
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

// ---- describe, delete ----

interface ScopeFlags {
  namespace?: string;
  allNamespaces?: boolean;
  selector?: string;
}

export async function kubeletDescribe(names: string[], flags: ScopeFlags, command: Command): Promise<number> {
  const settings = nodeSettings(command, io.err);
  const selector = selectorFlag(flags.selector);
  if (names.length === 0 && selector === undefined && flags.allNamespaces !== true) throw new UsageError('give pod names, -l SELECTOR or -A');
  return withRuntime(settings, async (cri) => {
    const records = new PodRecordStore(settings.rootDir);
    // Failures of identity operations inside the containers become events first (identity-events.ts).
    const identity = createIdentityClient(settings.endpoint);
    try {
      await recordIdentityEvents(identity, records, settings.callTimeoutMs);
    } finally {
      identity.close();
    }
    const views = await readPodViews(cri, records, { callTimeoutMs: settings.callTimeoutMs });
    const { views: found, errors } = selectViews(views, names, flags, selector);
    io.out(found.map((v) => describePod({ pod: v.pod, status: v.status, events: v.record?.events ?? [], nodeName: settings.hostname })).join('\n\n'));
    errors.forEach(writeError);
    if (names.length === 0 && found.length === 0) writeError(noResourcesText(flags));
    return errors.length > 0 ? 1 : 0;
  });
}

export async function kubeletDelete(names: string[], flags: ScopeFlags & { all?: boolean; gracePeriod: string }, command: Command): Promise<number> {
  const settings = nodeSettings(command, io.err);
  const selector = selectorFlag(flags.selector);
  if (flags.all === true && names.length > 0) throw new UsageError('names cannot be provided when --all is specified');
  if (selector !== undefined && names.length > 0) throw new UsageError('name cannot be provided when a selector is specified');
  if (flags.all !== true && names.length === 0 && selector === undefined) throw new UsageError('resource(s) were provided, but no name was specified: give pod names, -l SELECTOR or --all');
  const grace = integerFlag('--grace-period', flags.gracePeriod, { min: 0 });
  return withRuntime(settings, async (cri) => {
    const records = new PodRecordStore(settings.rootDir);
    const views = await readPodViews(cri, records, { callTimeoutMs: settings.callTimeoutMs });
    const { views: found, errors } = selectViews(views, names, flags, selector);
    let failed = errors.length > 0;
    for (const view of found) {
      try {
        if (view.nodePod !== undefined) await deleteNodePod(cri, view.nodePod, { gracePeriodSeconds: grace, callTimeoutMs: settings.callTimeoutMs });
        await records.remove(view.pod.metadata?.uid ?? view.row.name);
        io.out(`pod ${JSON.stringify(view.row.name)} deleted${found.some((o) => o !== view && o.row.name === view.row.name) ? ` from ${view.row.namespace} namespace` : ''}\n`);
      } catch (err) {
        failed = true;
        writeError(`error: ${(err as Error).message}`);
      }
    }
    errors.forEach(writeError);
    if (names.length === 0 && found.length === 0) writeError(noResourcesText(flags));
    return failed ? 1 : 0;
  });
}

// ---- commander wiring ----

const outputOption = () => new Option('-o, --output <format>', 'output format: wide, yaml, json, name, jsonpath=TEMPLATE, custom-columns=HEADER:PATH,…');
const namespaceOption = () => new Option('-n, --namespace <namespace>', 'the namespace (default: default)');
const allNamespacesOption = () => new Option('-A, --all-namespaces', 'pods of every namespace (adds a NAMESPACE column)');
const selectorOption = () => new Option('-l, --selector <selector>', "label selector: 'app=web', 'tier in (front,back)', 'app,!canary', 'env!=prod'");

/** Commander's action for a kubelet command: exit status set, errors left to the top level. */
const exitWith = (code: number): void => {
  if (code !== 0) process.exitCode = code;
};

export function kubeletCommand(): Command {
  const kubelet = addLogFlags(addClusterFlags(addNodeFlags(new Command('kubelet'))))
    .description('The fake kubelet: run pod YAML on the simulated Windows node over CRI, or sync a static pod directory')
    .option('--pod-manifest-path <dir>', 'run the static-pod sync loop on this directory until SIGTERM/SIGINT')
    .configureHelp({ showGlobalOptions: true })
    .action(async (flags: SyncFlags, command: Command) => {
      const options = command.optsWithGlobals<SyncFlags & NodeModeOptions & { rootDir?: string }>();
      // With a cluster to join (--kubeconfig without --pod-manifest-path, or --in-cluster): node mode.
      if (options.podManifestPath === undefined && (options.kubeconfig !== undefined || options.inCluster === true)) {
        const settings = nodeSettings(command, io.err);
        return runNodeKubelet({
          ...options,
          logLevel: options.logLevel ?? 'info',
          hostnameOverride: settings.hostname,
          containerRuntimeEndpoint: settings.endpoint,
          ...(options.rootDir === undefined ? {} : { rootDir: options.rootDir }),
        });
      }
      exitWith(await kubeletSyncLoop(flags, command));
    });
  nodeModeOptions(kubelet);
  withExamples(kubelet, [
    ['Sync a directory of static pod manifests (Ctrl-C stops)', 'cri-winsim kubelet --pod-manifest-path ./manifests --cluster examples/cluster --container-runtime-endpoint unix:///tmp/cri.sock'],
    ['Run two pods and wait until they are ready', 'cri-winsim kubelet run examples/pods/gmsa-pod-level.yaml examples/pods/run-as-username-pod.yaml --cluster examples/cluster --wait-ready'],
    ['Join a cluster as node win-1, with a runtime started separately', 'cri-winsim kubelet --kubeconfig node.kubeconfig --hostname-override win-1 --container-runtime-endpoint unix:///tmp/cri.sock'],
  ]);

  const run = new Command('run')
    .description('Validate, admit and start the pods of the given files (directories: their YAML/JSON files), then print their status')
    .argument('[files...]', 'pod manifests (Pod, or the pod template of a Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob)')
    .addOption(outputOption())
    .option('--wait-ready', 'wait until every pod is ready, completed or failed')
    .option('--timeout <duration>', 'how long --wait-ready waits (Go duration)', '60s')
    .addOption(
      new Option('--validate <mode>', "unknown fields, as kubectl's --validate: strict (or true) refuses the pod, warn prints a warning, ignore (or false) drops them")
        .choices(['strict', 'warn', 'ignore', 'true', 'false'])
        .default('strict'),
    )
    .option('--pod-workers <n>', `how many pods are started at the same time (1 to ${maxPodWorkers}); results keep the order of the files`, String(defaultPodWorkers))
    .option('--report <format=file>', 'write a CI report: junit=FILE or json=FILE (repeatable); one test case per pod and container', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--expect <file>', "run the pods an expectation file names (the demo's expect.yaml format, docs/ci.md) and check every outcome")
    .action(async (files: string[], flags: RunFlags, command: Command) => exitWith(await kubeletRun(files, flags, command)));
  withExamples(run, [
    ['Run the pods of a directory; exit 1 when one fails', 'cri-winsim kubelet run ./pods --cluster ./cluster'],
    ['Wait up to two minutes for the pods and write a JUnit report for CI', 'cri-winsim kubelet run ./pods --cluster ./cluster --wait-ready --timeout 2m --report junit=report.xml'],
    ['Check the outcomes an expectation file describes', 'cri-winsim kubelet run --expect examples/demo/expect.yaml --report json=report.json'],
  ]);
  kubelet.addCommand(run);

  const get = new Command('get')
    .description('List the pods on the node, like kubectl get pods')
    .argument('[names...]', '`pods`, then pod names (NAME or NAMESPACE/NAME)')
    .addOption(outputOption())
    .addOption(namespaceOption())
    .addOption(allNamespacesOption())
    .addOption(selectorOption())
    .option('-w, --watch', 'after listing, print each change of a pod (until Ctrl-C or --timeout)')
    .option('--timeout <duration>', 'stop watching after this long (Go duration, with -w)')
    .option('--no-headers', 'print no header line in the table outputs')
    .option('--show-labels', 'add a LABELS column')
    .action(async (names: string[], flags: GetFlags & { headers?: boolean }, command: Command) =>
      exitWith(await kubeletGet(names, { ...flags, noHeaders: flags.headers === false }, command, io)),
    );
  withExamples(get, [
    ['List the pods of the default namespace', 'cri-winsim kubelet get pods'],
    ['List every pod with its IP and node', 'cri-winsim kubelet get pods -A -o wide'],
    ['Names of the pods labelled app=web, one per line', "cri-winsim kubelet get pods -l app=web -o name"],
    ['Name and phase of every pod', "cri-winsim kubelet get pods -A -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.status.phase}{\"\\n\"}{end}'"],
    ['Custom columns', 'cri-winsim kubelet get pods -o custom-columns=NAME:.metadata.name,IP:.status.podIP'],
    ['Watch the pods for five minutes', 'cri-winsim kubelet get pods -w --timeout 5m'],
  ]);
  kubelet.addCommand(get);

  const describe = new Command('describe')
    .description('Show pods with their containers, conditions and events, like kubectl describe pod')
    .argument('[names...]', 'pod names (NAME or NAMESPACE/NAME; a leading `pod` is ignored)')
    .addOption(namespaceOption())
    .addOption(allNamespacesOption())
    .addOption(selectorOption())
    .action(async (names: string[], flags: ScopeFlags, command: Command) => exitWith(await kubeletDescribe(podNames(names), flags, command)));
  withExamples(describe, [
    ['Describe a pod of the default namespace', 'cri-winsim kubelet describe pod run-as-username-pod-demo'],
    ['Describe a pod of another namespace', 'cri-winsim kubelet describe pod webapp-gmsa -n contoso-apps'],
  ]);
  kubelet.addCommand(describe);

  const del = new Command('delete')
    .description('Stop and remove pods: every container and sandbox, and the kubelet record')
    .argument('[names...]', 'pod names (NAME or NAMESPACE/NAME; a leading `pod` is ignored)')
    .option('--all', 'every pod of the namespace (every pod at all with -A)')
    .option('--grace-period <seconds>', 'StopContainer timeout, in seconds', '30')
    .addOption(namespaceOption())
    .addOption(allNamespacesOption())
    .addOption(selectorOption())
    .action(async (names: string[], flags: ScopeFlags & { all?: boolean; gracePeriod: string }, command: Command) =>
      exitWith(await kubeletDelete(podNames(names), flags, command)),
    );
  withExamples(del, [
    ['Delete a pod at once', 'cri-winsim kubelet delete pod web --grace-period 0'],
    ['Delete every pod of every namespace', 'cri-winsim kubelet delete --all -A'],
  ]);
  kubelet.addCommand(del);

  const logs = new Command('logs')
    .description("Print a container's log, like kubectl logs")
    .argument('<pod>', 'the pod (NAME, pod/NAME or NAMESPACE/NAME)')
    .option('-c, --container <name>', 'the container (default: the only one, else the first, with a note)')
    .option('-f, --follow', 'keep printing until the container stops (or Ctrl-C)')
    .option('--tail <lines>', 'only the last N lines (-1: all)', '-1')
    .option('--timestamps', 'put the time of each line in front of it (RFC 3339)')
    .option('-p, --previous', "the previous attempt's log (after a restart)")
    .addOption(namespaceOption())
    .action(async (pod: string, flags: LogsFlags, command: Command) => exitWith(await kubeletLogs([pod], flags, command, io)));
  withExamples(logs, [
    ['The log of the only container of a pod', 'cri-winsim kubelet logs run-as-username-pod-demo'],
    ['The last 20 lines of one container, with times, and follow it', 'cri-winsim kubelet logs webapp-gmsa -n contoso-apps -c logger --tail 20 --timestamps -f'],
  ]);
  kubelet.addCommand(logs);

  const exec = new Command('exec')
    .description('Run a command in a container, like kubectl exec (output when it ends; exit status the command\'s)')
    .argument('<pod>', 'the pod (NAME, pod/NAME or NAMESPACE/NAME)')
    .argument('[command...]', 'after --: the command and its arguments')
    .option('-c, --container <name>', 'the container (default: the only one, else the first, with a note)')
    .option('-i, --stdin', 'pass stdin to the container (streaming Exec)')
    .option('-t, --tty', 'stdin is a TTY (streaming Exec)')
    .addOption(namespaceOption())
    .action(async (pod: string, commandLine: string[], flags: ExecFlags, command: Command) => exitWith(await kubeletExec([pod, ...commandLine], flags, command, io)));
  withExamples(exec, [
    ['Who the container runs as', 'cri-winsim kubelet exec webapp-gmsa -n contoso-apps -c iis -- cmd /c whoami'],
    ['The domain the gMSA belongs to', 'cri-winsim kubelet exec webapp-gmsa -n contoso-apps -- nltest /parentdomain'],
  ]);
  kubelet.addCommand(exec);

  // attach and port-forward stream through the runtime's streaming server; exec above uses ExecSync.
  const streaming = kubeletStreamingCommands<NodeSettings>({
    connect: (settings) => connectRuntime(settings),
    callTimeoutMs: (settings) => settings.callTimeoutMs,
    options: (c) => ({ ...c.optsWithGlobals<Record<string, unknown>>(), ...nodeSettings(c, io.err) }),
  });
  const examples: Record<string, (readonly [string, string])[]> = {
    attach: [["Attach to the main process of a pod's first container, passing stdin", 'cri-winsim kubelet attach web -i']],
    'port-forward': [['Forward 127.0.0.1:8080 to port 80 of a pod (Ctrl-C stops)', 'cri-winsim kubelet port-forward webapp-gmsa 8080:80 -n contoso-apps']],
  };
  for (const sub of streaming) {
    const subExamples = examples[sub.name()];
    if (subExamples !== undefined) kubelet.addCommand(withExamples(sub, subExamples));
  }
  for (const sub of kubelet.commands) sub.configureHelp({ showGlobalOptions: true });
  return kubelet;
}
