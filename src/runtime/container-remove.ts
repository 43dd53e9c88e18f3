import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { RemoveContainerRequest__Output } from '../generated/runtime/v1/RemoveContainerRequest.js';
import type { RemoveContainerResponse } from '../generated/runtime/v1/RemoveContainerResponse.js';
import { CleanupStack } from './cleanup.js';
import { forceStop } from './container-stop.js';
import { RuntimeError } from './errors.js';
import { ContainerEventType, publishEvent } from './events.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord } from './store/container-store.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

/**
 * RemoveContainer: a running container is killed first; then the record, its reserved name and
 * any runtime-owned log are removed. Idempotent: an unknown container succeeds. Log files under
 * the sandbox's log_directory belong to the kubelet and stay.
 */
export async function removeContainer(ctx: RuntimeContext, req: RemoveContainerRequest__Output): Promise<RemoveContainerResponse> {
  requireField(req.container_id, 'container_id');
  const container = ctx.containers.find(req.container_id);
  if (container === undefined) return {};
  if (container.status.starting) throw new RuntimeError('FailedPrecondition', `container ${container.id} is starting: it cannot be removed now`);
  await removeContainerRecord(ctx, container);
  return {};
}

export async function removeContainerRecord(ctx: RuntimeContext, container: ContainerRecord): Promise<void> {
  if (ctx.containers.get(container.id) === undefined) return;
  const cleanup = new CleanupStack();
  // A concurrent removal set the flag and resets it; this one resets only what it set, on every
  // failure, so the container can be started or removed again (the kubelet retries).
  if (!container.status.removing) {
    ctx.containers.updateStatus(container.id, (s) => ({ ...s, removing: true }));
    cleanup.defer('reset the removing flag', () => {
      if (ctx.containers.get(container.id) !== undefined) ctx.containers.updateStatus(container.id, (s) => ({ ...s, removing: false }));
    });
  }
  try {
    await forceStop(ctx, container);
    if (container.securityOptions.length > 0) {
      // cri-dockerd: a credential spec that cannot be removed fails the removal, so the kubelet retries.
      try {
        await ctx.windows.handoff.releaseOnRemove(container.securityOptions);
      } catch (err) {
        throw ctx.flavor.removeFailed(err, container);
      }
    }
    if (ctx.containers.delete(container.id) === undefined) return;
    await cleanup.done(ctx.logger);
  } catch (err) {
    await cleanup.unwind(ctx.logger, err);
    throw err;
  }
  ctx.windows.identities.delete(container);
  ctx.windows.journal.forget(container.id);
  ctx.containers.names.release(container.name, container.id);
  if (container.runtimeOwnedLog) await rm(dirname(container.logPath), { recursive: true, force: true });
  ctx.logger.info({ containerId: container.id }, 'container removed');
  publishEvent(ctx, container.id, container.sandboxId, ContainerEventType.DELETED);
}

/** The RPCs this file serves (see rpc.ts). */
export const containerRemoveRpcs = { RemoveContainer: removeContainer } satisfies RpcHandlers;
