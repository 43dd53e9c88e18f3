/**
 * `cri-winsim explain POD [-n NS] [-o json|yaml]`: the path of a pod's credential spec, hop by
 * hop, and the first hop that broke (docs/explain.md). For the fake kubelet's pods it reads the
 * kubelet's records (--root-dir, as `kubelet get`) and the runtime's (its Identity service on
 * --container-runtime-endpoint); with --kubeconfig it asks the node that runs the pod, through the
 * API server's node proxy (`/api/v1/nodes/NODE/proxy/explain/NS/POD`).
 */
import { Command, Option } from 'commander';
import { createIdentityClient } from '../cri/identity-service.js';
import { explainRecordedPod, explainRefusedPod } from '../kubelet/explain/gather-explanation.js';
import type { IdentityExplanation } from '../kubelet/explain/identity-explanation.js';
import { PodRecordStore, type PodRecord } from '../kubelet/pod-records.js';
import { AdmissionRefusalStore } from '../kubelet/explain/admission-refusals.js';
import { parseExplainOutput, printExplanation } from '../kubectl/explain-printer.js';
import { UsageError } from './cli-errors.js';
import { withExamples } from './help-examples.js';
import { addClusterFlags, addLogFlags, addNodeFlags, nodeSettings } from './kubelet-flags.js';
import { DEFAULT_NAMESPACE } from './kubelet-get.js';
import { withRuntime } from './kubelet-runtime.js';

interface ExplainFlags {
  namespace?: string;
  output?: string;
  kubeconfig?: string;
  context?: string;
}

type Io = { out: (s: string) => void; err: (s: string) => void };

/** The newest record of the pod of that namespace and name (a pod run again gets a new UID). */
function newestRecord(records: readonly PodRecord[], namespace: string, name: string): PodRecord | undefined {
  return records
    .filter((r) => (r.pod.metadata?.namespace || DEFAULT_NAMESPACE) === namespace && r.pod.metadata?.name === name)
    .sort((a, b) => a.startTime.localeCompare(b.startTime))
    .pop();
}

export async function explain(pod: string, flags: ExplainFlags, command: Command, io: Io): Promise<number> {
  const output = (() => {
    try {
      return parseExplainOutput(flags.output);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  })();
  const [namespace, name] = pod.includes('/') ? (pod.split('/', 2) as [string, string]) : [flags.namespace ?? DEFAULT_NAMESPACE, pod];
  if (name === '') throw new UsageError('a pod name is required');
  let explanation: IdentityExplanation | undefined;
  const options = command.optsWithGlobals<ExplainFlags>();
  if (options.kubeconfig !== undefined) {
    // Loaded only for node mode: the API client and kubelet server modules are not needed otherwise.
    const { explainThroughApiServer } = await import('./explain-node-mode.js');
    explanation = await explainThroughApiServer(options.kubeconfig, options.context, namespace, name);
  } else {
    const settings = nodeSettings(command, io.err);
    const records = new PodRecordStore(settings.rootDir);
    const record = newestRecord(await records.list(), namespace, name);
    if (record === undefined) {
      const refusal = await new AdmissionRefusalStore(settings.rootDir).load(namespace, name);
      if (refusal !== undefined) explanation = explainRefusedPod(refusal.pod, refusal.refusal);
    } else {
      explanation = await withRuntime(settings, async () => {
        const identity = createIdentityClient(settings.endpoint);
        try {
          return await explainRecordedPod(identity, record, settings.callTimeoutMs);
        } finally {
          identity.close();
        }
      });
    }
  }
  if (explanation === undefined) {
    io.err(`Error from server (NotFound): pods ${JSON.stringify(name)} not found\n`);
    return 1;
  }
  io.out(printExplanation(explanation, output));
  return 0;
}

export function explainCommand(io: Io = { out: (s) => void process.stdout.write(s), err: (s) => void process.stderr.write(s) }): Command {
  const command = addLogFlags(addClusterFlags(addNodeFlags(new Command('explain'))))
    .description("Show each hop of a pod's credential spec (GMSACredentialSpec, admission, pod spec, security context, CRI config, hand-off, HCS document, the domain's answer) and the first that broke")
    .argument('<pod>', 'the pod: NAME or NAMESPACE/NAME')
    .addOption(new Option('-n, --namespace <namespace>', 'the namespace (default: default)'))
    .addOption(new Option('-o, --output <format>', 'output format: json or yaml (default: a table of hops)'))
    .action(async (pod: string, flags: ExplainFlags, cmd: Command) => {
      const code = await explain(pod, flags, cmd, io);
      if (code !== 0) process.exitCode = code;
    });
  withExamples(command, [
    ['Explain a pod the fake kubelet ran', 'cri-winsim explain webapp-gmsa --container-runtime-endpoint unix:///tmp/cri.sock'],
    ['The same for machines', 'cri-winsim explain default/webapp-gmsa -o json --container-runtime-endpoint unix:///tmp/cri.sock'],
    ['Explain a pod of a cluster, through the node that runs it', 'cri-winsim explain webapp-gmsa --kubeconfig ~/.kube/config'],
  ]);
  return command;
}
