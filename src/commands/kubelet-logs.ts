/**
 * `cri-winsim kubelet logs POD [-c CTR] [-f] [--tail N] [--timestamps] [--previous]` and
 * `cri-winsim kubelet exec POD [-c CTR] -- CMD…`: kubectl's commands for the pods this kubelet
 * runs, with kubectl's texts where the kubelet or kubectl has one (v0.34.12: podcmd
 * "Defaulted container", logsforobject "container x is not valid for pod y", kubelet_pods.go
 * "previous terminated container", exec's "command terminated with exit code N").
 */
import type { Command } from 'commander';
import type { CriClient } from '../cri/proto.js';
import { execInContainer } from '../kubelet/container-exec.js';
import { execInPod } from '../kubelet/pod-streaming.js';
import { streamContainerLog } from '../kubelet/container-logs.js';
import type { NodeContainer } from '../kubelet/node-pods.js';
import { PodRecordStore } from '../kubelet/pod-records.js';
import { readPodViews, selectPods, type PodView } from '../kubelet/pod-views.js';
import { ExitStatusError, UsageError, integerFlag } from './cli-errors.js';
import { DEFAULT_NAMESPACE, podNames } from './kubelet-get.js';
import { nodeSettings, type NodeSettings } from './kubelet-flags.js';
import { withRuntime } from './kubelet-runtime.js';

interface IO {
  out: (s: string | Buffer) => void;
  err: (s: string) => void;
}

async function findPod(cri: CriClient, settings: NodeSettings, name: string, namespace: string | undefined): Promise<PodView> {
  const views = await readPodViews(cri, new PodRecordStore(settings.rootDir), { callTimeoutMs: settings.callTimeoutMs });
  const { found, errors } = selectPods(views, [name], namespace ?? DEFAULT_NAMESPACE);
  if (found[0] === undefined) throw new Error(errors[0]?.replace(/^error: /, '') ?? `pods ${JSON.stringify(name)} not found`);
  return found[0];
}

/** kubectl's container choice: -c, else the default-container annotation, else the first (with a note on stderr). */
function containerName(view: PodView, requested: string | undefined, io: IO, notFound: (name: string) => string): string {
  const spec = view.pod.spec;
  const all = [...(spec?.containers ?? []).map((c) => c.name), ...(spec?.initContainers ?? []).map((c) => c.name)];
  if (requested !== undefined) {
    if (!all.includes(requested)) throw new Error(notFound(requested));
    return requested;
  }
  const annotated = view.pod.metadata?.annotations?.['kubectl.kubernetes.io/default-container'];
  if (annotated !== undefined && all.includes(annotated)) return annotated;
  const first = spec?.containers[0]?.name;
  if (first === undefined) throw new Error(`pod ${view.row.namespace}/${view.row.name} does not have any containers`);
  if ((spec?.containers.length ?? 0) > 1 || (spec?.initContainers?.length ?? 0) > 0) {
    const names = [...spec!.containers.map((c) => c.name), ...(spec?.initContainers ?? []).map((c) => `${c.name} (init)`)];
    io.err(`Defaulted container ${JSON.stringify(first)} out of: ${names.join(', ')}\n`);
  }
  return first;
}

/** The attempts of one container, newest first. */
function attempts(view: PodView, name: string): NodeContainer[] {
  return [...(view.nodePod?.containers ?? [])].filter((c) => c.name === name).sort((a, b) => b.attempt - a.attempt);
}

export interface LogsFlags {
  container?: string;
  follow?: boolean;
  tail?: string;
  timestamps?: boolean;
  previous?: boolean;
  namespace?: string;
}

export async function kubeletLogs(args: string[], flags: LogsFlags, command: Command, io: IO): Promise<number> {
  const settings = nodeSettings(command, io.err);
  const names = podNames(args);
  if (names.length !== 1) throw new UsageError('expected POD (or pod/POD): give exactly one pod');
  const name = names[0]!.replace(/^pods?\//, '');
  const tail = flags.tail === undefined ? -1 : integerFlag('--tail', flags.tail);
  if (flags.follow === true && flags.previous === true) throw new UsageError('only one of follow (-f) or previous (-p) is allowed');
  return withRuntime(settings, async (cri) => {
    const view = await findPod(cri, settings, name, flags.namespace);
    const container = containerName(view, flags.container, io, (c) => `container ${c} is not valid for pod ${view.row.name}`);
    const [current, previous] = attempts(view, container);
    const target = flags.previous === true ? previous : current;
    if (flags.previous === true && target === undefined) {
      throw new Error(`Error from server (BadRequest): previous terminated container ${JSON.stringify(container)} in pod ${JSON.stringify(view.row.name)} not found`);
    }
    // The kubelet's validateContainerLogStatus: a container that never ran has no log to show.
    const status = [...view.status.containerStatuses, ...(view.status.initContainerStatuses ?? [])].find((s) => s.name === container);
    const waiting = status?.state.waiting;
    if (target === undefined || (flags.previous !== true && waiting !== undefined && status?.lastState.terminated === undefined)) {
      throw new Error(`Error from server (BadRequest): container ${JSON.stringify(container)} in pod ${JSON.stringify(view.row.name)} is waiting to start: ${waiting?.reason ?? 'ContainerCreating'}`);
    }
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      await streamContainerLog(cri, target.id, (text) => io.out(text), {
        ...(flags.follow === true ? { follow: true } : {}),
        tail,
        ...(flags.timestamps === true ? { timestamps: true } : {}),
        callTimeoutMs: settings.callTimeoutMs,
        signal: stop.signal,
      });
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    return 0;
  });
}

export interface ExecFlags {
  container?: string;
  namespace?: string;
  stdin?: boolean;
  tty?: boolean;
}

export async function kubeletExec(args: string[], flags: ExecFlags, command: Command, io: IO): Promise<number> {
  const settings = nodeSettings(command, io.err);
  // commander drops `--` from the arguments: whether it was there is read from the command line.
  const [pod, ...cmd] = args;
  if (pod === undefined || cmd.length === 0) throw new UsageError('you must specify at least one command for the container');
  if (!process.argv.includes('--')) throw new UsageError('exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead');
  const interactive = flags.stdin === true || flags.tty === true;
  return withRuntime(settings, async (cri) => {
    const view = await findPod(cri, settings, pod.replace(/^pods?\//, ''), flags.namespace);
    if (view.status.phase === 'Succeeded' || view.status.phase === 'Failed') {
      throw new Error(`cannot exec into a container in a completed pod; current phase is ${view.status.phase}`);
    }
    const container = containerName(view, flags.container, io, (c) => `container ${c} not found in pod ${view.row.name}`);
    const running = attempts(view, container).find((c) => c.state === 'Running');
    if (running === undefined) throw new Error(`unable to upgrade connection: container not found (${JSON.stringify(container)})`);
    if (interactive) {
      // -i/-t: the runtime's streaming Exec (src/kubelet/pod-streaming.ts), as kubectl exec does.
      const ref = { namespace: view.row.namespace, name: view.row.name, container };
      const flagsIo = { stdin: flags.stdin === true, tty: flags.tty === true };
      const streamIo = { ...(flagsIo.stdin ? { stdin: process.stdin } : {}), stdout: process.stdout, stderr: process.stderr, notice: (t: string) => io.err(t) };
      const raw = flagsIo.tty && process.stdin.isTTY;
      if (raw) process.stdin.setRawMode(true);
      let code: number;
      try {
        code = await execInPod(cri, ref, cmd, flagsIo, streamIo, { callTimeoutMs: settings.callTimeoutMs });
      } finally {
        if (raw) process.stdin.setRawMode(false);
        process.stdin.pause();
      }
      if (code !== 0) throw new ExitStatusError(`command terminated with exit code ${code}`, code);
      return 0;
    }
    const outcome = await execInContainer(cri, { containerId: running.id, command: cmd, callTimeoutMs: settings.callTimeoutMs });
    io.out(outcome.stdout);
    if (outcome.stderr.length > 0) io.err(outcome.stderr.toString('utf8'));
    if (outcome.exitCode !== 0) throw new ExitStatusError(`command terminated with exit code ${outcome.exitCode}`, outcome.exitCode);
    return 0;
  });
}
