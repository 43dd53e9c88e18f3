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
import { Command, Option } from 'commander';
import { withExamples } from './help-examples.js';
import { addClusterFlags, addLogFlags, addNodeFlags, nodeSettings, type NodeSettings } from './kubelet-flags.js';
import type { GetFlags } from './kubelet-get.js';
import type { ExecFlags, LogsFlags } from './kubelet-logs.js';
import type { NodeModeOptions } from './node.js';
import { nodeModeOptions } from './node-mode-flags.js';
import { kubeletStreamingCommands } from './kubelet-streaming.js';
import type { SyncFlags } from './kubelet-sync-loop.js';
import type { RunFlags } from './kubelet-run.js';
import type { ScopeFlags } from './kubelet-describe.js';
import { defaultPodWorkers, maxPodWorkers } from '../kubelet/pod-workers.js';
import { io } from './kubelet-io.js';

// Each action loads its own module when it runs: building the command tree (every kubelet
// command line, --help, completion) loads none of them.
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
        const { runNodeKubelet } = await import('./node.js');
        const settings = nodeSettings(command, io.err);
        return runNodeKubelet({
          ...options,
          logLevel: options.logLevel ?? 'info',
          hostnameOverride: settings.hostname,
          containerRuntimeEndpoint: settings.endpoint,
          ...(options.rootDir === undefined ? {} : { rootDir: options.rootDir }),
        });
      }
      const { kubeletSyncLoop } = await import('./kubelet-sync-loop.js');
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
    .action(async (files: string[], flags: RunFlags, command: Command) => {
      const { kubeletRun } = await import('./kubelet-run.js');
      exitWith(await kubeletRun(files, flags, command));
    });
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
    .action(async (names: string[], flags: GetFlags & { headers?: boolean }, command: Command) => {
      const { kubeletGet } = await import('./kubelet-get.js');
      exitWith(await kubeletGet(names, { ...flags, noHeaders: flags.headers === false }, command, io));
    });
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
    .action(async (names: string[], flags: ScopeFlags, command: Command) => {
      const { podNames } = await import('./kubelet-get.js');
      const { kubeletDescribe } = await import('./kubelet-describe.js');
      exitWith(await kubeletDescribe(podNames(names), flags, command));
    });
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
    .action(async (names: string[], flags: ScopeFlags & { all?: boolean; gracePeriod: string }, command: Command) => {
      const { podNames } = await import('./kubelet-get.js');
      const { kubeletDelete } = await import('./kubelet-describe.js');
      exitWith(await kubeletDelete(podNames(names), flags, command));
    });
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
    .action(async (pod: string, flags: LogsFlags, command: Command) => {
      const { kubeletLogs } = await import('./kubelet-logs.js');
      exitWith(await kubeletLogs([pod], flags, command, io));
    });
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
    .action(async (pod: string, commandLine: string[], flags: ExecFlags, command: Command) => {
      const { kubeletExec } = await import('./kubelet-logs.js');
      exitWith(await kubeletExec([pod, ...commandLine], flags, command, io));
    });
  withExamples(exec, [
    ['Who the container runs as', 'cri-winsim kubelet exec webapp-gmsa -n contoso-apps -c iis -- cmd /c whoami'],
    ['The domain the gMSA belongs to', 'cri-winsim kubelet exec webapp-gmsa -n contoso-apps -- nltest /parentdomain'],
  ]);
  kubelet.addCommand(exec);

  // attach and port-forward stream through the runtime's streaming server; exec above uses ExecSync.
  const streaming = kubeletStreamingCommands<NodeSettings>({
    connect: async (settings) => (await import('./kubelet-runtime.js')).connectRuntime(settings),
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
