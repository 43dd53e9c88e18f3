/**
 * The kubelet's answer to an accepted pod update (kubernetes v1.34.12 pkg/kubelet/kuberuntime
 * kuberuntime_manager.go computePodActions): a regular container whose definition changed (an
 * update may change only its image) is killed with the event `Container <name> definition
 * changed, will be restarted` and started again as the next attempt, with the new spec. The
 * others keep running. Init containers that already ran are not run again.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { unaryCall, type CriClient } from '../cri/proto.js';
import { buildPodSandboxConfig } from './cri-config.js';
import type { NodeContainer, NodePod } from './node-pods.js';
import { startContainer, type ContainerOutcome, type PodEvent, type PodOutcome, type PodWorkerOptions } from './pod-worker.js';

export async function syncPodUpdate(cri: CriClient, live: V1Pod, updated: V1Pod, nodePod: NodePod, options: PodWorkerOptions): Promise<PodOutcome> {
  const call = { timeoutMs: options.callTimeoutMs ?? 30_000 };
  const events: PodEvent[] = [];
  const latest = new Map<string, NodeContainer>();
  for (const c of nodePod.containers) if ((latest.get(c.name)?.attempt ?? -1) < c.attempt) latest.set(c.name, c);
  const sandboxConfig = buildPodSandboxConfig(updated, { podLogsRoot: options.podLogsRoot });
  const outcomes: ContainerOutcome[] = [];
  for (const [i, container] of (updated.spec?.containers ?? []).entries()) {
    const current = latest.get(container.name);
    const before = live.spec?.containers[i];
    if (current !== undefined && before?.image === container.image) {
      outcomes.push({ name: container.name, kind: 'regular', state: current.state === 'Running' ? 'started' : current.state === 'Exited' ? 'exited' : 'waiting', containerId: current.id, ...(current.exitCode === undefined ? {} : { exitCode: current.exitCode }) });
      continue;
    }
    if (current !== undefined && current.state === 'Running') {
      events.push({ type: 'Normal', reason: 'Killing', message: `Container ${container.name} definition changed, will be restarted`, container: container.name });
      await unaryCall(cri.runtime, 'StopContainer', { container_id: current.id, timeout: updated.spec?.terminationGracePeriodSeconds ?? 30 }, call);
    }
    outcomes.push(
      await startContainer(cri, updated, container, 'regular', { sandboxId: nodePod.sandboxId, sandboxConfig, attempt: current === undefined ? 0 : current.attempt + 1, options, events }),
    );
  }
  return { sandboxId: nodePod.sandboxId, containers: outcomes, events };
}
