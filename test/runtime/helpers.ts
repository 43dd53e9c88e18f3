import { dir, type DirectoryResult } from 'tmp-promise';
import { testPodCidr } from '../support/pod-cidr.js';
import type { LinuxContainerSecurityContext__Output } from '../../src/generated/runtime/v1/LinuxContainerSecurityContext.js';
import type { ContainerConfig__Output } from '../../src/generated/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig__Output } from '../../src/generated/runtime/v1/PodSandboxConfig.js';
import { NodeRuntime, type NodeRuntimeOptions } from '../../src/runtime/node-runtime.js';
import { RuntimeError } from '../../src/runtime/errors.js';

/**
 * Request builders for runtime tests: what a server receives after proto-loader decoding with
 * `defaults: true` — every field present, messages null, lists empty.
 */

let counter = 0;

export function sandboxConfig(overrides: Partial<PodSandboxConfig__Output> = {}): PodSandboxConfig__Output {
  counter++;
  return {
    metadata: { name: `pod-${counter}`, namespace: 'default', uid: `uid-${counter}`, attempt: 0 },
    hostname: '',
    log_directory: '',
    dns_config: null,
    port_mappings: [],
    labels: {},
    annotations: {},
    linux: null,
    windows: null,
    ...overrides,
  };
}

export function containerConfig(image: string, overrides: Partial<ContainerConfig__Output> = {}): ContainerConfig__Output {
  counter++;
  return {
    metadata: { name: `ctr-${counter}`, attempt: 0 },
    image: { image, annotations: {}, user_specified_image: image, runtime_handler: '', image_ref: '' },
    command: [],
    args: [],
    working_dir: '',
    envs: [],
    mounts: [],
    devices: [],
    labels: {},
    annotations: {},
    log_path: '',
    stdin: false,
    stdin_once: false,
    tty: false,
    linux: null,
    windows: null,
    CDI_devices: [],
    stop_signal: 0,
    ...overrides,
  };
}

export const imageSpec = (image: string) => ({ image, annotations: {}, user_specified_image: '', runtime_handler: '', image_ref: '' });

export const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

export interface RuntimeFixture {
  runtime: NodeRuntime;
  stateDir: DirectoryResult;
  close(): Promise<void>;
}

/** A runtime on a temporary state directory; close() closes it and removes the directory. */
export async function openRuntime(options: Partial<NodeRuntimeOptions> = {}): Promise<RuntimeFixture> {
  const stateDir = await dir({ unsafeCleanup: true });
  const runtime = await NodeRuntime.open({ stateDir: stateDir.path, pullDelayMs: 0, podCidr: testPodCidr(), ...options });
  return {
    runtime,
    stateDir,
    close: async () => {
      await runtime.close();
      await stateDir.cleanup();
    },
  };
}

export async function pull(runtime: NodeRuntime, image: string): Promise<string> {
  const res = await runtime.pullImage({ image: imageSpec(image), auth: null, sandbox_config: null });
  return res.image_ref ?? '';
}

export async function runSandbox(runtime: NodeRuntime, overrides: Partial<PodSandboxConfig__Output> = {}): Promise<{ id: string; config: PodSandboxConfig__Output }> {
  const config = sandboxConfig(overrides);
  const res = await runtime.runPodSandbox({ config, runtime_handler: '' });
  return { id: res.pod_sandbox_id ?? '', config };
}

export async function createContainer(
  runtime: NodeRuntime,
  sandbox: { id: string; config: PodSandboxConfig__Output },
  overrides: Partial<ContainerConfig__Output> = {},
  image = BUSYBOX,
): Promise<string> {
  const res = await runtime.createContainer({ pod_sandbox_id: sandbox.id, config: containerConfig(image, overrides), sandbox_config: sandbox.config });
  return res.container_id ?? '';
}

/** Resolves with the RuntimeError a promise rejects with; fails if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<RuntimeError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof RuntimeError) return err;
    throw err;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** Waits for a condition signalled by the runtime's container events (no polling). */
export function waitForEvent(runtime: NodeRuntime, match: (ev: { container_id?: string; container_event_type?: unknown }) => boolean, timeoutMs = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error('timed out waiting for a container event'));
    }, timeoutMs);
    const unsubscribe = runtime.subscribeContainerEvents((ev) => {
      if (!match(ev)) return;
      clearTimeout(timer);
      unsubscribe();
      resolve();
    });
  });
}

export const STOPPED_EVENT = 2;

export function securityContext(overrides: Partial<LinuxContainerSecurityContext__Output>): LinuxContainerSecurityContext__Output {
  return {
    capabilities: null,
    privileged: false,
    namespace_options: null,
    selinux_options: null,
    run_as_user: null,
    run_as_username: '',
    readonly_rootfs: false,
    supplemental_groups: [],
    apparmor_profile: '',
    seccomp_profile_path: '',
    no_new_privs: false,
    run_as_group: null,
    masked_paths: [],
    readonly_paths: [],
    seccomp: null,
    apparmor: null,
    supplemental_groups_policy: 0,
    ...overrides,
  };
}

/** namespace_options with pid CONTAINER: the container gets its own PID namespace (its command is PID 1). */
export const OWN_PID_NAMESPACE = { network: 0, pid: 1, ipc: 0, target_id: '', userns_options: null } as const;
