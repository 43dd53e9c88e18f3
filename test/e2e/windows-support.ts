// Shared by the Windows end-to-end suites (test/e2e/windows-*.test.ts): CRI configs of Windows
// pods and containers, a CRI client on a runtime's socket, an in-process runtime behind a real
// socket (for the test-only fault seam), and the check that no credential spec is left behind.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceError } from '@grpc/grpc-js';
import { stringify as toYaml } from 'yaml';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { CriServer } from '../../src/cri/server.js';
import { NodeRuntime } from '../../src/runtime/node-runtime.js';
import { STATE_LOCK_FILE } from '../../src/runtime/state-dir-lock.js';
import { CREDENTIAL_SPEC_DIRECTORY, CREDENTIAL_SPEC_REGISTRY_KEY } from '../../src/runtime/windows/credential-spec-handoff.js';
import { DEFAULT_NODE_FILE } from '../../src/runtime/windows/default-node.js';
import type { NodeFile } from '../../src/runtime/windows/node-directory.js';
import { SimulatedRegistry } from '../../src/runtime/windows/simulated-registry.js';
import type { WindowsRuntimeOptions } from '../../src/runtime/windows/windows-runtime.js';
import { testPodCidr } from '../support/pod-cidr.js';

export { KEP_EXAMPLE_CREDENTIAL_SPEC, kepExampleWith } from '../runtime/windows/kep-example.js';

export const IIS = 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022';
export const NANOSERVER = 'mcr.microsoft.com/windows/nanoserver:ltsc2022';

/** runtime.v1.ContainerState */
export const CONTAINER_CREATED = 0;
export const CONTAINER_RUNNING = 1;
export const CONTAINER_EXITED = 2;

export interface WindowsSecurity {
  run_as_username?: string;
  credential_spec?: string;
  host_process?: boolean;
}

/** A Windows pod sandbox config (snake_case, as crictl and the CRI take it). */
export function windowsPodConfig(name: string, logDirectory: string, security: WindowsSecurity = {}): Record<string, unknown> {
  return {
    metadata: { name, namespace: 'e2e-windows', uid: `uid-${name}`, attempt: 0 },
    hostname: name,
    log_directory: logDirectory,
    labels: { suite: 'windows-e2e' },
    windows: { security_context: { ...security } },
  };
}

/** A Windows container config; `command` defaults to the image's (IIS: ServiceMonitor.exe w3svc). */
export function windowsContainerConfig(name: string, image: string, security: WindowsSecurity = {}, command?: string[]): Record<string, unknown> {
  return {
    metadata: { name },
    image: { image },
    ...(command === undefined ? {} : { command }),
    log_path: `${name}.log`,
    labels: { suite: 'windows-e2e' },
    windows: { security_context: { ...security } },
  };
}

/** What the runtime's hand-off left: staged files and simulated registry values. */
export interface CredentialSpecLeftovers {
  files: string[];
  registryValues: string[];
}

/** Reads `<stateDir>/CredentialSpecs` and the simulated registry as the runtime left them. */
export async function credentialSpecLeftovers(stateDir: string): Promise<CredentialSpecLeftovers> {
  let files: string[] = [];
  try {
    files = (await readdir(join(stateDir, CREDENTIAL_SPEC_DIRECTORY))).filter((n) => n.startsWith('k8s-cred-spec-'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const registry = await SimulatedRegistry.open(stateDir);
  return { files, registryValues: registry.valueNames(CREDENTIAL_SPEC_REGISTRY_KEY) };
}

export const NO_LEFTOVERS: CredentialSpecLeftovers = { files: [], registryValues: [] };

/** A node file (YAML) in `dir`: the embedded default node with one change. */
export async function writeNodeFile(dir: string, name: string, change: (node: NodeFile) => void): Promise<string> {
  const node = structuredClone(DEFAULT_NODE_FILE);
  change(node);
  const path = join(dir, name);
  await writeFile(path, toYaml(node));
  return path;
}

/** A rejected call's gRPC error (fails when the call succeeded). */
export async function rejection(call: Promise<unknown>): Promise<ServiceError> {
  try {
    await call;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('the call succeeded; an error was expected');
}

/** Runs a pod, pulls the image and creates a container; returns both ids. */
export async function createWindowsContainer(
  cri: CriClient,
  pod: Record<string, unknown>,
  container: Record<string, unknown>,
): Promise<{ podId: string; containerId: string }> {
  const image = (container.image as { image: string }).image;
  await unaryCall(cri.image, 'PullImage', { image: { image } }, { timeoutMs: 10_000 });
  const { pod_sandbox_id: podId } = await unaryCall(cri.runtime, 'RunPodSandbox', { config: pod }, { timeoutMs: 10_000 });
  const { container_id: containerId } = await unaryCall(
    cri.runtime,
    'CreateContainer',
    { pod_sandbox_id: podId, config: container, sandbox_config: pod },
    { timeoutMs: 10_000 },
  );
  return { podId, containerId };
}

/** ExecSync through the client: stdout/stderr as text (CRLF kept) and the exit code. */
export async function execSync(cri: CriClient, containerId: string, cmd: string[]): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const res = await unaryCall(cri.runtime, 'ExecSync', { container_id: containerId, cmd, timeout: '10' }, { timeoutMs: 15_000 });
  return { stdout: Buffer.from(res.stdout).toString('utf8'), stderr: Buffer.from(res.stderr).toString('utf8'), exitCode: res.exit_code };
}

/** Removes every pod (and with it every container) the runtime has. */
export async function removeAllPods(cri: CriClient): Promise<void> {
  const { items } = await unaryCall(cri.runtime, 'ListPodSandbox', {}, { timeoutMs: 10_000 });
  for (const pod of items) {
    await unaryCall(cri.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 10_000 });
    await unaryCall(cri.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 10_000 });
  }
}

/** A NodeRuntime in this process behind a real CRI socket, with the options the CLI cannot set (faults). */
export interface InProcessRuntime {
  readonly dir: string;
  readonly stateDir: string;
  readonly endpoint: string;
  readonly runtime: NodeRuntime;
  readonly cri: CriClient;
  /** Closes client, server and runtime (not the directory, so a restart can reuse the state dir). */
  close(): Promise<void>;
  /** Drops client and server without closing the runtime: what a crash leaves on disk stays. */
  crash(): Promise<void>;
}

export async function startInProcessRuntime(windows: WindowsRuntimeOptions, dir?: string): Promise<InProcessRuntime> {
  const root = dir ?? (await mkdtemp(join(tmpdir(), 'cri-winsim-win-')));
  const stateDir = join(root, 'state');
  let runtime: NodeRuntime;
  try {
    // A loopback pod range of its own: serving containers bind port 80 on their pod IP.
    runtime = await NodeRuntime.open({ stateDir, pullDelayMs: 0, windows, podCidr: testPodCidr() });
  } catch (err) {
    if (dir === undefined) await rm(root, { recursive: true, force: true });
    throw err;
  }
  const server = new CriServer({ runtime, shutdownTimeoutMs: 1000 });
  let endpoint: string;
  try {
    endpoint = await server.listen(`unix://${join(root, 'cri.sock')}`);
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const cri = createCriClient(endpoint);
  let closed = false;
  return {
    dir: root,
    stateDir,
    endpoint,
    runtime,
    cri,
    async close() {
      if (closed) return;
      closed = true;
      cri.close();
      await server.close();
      await runtime.close();
    },
    async crash() {
      if (closed) return;
      closed = true;
      cri.close();
      await server.close();
      // A crashed process loses its listening sockets with it: the streaming server goes too.
      await runtime.context.streaming.close();
      // ... and its state directory lock is stale (its pid is gone). This process lives on, so the
      // lock file, which names this pid, goes instead: the next open finds no live holder.
      await rm(join(stateDir, STATE_LOCK_FILE), { force: true });
    },
  };
}
