/**
 * `cri-winsim kubelet exec|attach|port-forward`: kubectl's streaming commands for pods the fake
 * kubelet ran, through the runtime's streaming server (src/kubelet/pod-streaming.ts).
 *
 *   kubelet exec POD [-c CONTAINER] [-n NS] [-i] [-t] -- COMMAND [ARGS…]
 *   kubelet attach POD [-c CONTAINER] [-n NS] [-i] [-t]
 *   kubelet port-forward POD [LOCAL:]REMOTE… [-n NS]   until SIGINT/SIGTERM
 */
import { Command } from 'commander';
import type { CriClient } from '../cri/proto.js';
import type { PodRef } from '../kubelet/pod-streaming.js';

// The streaming client (../kubelet/pod-streaming.js) is loaded by the action that streams.
const streaming = () => import('../kubelet/pod-streaming.js');

export interface StreamingCommandHooks<O> {
  /** Connects to the runtime named by the kubelet's options. */
  connect(options: O): Promise<CriClient>;
  /** The kubelet's options merged with the subcommand's. */
  options(command: Command): O & { namespace?: string; container?: string; stdin?: boolean; tty?: boolean };
  callTimeoutMs(options: O): number;
}

/** NAME or NAMESPACE/NAME, as the other kubelet subcommands take a pod. */
function podRef(name: string, options: { namespace?: string; container?: string }): PodRef {
  const slash = name.indexOf('/');
  const ref: PodRef = slash >= 0 ? { namespace: name.slice(0, slash), name: name.slice(slash + 1) } : { namespace: options.namespace ?? 'default', name };
  if (options.container !== undefined) ref.container = options.container;
  return ref;
}

async function withClient<O>(hooks: StreamingCommandHooks<O>, options: O, run: (cri: CriClient) => Promise<number>): Promise<void> {
  let cri: CriClient | undefined;
  try {
    cri = await hooks.connect(options);
    const code = await run(cri);
    if (code !== 0) process.exitCode = code;
  } catch (err) {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  } finally {
    cri?.close();
  }
}

/** A terminal for -t: raw mode while the session runs, its size sent once. */
async function withTerminal<T>(tty: boolean, run: (size: () => { width: number; height: number } | undefined) => Promise<T>): Promise<T> {
  const stdin = process.stdin;
  const raw = tty && stdin.isTTY;
  if (raw) stdin.setRawMode(true);
  try {
    return await run(() => (process.stdout.isTTY ? { width: process.stdout.columns, height: process.stdout.rows } : undefined));
  } finally {
    if (raw) stdin.setRawMode(false);
    stdin.pause();
  }
}

export function kubeletStreamingCommands<O>(hooks: StreamingCommandHooks<O>): Command[] {
  const exec = new Command('exec')
    .description('Run a command in a container of a pod, like kubectl exec (streaming: stdin, tty, exit code)')
    .argument('<pod>', 'pod name (NAME or NAMESPACE/NAME)')
    .argument('<command...>', 'the command and its arguments (after --)')
    .option('-c, --container <name>', 'container name (default: the first)')
    .option('-n, --namespace <namespace>', 'namespace of the pod', 'default')
    .option('-i, --stdin', 'pass stdin to the container')
    .option('-t, --tty', 'stdin is a TTY')
    .action(async (pod: string, cmd: string[], _o: unknown, command: Command) => {
      const options = hooks.options(command);
      const { execInPod } = await streaming();
      await withClient(hooks, options, (cri) => withTerminal(options.tty === true, () =>
        execInPod(cri, podRef(pod, options), cmd, { stdin: options.stdin === true, tty: options.tty === true }, {
          ...(options.stdin === true ? { stdin: process.stdin } : {}),
          stdout: process.stdout,
          stderr: process.stderr,
          notice: (t) => process.stderr.write(t),
        }, { callTimeoutMs: hooks.callTimeoutMs(options) })));
    });
  const attach = new Command('attach')
    .description("Attach to a container's main process, like kubectl attach")
    .argument('<pod>', 'pod name (NAME or NAMESPACE/NAME)')
    .option('-c, --container <name>', 'container name (default: the first)')
    .option('-n, --namespace <namespace>', 'namespace of the pod', 'default')
    .option('-i, --stdin', 'pass stdin to the container')
    .option('-t, --tty', 'stdin is a TTY')
    .action(async (pod: string, _o: unknown, command: Command) => {
      const options = hooks.options(command);
      const { attachToPod } = await streaming();
      await withClient(hooks, options, (cri) => withTerminal(options.tty === true, () =>
        attachToPod(cri, podRef(pod, options), { stdin: options.stdin === true, tty: options.tty === true }, {
          ...(options.stdin === true ? { stdin: process.stdin } : {}),
          stdout: process.stdout,
          stderr: process.stderr,
          notice: (t) => process.stderr.write(t),
        }, { callTimeoutMs: hooks.callTimeoutMs(options) })));
    });
  const portForward = new Command('port-forward')
    .description('Forward local ports on 127.0.0.1 to a pod, like kubectl port-forward (until SIGINT/SIGTERM)')
    .argument('<pod>', 'pod name (NAME or NAMESPACE/NAME)')
    .argument('<ports...>', '[LOCAL:]REMOTE port pairs')
    .option('-n, --namespace <namespace>', 'namespace of the pod', 'default')
    .action(async (pod: string, ports: string[], _o: unknown, command: Command) => {
      const options = hooks.options(command);
      const { parsePortMapping, portForwardPod } = await streaming();
      await withClient(hooks, options, async (cri) => {
        const session = await portForwardPod(cri, podRef(pod, options), ports.map(parsePortMapping), { stdout: process.stdout, stderr: process.stderr }, { callTimeoutMs: hooks.callTimeoutMs(options) });
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await session.close();
        return 0;
      });
    });
  return [exec, attach, portForward];
}
