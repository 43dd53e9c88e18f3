/**
 * The RuntimeService calls the kubelet makes, typed and promise-based over a `CriClient` (the
 * socket client or the in-process one alike), as cri-api's `internalapi.RuntimeService` is over
 * the kubelet's remote runtime (cri-api v0.34 pkg/apis/services.go, cri-client
 * pkg/remote_runtime.go). Each call has the deadline the calls were made with; a stop adds its
 * grace period to it, as remote_runtime.go StopContainer does. Failures are grpc-js ServiceErrors.
 */
import type { ContainerFilter } from '../generated/runtime/v1/ContainerFilter.js';
import type { Container__Output } from '../generated/runtime/v1/Container.js';
import type { ContainerStatus__Output } from '../generated/runtime/v1/ContainerStatus.js';
import type { PodSandboxFilter } from '../generated/runtime/v1/PodSandboxFilter.js';
import type { PodSandbox__Output } from '../generated/runtime/v1/PodSandbox.js';
import type { PodSandboxStatus__Output } from '../generated/runtime/v1/PodSandboxStatus.js';
import { unaryCall, type CriClient, type UnaryCallOptions } from './proto.js';

export interface RuntimeCalls {
  listPodSandbox(filter?: PodSandboxFilter): Promise<readonly PodSandbox__Output[]>;
  listContainers(filter?: ContainerFilter): Promise<readonly Container__Output[]>;
  /** undefined when the runtime has no such container (NOT_FOUND). */
  containerStatus(id: string): Promise<ContainerStatus__Output | undefined>;
  /** undefined when the runtime has no such sandbox (NOT_FOUND). */
  podSandboxStatus(id: string): Promise<PodSandboxStatus__Output | undefined>;
  /** StopContainer with `timeoutSeconds` of grace; the deadline is the calls' plus that grace. */
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  stopPodSandbox(id: string): Promise<void>;
  removeContainer(id: string): Promise<void>;
  removePodSandbox(id: string): Promise<void>;
}

/** NOT_FOUND: the object is gone (CRI's stops and removals are idempotent; a caller may skip it). */
export function isNotFound(err: unknown): boolean {
  return (err as { code?: number } | undefined)?.code === 5;
}

/** Rethrows anything but NOT_FOUND: for `.catch()` after a call on an object that may be gone already. */
export function ignoreNotFound(err: unknown): void {
  if (!isNotFound(err)) throw err;
}

/** The RuntimeService calls over `cri`, each with a deadline of `timeoutMs`. */
export function runtimeCalls(cri: CriClient, timeoutMs: number): RuntimeCalls {
  return new ClientRuntimeCalls(cri, timeoutMs);
}

class ClientRuntimeCalls implements RuntimeCalls {
  private readonly call: UnaryCallOptions;

  constructor(
    private readonly cri: CriClient,
    private readonly timeoutMs: number,
  ) {
    this.call = { timeoutMs };
  }

  async listPodSandbox(filter?: PodSandboxFilter): Promise<readonly PodSandbox__Output[]> {
    return (await unaryCall(this.cri.runtime, 'ListPodSandbox', filter === undefined ? {} : { filter }, this.call)).items;
  }

  async listContainers(filter?: ContainerFilter): Promise<readonly Container__Output[]> {
    return (await unaryCall(this.cri.runtime, 'ListContainers', filter === undefined ? {} : { filter }, this.call)).containers;
  }

  async containerStatus(id: string): Promise<ContainerStatus__Output | undefined> {
    return (await unaryCall(this.cri.runtime, 'ContainerStatus', { container_id: id, verbose: false }, this.call).catch(notFoundAsUndefined))?.status ?? undefined;
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatus__Output | undefined> {
    return (await unaryCall(this.cri.runtime, 'PodSandboxStatus', { pod_sandbox_id: id, verbose: false }, this.call).catch(notFoundAsUndefined))?.status ?? undefined;
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    await unaryCall(this.cri.runtime, 'StopContainer', { container_id: id, timeout: String(timeoutSeconds) }, { timeoutMs: this.timeoutMs + timeoutSeconds * 1000 });
  }

  async stopPodSandbox(id: string): Promise<void> {
    await unaryCall(this.cri.runtime, 'StopPodSandbox', { pod_sandbox_id: id }, this.call);
  }

  async removeContainer(id: string): Promise<void> {
    await unaryCall(this.cri.runtime, 'RemoveContainer', { container_id: id }, this.call);
  }

  async removePodSandbox(id: string): Promise<void> {
    await unaryCall(this.cri.runtime, 'RemovePodSandbox', { pod_sandbox_id: id }, this.call);
  }
}

function notFoundAsUndefined(err: unknown): undefined {
  ignoreNotFound(err);
  return undefined;
}
