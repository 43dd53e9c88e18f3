/**
 * Drives one admitted pod through a CRI runtime once, as the kubelet's SyncPod does on a pod's
 * first sync (pkg/kubelet/kuberuntime SyncPod): RunPodSandbox, then each init container in order
 * (each must exit 0 before the next), then every regular container: image per imagePullPolicy,
 * CreateContainer, StartContainer. Every failure is reported with the kubelet's reason and message
 * (ErrImagePull, CreateContainerConfigError, CreateContainerError, RunContainerError, …) and the
 * events a user would see. Restarts are the sync engine's (sync/pod-sync.ts); this is its first pass.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { unaryCall, type CriClient } from '../cri/proto.js';
import type { PodSandboxConfig } from '../generated/runtime/v1/PodSandboxConfig.js';
import { createHash } from 'node:crypto';
import { buildContainerConfig, buildPodSandboxConfig } from './cri-config.js';
import { containerIdentityRecord, type ContainerIdentityRecord, type ContainerWindowsSecurityContext } from './security-context.js';
import { podKeyring, pullWithCredentials, PullErrors } from './image-pull.js';
import type { DockerKeyring } from './image-pull-credentials.js';
import { lookupRuntimeHandler } from './runtime-class.js';
import { setTimeout as delay } from 'node:timers/promises';
import { grpcErrorString, grpcMessage } from './cri-errors.js';
import { ImagePulls, type ContainerKind, type ContainerOutcome, type PodEvent, type PodOutcome, type PodWorkerOptions } from './pod-worker-options.js';
import { isSidecar } from './sync/pod-actions.js';

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** API defaulting of imagePullPolicy: Always for `:latest` or no tag, else IfNotPresent. */
export function effectivePullPolicy(container: V1Container): 'Always' | 'IfNotPresent' | 'Never' {
  const policy = container.imagePullPolicy;
  if (policy === 'Always' || policy === 'IfNotPresent' || policy === 'Never') return policy;
  const image = container.image ?? '';
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  const tag = colon === -1 ? '' : image.slice(colon + 1);
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

const ContainerStateExited = 2;

class ContainerStartFailure extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** One pass of SyncPod for a pod that has no sandbox yet. */
export async function runPodOnce(cri: CriClient, pod: V1Pod, options: PodWorkerOptions): Promise<PodOutcome> {
  const events: PodEvent[] = [];
  const outcomes: ContainerOutcome[] = [];
  const call = { timeoutMs: options.callTimeoutMs ?? 30_000 };
  const initContainers = pod.spec?.initContainers ?? [];
  const containers = pod.spec?.containers ?? [];
  const waitingAll = (reason: string, from: { list: V1Container[]; kind: ContainerKind }[]): void => {
    for (const { list, kind } of from) for (const c of list) outcomes.push({ name: c.name, kind, state: 'waiting', reason });
  };

  let sandboxConfig: PodSandboxConfig;
  let sandboxId: string;
  try {
    sandboxConfig = buildPodSandboxConfig(pod, { podLogsRoot: options.podLogsRoot, attempt: 0 });
    // The kubelet creates the pod's log directory before asking for the sandbox.
    await mkdir(sandboxConfig.log_directory!, { recursive: true, mode: 0o755 });
    const runtimeHandler = options.runtimeClasses === undefined ? (options.runtimeHandler ?? '') : await lookupRuntimeHandler(pod, options.runtimeClasses);
    // Sent in turn: the runtime hands out pod IPs in the order sandboxes are asked for.
    await options.sandboxTurn?.take();
    // Twice the request timeout, as the kubelet's CRI client gives sandbox creation
    // (cri-client v0.34 pkg/remote_runtime.go RunPodSandbox: `r.timeout * 2`).
    const sent = unaryCall(cri.runtime, 'RunPodSandbox', { config: sandboxConfig, runtime_handler: runtimeHandler }, { timeoutMs: 2 * call.timeoutMs });
    options.sandboxTurn?.release();
    sandboxId = (await sent).pod_sandbox_id;
  } catch (err) {
    options.sandboxTurn?.release();
    const message = `Failed to create pod sandbox: ${grpcErrorString(err)}`;
    events.push({ type: 'Warning', reason: 'FailedCreatePodSandBox', message });
    waitingAll('ContainerCreating', [
      { list: initContainers, kind: initContainers.length > 0 ? 'init' : 'regular' },
      { list: containers, kind: 'regular' },
    ]);
    return { sandboxError: { reason: 'FailedCreatePodSandBox', message }, containers: outcomes, events };
  }

  const start = (container: V1Container, kind: ContainerKind): Promise<ContainerOutcome> =>
    startContainer(cri, pod, container, kind, { sandboxId, sandboxConfig, attempt: 0, options, events });

  for (const [i, container] of initContainers.entries()) {
    const started = await start(container, 'init');
    if (started.state !== 'started') {
      outcomes.push(started);
      waitingAll('PodInitializing', [{ list: initContainers.slice(i + 1), kind: 'init' }, { list: containers, kind: 'regular' }]);
      return { sandboxId, containers: outcomes, events };
    }
    // A sidecar keeps running beside the pod: once started, the next init container follows.
    if (isSidecar(container)) {
      outcomes.push(started);
      continue;
    }
    const finished = await waitForExit(cri, started, options, call);
    outcomes.push(finished);
    if (finished.state !== 'exited' || finished.exitCode !== 0) {
      waitingAll('PodInitializing', [{ list: initContainers.slice(i + 1), kind: 'init' }, { list: containers, kind: 'regular' }]);
      return { sandboxId, containers: outcomes, events };
    }
  }
  for (const container of containers) outcomes.push(await start(container, 'regular'));
  return { sandboxId, containers: outcomes, events };
}

export interface ContainerStartContext {
  readonly sandboxId: string;
  readonly sandboxConfig: PodSandboxConfig;
  /** The restart count: 0 on first start, previous attempt + 1 on a restart. */
  readonly attempt: number;
  readonly options: PodWorkerOptions;
  /** Where the events of this start are appended. */
  readonly events: PodEvent[];
}

/**
 * startContainer: image, config, CreateContainer, StartContainer, each failure mapped to the
 * kubelet's waiting reason. Never throws for a runtime refusal; only for a broken connection.
 */
export async function startContainer(cri: CriClient, pod: V1Pod, container: V1Container, kind: ContainerKind, ctx: ContainerStartContext): Promise<ContainerOutcome> {
  const { sandboxId, sandboxConfig, options } = ctx;
  const call = { timeoutMs: options.callTimeoutMs ?? 30_000 };
  const event = (type: PodEvent['type'], reason: string, message: string) => ctx.events.push({ type, reason, message, container: container.name });
  let identity: ContainerIdentityRecord | undefined;
  const withIdentity = (outcome: ContainerOutcome): ContainerOutcome => (identity === undefined ? outcome : { ...outcome, identity });
  try {
    const image = await ensureImage(cri, container, sandboxConfig, call, event, options.imagePulls, () => podKeyring(pod, options, ctx.events));
    // The kubelet creates the container's log directory; the runtime writes <attempt>.log in it.
    await mkdir(join(sandboxConfig.log_directory!, container.name), { recursive: true, mode: 0o755 });
    let config;
    try {
      config = buildContainerConfig(pod, container, {
        attempt: ctx.attempt,
        configMaps: options.configMaps ?? [],
        nodeName: options.nodeName ?? '',
        nodeCpuCount: options.nodeCpuCount ?? 2,
        imageUser: image.user,
        imageRef: image.ref,
      });
    } catch (err) {
      throw new ContainerStartFailure('CreateContainerConfigError', (err as Error).message);
    }
    identity = containerIdentityRecord(pod, container, config.windows!.security_context as ContainerWindowsSecurityContext, sha256);
    let containerId: string;
    try {
      containerId = (await unaryCall(cri.runtime, 'CreateContainer', { pod_sandbox_id: sandboxId, config, sandbox_config: sandboxConfig }, call)).container_id;
    } catch (err) {
      throw new ContainerStartFailure('CreateContainerError', grpcMessage(err));
    }
    event('Normal', 'Created', `Created container: ${container.name}`);
    try {
      await unaryCall(cri.runtime, 'StartContainer', { container_id: containerId }, call);
    } catch (err) {
      event('Warning', 'Failed', `Error: ${grpcMessage(err)}`);
      return withIdentity({ name: container.name, kind, state: 'waiting', containerId, reason: 'RunContainerError', message: grpcMessage(err) });
    }
    event('Normal', 'Started', `Started container ${container.name}`);
    return withIdentity({ name: container.name, kind, state: 'started', containerId });
  } catch (err) {
    if (!(err instanceof ContainerStartFailure)) throw err;
    event('Warning', 'Failed', `Error: ${err.reason === 'CreateContainerError' || err.reason === 'CreateContainerConfigError' ? err.message : err.reason}`);
    return withIdentity({ name: container.name, kind, state: 'waiting', reason: err.reason, message: err.message });
  }
}

/** EnsureImageExists: pull per policy; returns the image id and its configured user (for runAsNonRoot). */
async function ensureImage(
  cri: CriClient,
  container: V1Container,
  sandboxConfig: PodSandboxConfig,
  call: { timeoutMs: number },
  event: (type: PodEvent['type'], reason: string, message: string) => void,
  pulls: ImagePulls | undefined,
  keyring: () => Promise<DockerKeyring>,
): Promise<{ ref: string; user: string }> {
  const image = container.image ?? '';
  const policy = effectivePullPolicy(container);
  const status = async () => {
    try {
      return (await unaryCall(cri.image, 'ImageStatus', { image: { image } }, call)).image;
    } catch (err) {
      event('Warning', 'InspectFailed', `Failed to inspect image ${JSON.stringify(image)}: ${grpcErrorString(err)}`);
      throw new ContainerStartFailure('ImageInspectError', `Failed to inspect image ${JSON.stringify(image)}: ${grpcErrorString(err)}`);
    }
  };
  // Always pulls for every container. The other policies look after any pull of the same image
  // under way in this run has ended, and look again if one began while they looked.
  let present: Awaited<ReturnType<typeof status>> = null;
  if (policy !== 'Always') {
    await pulls?.pending(image);
    present = await status();
    const began = present === null || present === undefined ? pulls?.pending(image) : undefined;
    if (began !== undefined) {
      await began;
      present = await status();
    }
  }
  if (present !== null && present !== undefined) {
    event('Normal', 'Pulled', `Container image ${JSON.stringify(image)} already present on machine`);
    return { ref: present.id, user: imageUser(present) };
  }
  if (policy === 'Never') {
    const message = `Container image ${JSON.stringify(image)} is not present with pull policy of Never`;
    event('Warning', 'ErrImageNeverPull', message);
    throw new ContainerStartFailure('ErrImageNeverPull', message);
  }
  event('Normal', 'Pulling', `Pulling image ${JSON.stringify(image)}`);
  const began = Date.now();
  try {
    const pull = pullWithCredentials(cri, image, sandboxConfig, keyring);
    await (pulls !== undefined && policy !== 'Always' ? pulls.track(image, pull) : pull);
  } catch (err) {
    const message = `Failed to pull image ${JSON.stringify(image)}: ${err instanceof PullErrors ? err.message : grpcErrorString(err)}`;
    event('Warning', 'Failed', message);
    throw new ContainerStartFailure('ErrImagePull', message);
  }
  event('Normal', 'Pulled', `Successfully pulled image ${JSON.stringify(image)} in ${((Date.now() - began) / 1000).toFixed(3)}s`);
  present = await status();
  return { ref: present?.id ?? '', user: present === null || present === undefined ? '' : imageUser(present) };
}

/** getImageUser (kuberuntime helpers.go, kubernetes v1.34.12): an image with a uid has no user name. */
function imageUser(image: { uid?: unknown; username: string }): string {
  return image.uid !== null && image.uid !== undefined ? '' : image.username;
}

/** Polls ContainerStatus until the init container exits, within a bounded time. */
async function waitForExit(cri: CriClient, started: ContainerOutcome, options: PodWorkerOptions, call: { timeoutMs: number }): Promise<ContainerOutcome> {
  const deadline = Date.now() + (options.initContainerTimeoutMs ?? 60_000);
  const interval = options.pollIntervalMs ?? 100;
  while (Date.now() < deadline) {
    const status = (await unaryCall(cri.runtime, 'ContainerStatus', { container_id: started.containerId!, verbose: false }, call)).status;
    if (status !== null && status.state === ContainerStateExited) {
      const reason = status.reason !== '' ? status.reason : status.exit_code === 0 ? 'Completed' : 'Error';
      return { ...started, state: 'exited', exitCode: status.exit_code, reason, ...(status.message === '' ? {} : { message: status.message }) };
    }
    await delay(interval);
  }
  return { ...started, reason: 'InitContainerTimeout', message: `init container ${started.name} did not exit within ${options.initContainerTimeoutMs ?? 60_000} ms` };
}
