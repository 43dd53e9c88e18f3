/**
 * What the load generator sends: CRI configs shaped like the kubelet's for a Windows pod, with or
 * without a gMSA credential spec and RunAsUserName, and the full pod lifecycle over them.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { unaryCall, type CriClient } from '../src/cri/proto.js';
import type { PodSandboxConfig } from '../src/generated/runtime/v1/PodSandboxConfig.js';
import type { ContainerConfig } from '../src/generated/runtime/v1/ContainerConfig.js';
import type { LatencyRecorder } from './stats.js';

/** The eight RPCs of one pod's life, in order; every figure of the lifecycle scenarios is keyed by these. */
export const LIFECYCLE_RPCS = [
  'RunPodSandbox',
  'CreateContainer',
  'StartContainer',
  'ExecSync',
  'StopContainer',
  'RemoveContainer',
  'StopPodSandbox',
  'RemovePodSandbox',
] as const;

export const BENCH_IMAGE = 'mcr.microsoft.com/windows/servercore:ltsc2022';
/** A long-running process of the command emulator (IIS's entry point in Windows images). */
export const LONG_RUNNING_COMMAND = ['C:\\ServiceMonitor.exe', 'w3svc'];
export const BENCH_NAMESPACE = 'bench';
export const RUN_AS_USERNAME = 'ContainerUser';
/** The one container of every bench pod. */
const CONTAINER_NAME = 'app';

/**
 * The GMSA KEP's example credential spec for the gMSA WebApplication1 of contoso.com, which the
 * embedded default node may use: the values are the domain facts of DESIGN.md. Compact JSON with
 * sorted keys, as the admission webhook inlines it.
 */
export const BENCH_CREDENTIAL_SPEC = JSON.stringify({
  ActiveDirectoryConfig: {
    GroupManagedServiceAccounts: [
      { Name: 'WebApplication1', Scope: 'contoso.com' },
      { Name: 'WebApplication1', Scope: 'DEMO' },
    ],
  },
  CmsPlugins: ['ActiveDirectory'],
  DomainJoinConfig: {
    DnsName: 'contoso.com',
    DnsTreeName: 'contoso.com',
    Guid: '244818ae-87ca-4fcd-92ec-e79e5252348a',
    MachineAccountName: 'WebApplication1',
    NetBiosName: 'DEMO',
    Sid: 'S-1-5-21-2126729477-2524075714-3094792973',
  },
});

export interface PodShape {
  /** Unique per pod within one runtime's life. */
  name: string;
  gmsa: boolean;
  /** Root of the pod log directories; undefined sends no log directory (bulk list setup). */
  logRoot?: string;
}

export function sandboxConfig(pod: PodShape): PodSandboxConfig {
  const uid = `${pod.name}-uid`;
  const config: PodSandboxConfig = {
    metadata: { name: pod.name, uid, namespace: BENCH_NAMESPACE, attempt: 0 },
    hostname: pod.name,
    log_directory: pod.logRoot === undefined ? '' : join(pod.logRoot, `${BENCH_NAMESPACE}_${pod.name}_${uid}`),
    labels: {
      'io.kubernetes.pod.name': pod.name,
      'io.kubernetes.pod.namespace': BENCH_NAMESPACE,
      'io.kubernetes.pod.uid': uid,
    },
    annotations: { 'kubernetes.io/config.source': 'bench' },
  };
  if (pod.gmsa) {
    config.windows = { security_context: { run_as_username: RUN_AS_USERNAME, credential_spec: BENCH_CREDENTIAL_SPEC } };
  }
  return config;
}

export function containerConfig(pod: PodShape, image: string): ContainerConfig {
  const config: ContainerConfig = {
    metadata: { name: CONTAINER_NAME, attempt: 0 },
    image: { image },
    command: LONG_RUNNING_COMMAND,
    labels: {
      'io.kubernetes.container.name': CONTAINER_NAME,
      'io.kubernetes.pod.name': pod.name,
      'io.kubernetes.pod.namespace': BENCH_NAMESPACE,
      'io.kubernetes.pod.uid': `${pod.name}-uid`,
    },
    annotations: { 'io.kubernetes.container.restartCount': '0' },
    log_path: pod.logRoot === undefined ? '' : join(CONTAINER_NAME, '0.log'),
  };
  if (pod.gmsa) {
    config.windows = { security_context: { run_as_username: RUN_AS_USERNAME, credential_spec: BENCH_CREDENTIAL_SPEC } };
  }
  return config;
}

export interface CallSettings {
  /** Per-call deadline in ms. */
  timeoutMs: number;
}

/** Pulls the bench image once; returns the reference to create containers from. */
export async function pullBenchImage(cri: CriClient, settings: CallSettings): Promise<string> {
  const pulled = await unaryCall(cri.image, 'PullImage', { image: { image: BENCH_IMAGE } }, settings);
  if (!pulled.image_ref) throw new Error(`PullImage ${BENCH_IMAGE} returned no image_ref`);
  return BENCH_IMAGE;
}

function describe(step: string, err: unknown): Error {
  const e = err as { code?: number; details?: string; message?: string };
  const text = e.details ?? e.message ?? String(err);
  return new Error(`${step}: ${e.code !== undefined ? `code ${e.code}: ` : ''}${text}`);
}

/**
 * One pod's full life through the eight RPCs, each timed under its name. On a failure the pod is
 * torn down untimed (best effort) so a failed iteration leaves nothing behind, and the error
 * names the step.
 */
export async function podLifecycle(
  cri: CriClient,
  recorder: LatencyRecorder,
  pod: PodShape,
  image: string,
  settings: CallSettings,
): Promise<void> {
  const sandbox = sandboxConfig(pod);
  let sandboxId: string | undefined;
  let containerId: string | undefined;
  let step = 'RunPodSandbox';
  try {
    // Untimed, as the kubelet does it: it creates the pod's log directory before RunPodSandbox
    // and the container's (`<pod dir>/<container name>`) before CreateContainer (kuberuntime's
    // generateContainerConfig); the runtime only creates the log file at StartContainer.
    if (sandbox.log_directory) await mkdir(sandbox.log_directory, { recursive: true, mode: 0o755 });
    sandboxId = (await recorder.time(step, () => unaryCall(cri.runtime, 'RunPodSandbox', { config: sandbox }, settings))).pod_sandbox_id;
    step = 'CreateContainer';
    if (sandbox.log_directory) await mkdir(join(sandbox.log_directory, CONTAINER_NAME), { mode: 0o755 });
    const created = await recorder.time(step, () =>
      unaryCall(cri.runtime, 'CreateContainer', { pod_sandbox_id: sandboxId, config: containerConfig(pod, image), sandbox_config: sandbox }, settings),
    );
    containerId = created.container_id;
    step = 'StartContainer';
    await recorder.time(step, () => unaryCall(cri.runtime, 'StartContainer', { container_id: containerId }, settings));
    step = 'ExecSync';
    const exec = await recorder.time(step, () =>
      unaryCall(cri.runtime, 'ExecSync', { container_id: containerId, cmd: ['whoami'], timeout: 5 }, settings),
    );
    if (exec.exit_code !== 0) {
      throw new Error(`whoami exited ${exec.exit_code}: ${Buffer.from(exec.stderr).toString('utf8').trim()}`);
    }
    step = 'StopContainer';
    await recorder.time(step, () => unaryCall(cri.runtime, 'StopContainer', { container_id: containerId, timeout: 0 }, settings));
    step = 'RemoveContainer';
    await recorder.time(step, () => unaryCall(cri.runtime, 'RemoveContainer', { container_id: containerId }, settings));
    containerId = undefined;
    step = 'StopPodSandbox';
    await recorder.time(step, () => unaryCall(cri.runtime, 'StopPodSandbox', { pod_sandbox_id: sandboxId }, settings));
    step = 'RemovePodSandbox';
    await recorder.time(step, () => unaryCall(cri.runtime, 'RemovePodSandbox', { pod_sandbox_id: sandboxId }, settings));
    sandboxId = undefined;
  } catch (err) {
    await tearDown(cri, sandboxId, containerId, settings);
    throw describe(step, err);
  }
}

async function tearDown(cri: CriClient, sandboxId: string | undefined, containerId: string | undefined, settings: CallSettings): Promise<void> {
  const quietly = async (fn: () => Promise<unknown>): Promise<void> => {
    try {
      await fn();
    } catch {
      // Best effort: the error that matters is the one being reported.
    }
  };
  if (containerId) {
    await quietly(() => unaryCall(cri.runtime, 'StopContainer', { container_id: containerId, timeout: 0 }, settings));
    await quietly(() => unaryCall(cri.runtime, 'RemoveContainer', { container_id: containerId }, settings));
  }
  if (sandboxId) {
    await quietly(() => unaryCall(cri.runtime, 'StopPodSandbox', { pod_sandbox_id: sandboxId }, settings));
    await quietly(() => unaryCall(cri.runtime, 'RemovePodSandbox', { pod_sandbox_id: sandboxId }, settings));
  }
}

export interface LiveSandbox {
  id: string;
  pod: PodShape;
}

/** Runs `count` items of `step` with `concurrency` workers; stops at the first failure or when the budget is spent. */
async function bounded<T>(
  count: number,
  concurrency: number,
  deadlineMs: number,
  step: (index: number) => Promise<T>,
): Promise<{ done: T[]; error?: string }> {
  let next = 0;
  const done: T[] = [];
  let error: string | undefined;
  const deadline = performance.now() + deadlineMs;
  const worker = async (): Promise<void> => {
    while (next < count && error === undefined) {
      if (performance.now() > deadline) {
        error = `setup exceeded its budget of ${deadlineMs} ms`;
        return;
      }
      const index = next++;
      try {
        done.push(await step(index));
      } catch (err) {
        error ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, () => worker()));
  return error === undefined ? { done } : { done, error };
}

export type SetupSettings = CallSettings & { concurrency: number; deadlineMs: number };

/** Runs `count` ready sandboxes without Windows options (the list scenarios' live objects). Untimed. */
export async function addLiveSandboxes(
  cri: CriClient,
  firstIndex: number,
  count: number,
  settings: SetupSettings,
): Promise<{ done: LiveSandbox[]; error?: string }> {
  return bounded(count, settings.concurrency, settings.deadlineMs, async (i) => {
    const pod: PodShape = { name: `live-${firstIndex + i}`, gmsa: false };
    try {
      const { pod_sandbox_id } = await unaryCall(cri.runtime, 'RunPodSandbox', { config: sandboxConfig(pod) }, settings);
      return { id: pod_sandbox_id, pod };
    } catch (err) {
      throw describe('RunPodSandbox', err);
    }
  });
}

/**
 * Creates one long-running container in each sandbox and starts it (or, with `start: false`,
 * leaves it CREATED: still a live object for the lists, without a process). Untimed.
 */
export async function addLiveContainers(
  cri: CriClient,
  sandboxes: LiveSandbox[],
  image: string,
  settings: SetupSettings & { start?: boolean },
): Promise<{ done: string[]; error?: string }> {
  const start = settings.start ?? true;
  return bounded(sandboxes.length, settings.concurrency, settings.deadlineMs, async (i) => {
    const { id, pod } = sandboxes[i];
    let step = 'CreateContainer';
    try {
      const { container_id } = await unaryCall(
        cri.runtime,
        'CreateContainer',
        { pod_sandbox_id: id, config: containerConfig(pod, image), sandbox_config: sandboxConfig(pod) },
        settings,
      );
      if (start) {
        step = 'StartContainer';
        await unaryCall(cri.runtime, 'StartContainer', { container_id }, settings);
      }
      return container_id;
    } catch (err) {
      throw describe(step, err);
    }
  });
}
