import { rm } from 'node:fs/promises';
import type { RemovePodSandboxRequest__Output } from '../generated/runtime/v1/RemovePodSandboxRequest.js';
import type { RemovePodSandboxResponse } from '../generated/runtime/v1/RemovePodSandboxResponse.js';
import type { StopPodSandboxRequest__Output } from '../generated/runtime/v1/StopPodSandboxRequest.js';
import type { StopPodSandboxResponse } from '../generated/runtime/v1/StopPodSandboxResponse.js';
import { removeContainerRecord } from './container-remove.js';
import { forceStop } from './container-stop.js';
import { RuntimeError } from './errors.js';
import { ContainerEventType, publishEvent } from './events.js';
import type { RuntimeContext } from './runtime-context.js';
import { runtimeLogDirectory } from './sandbox-run.js';
import { SandboxState, type SandboxRecord } from './store/sandbox-store.js';

function findSandbox(ctx: RuntimeContext, id: string): SandboxRecord | undefined {
  if (id === '') throw new RuntimeError('InvalidArgument', 'pod_sandbox_id must not be empty');
  return ctx.sandboxes.find(id);
}

/**
 * StopPodSandbox: forcibly stops every container of the sandbox (containerd uses timeout 0) and
 * marks it NOTREADY. Idempotent: an unknown or already stopped sandbox succeeds.
 */
export async function stopPodSandbox(ctx: RuntimeContext, req: StopPodSandboxRequest__Output): Promise<StopPodSandboxResponse> {
  const sandbox = findSandbox(ctx, req.pod_sandbox_id);
  if (sandbox === undefined) return {};
  await stopSandbox(ctx, sandbox);
  return {};
}

export async function stopSandbox(ctx: RuntimeContext, sandbox: SandboxRecord): Promise<void> {
  await Promise.all(ctx.containers.inGroup(sandbox.id).map((c) => forceStop(ctx, c)));
  if (sandbox.status.state === SandboxState.READY && ctx.sandboxes.get(sandbox.id) !== undefined) {
    ctx.sandboxes.updateStatus(sandbox.id, (s) => ({ ...s, state: SandboxState.NOTREADY, stoppedAtNanos: ctx.clock.nowNanos() }));
    sandbox.processes.remove(1);
    // The network is torn down at stop (containerd's teardownPodNetwork): the IP is free again,
    // and port-forward connections into the pod end.
    ctx.network.forwards.closeAll(sandbox.id);
    ctx.network.hostPorts.release(sandbox.id);
    ctx.network.podIps.release(sandbox.ip);
    ctx.logger.info({ podSandboxId: sandbox.id }, 'pod sandbox stopped');
    publishEvent(ctx, sandbox.id, sandbox.id, ContainerEventType.STOPPED);
  }
}

/**
 * RemovePodSandbox: stops the sandbox if needed, removes its containers, and forgets it.
 * Idempotent: an unknown sandbox succeeds.
 */
export async function removePodSandbox(ctx: RuntimeContext, req: RemovePodSandboxRequest__Output): Promise<RemovePodSandboxResponse> {
  const sandbox = findSandbox(ctx, req.pod_sandbox_id);
  if (sandbox === undefined) return {};
  await stopSandbox(ctx, sandbox);
  for (const container of ctx.containers.inGroup(sandbox.id)) await removeContainerRecord(ctx, container);
  if (ctx.sandboxes.delete(sandbox.id) === undefined) return {};
  ctx.sandboxes.names.release(sandbox.name, sandbox.id);
  if (sandbox.config.log_directory === '') {
    await rm(runtimeLogDirectory(ctx, sandbox.id), { recursive: true, force: true });
  }
  ctx.logger.info({ podSandboxId: sandbox.id }, 'pod sandbox removed');
  publishEvent(ctx, sandbox.id, sandbox.id, ContainerEventType.DELETED);
  return {};
}
