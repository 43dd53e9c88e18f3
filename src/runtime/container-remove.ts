import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { RemoveContainerRequest__Output } from '../generated/runtime/v1/RemoveContainerRequest.js';
import type { RemoveContainerResponse } from '../generated/runtime/v1/RemoveContainerResponse.js';
import { forceStop } from './container-stop.js';
import { RuntimeError, withContext } from './errors.js';
import { ContainerEventType, publishEvent } from './events.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord } from './store/container-store.js';

/**
 * RemoveContainer: a running container is killed first; then the record, its reserved name and
 * any runtime-owned log are removed. Idempotent: an unknown container succeeds. Log files under
 * the sandbox's log_directory belong to the kubelet and stay.
 */
export async function removeContainer(ctx: RuntimeContext, req: RemoveContainerRequest__Output): Promise<RemoveContainerResponse> {
  if (req.container_id === '') throw new RuntimeError('InvalidArgument', 'container_id must not be empty');
  const container = ctx.containers.find(req.container_id);
  if (container === undefined) return {};
  if (container.status.starting) throw new RuntimeError('FailedPrecondition', `container ${container.id} is starting: it cannot be removed now`);
  await removeContainerRecord(ctx, container);
  return {};
}

export async function removeContainerRecord(ctx: RuntimeContext, container: ContainerRecord): Promise<void> {
  if (ctx.containers.get(container.id) === undefined) return;
  if (!container.status.removing) ctx.containers.updateStatus(container.id, (s) => ({ ...s, removing: true }));
  await forceStop(ctx, container);
  if (container.securityOptions.length > 0) {
    // cri-dockerd: a credential spec that cannot be removed fails the removal, so the kubelet retries.
    await ctx.windows.handoff.releaseOnRemove(container.securityOptions).catch((err: unknown) => {
      throw withContext(err, `failed to remove the credential spec of container ${container.id}`);
    });
  }
  if (ctx.containers.delete(container.id) === undefined) return;
  ctx.windows.identities.delete(container);
  ctx.containers.names.release(container.name, container.id);
  if (container.runtimeOwnedLog) await rm(dirname(container.logPath), { recursive: true, force: true });
  ctx.logger.info({ containerId: container.id }, 'container removed');
  publishEvent(ctx, container.id, container.sandboxId, ContainerEventType.DELETED);
}
