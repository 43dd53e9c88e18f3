import { nanosToWire } from './clock.js';
import { toContainerStatus, toPodSandboxStatus } from './cri-views.js';
import type { RuntimeContext } from './runtime-context.js';

/** runtime.v1.ContainerEventType */
export const ContainerEventType = { CREATED: 0, STARTED: 1, STOPPED: 2, DELETED: 3 } as const;
export type ContainerEventTypeValue = (typeof ContainerEventType)[keyof typeof ContainerEventType];

/**
 * Publishes a GetContainerEvents event for a container or, as containerd does, for a sandbox
 * (then container_id is the sandbox id). It carries the sandbox status and the statuses of the
 * sandbox's containers as they are after the change.
 */
export function publishEvent(ctx: RuntimeContext, id: string, sandboxId: string, type: ContainerEventTypeValue): void {
  if (!ctx.hasEventListeners()) return;
  const sandbox = ctx.sandboxes.get(sandboxId);
  ctx.publish({
    container_id: id,
    container_event_type: type,
    created_at: nanosToWire(ctx.clock.nowNanos()),
    pod_sandbox_status: sandbox === undefined ? null : toPodSandboxStatus(sandbox),
    containers_statuses: ctx.containers.inGroup(sandboxId).map((c) => toContainerStatus(ctx, c)),
  });
}
