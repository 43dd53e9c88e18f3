/**
 * A pod's status as node mode sends it to the API server (the pods/status subresource): the view
 * pod-status.ts computes, with the conditions' lastTransitionTime kept while their status holds
 * (kubelet_pods.go generateAPIPodStatus, status_manager.go) and the IP lists marked for a
 * strategic-merge replace.
 */
import type { ContainerStatusView, PodStatusView } from '../pod-status.js';

/** A condition's status and since when it has held, by condition type: the pod's own. */
export type ConditionTransitions = Map<string, { status: string; at: string }>;

const time = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

export function apiPodStatus(view: PodStatusView, transitions: ConditionTransitions, nodeIp: string): Record<string, unknown> {
  const now = time(new Date());
  const conditions = view.conditions
    .filter((c) => c.type !== 'PodScheduled')
    .map((c) => {
      const previous = transitions.get(c.type);
      const at = previous !== undefined && previous.status === c.status ? previous.at : now;
      transitions.set(c.type, { status: c.status, at });
      return { type: c.type, status: c.status, ...(c.reason === undefined ? {} : { reason: c.reason }), ...(c.message === undefined ? {} : { message: c.message }), lastProbeTime: null, lastTransitionTime: at };
    });
  // The sandbox's IP, or the node's for a hostNetwork pod (generateAPIPodStatus).
  const podIp = view.podIP ?? '';
  return {
    phase: view.phase,
    conditions,
    hostIP: nodeIp,
    // podIPs and hostIPs merge by ip: `$patch: replace` keeps a new sandbox's IP from being
    // added beside the old one (the status manager's two-way patch deletes the old entry).
    hostIPs: [{ $patch: 'replace' }, { ip: nodeIp }],
    ...(podIp === '' ? {} : { podIP: podIp, podIPs: [{ $patch: 'replace' }, { ip: podIp }] }),
    ...(view.startTime === undefined ? {} : { startTime: view.startTime }),
    ...(view.initContainerStatuses === undefined ? {} : { initContainerStatuses: view.initContainerStatuses.map(apiContainerStatus) }),
    containerStatuses: view.containerStatuses.map(apiContainerStatus),
  };
}

function apiContainerStatus(s: ContainerStatusView): Record<string, unknown> {
  return {
    name: s.name,
    state: s.state,
    lastState: s.lastState,
    ready: s.ready,
    restartCount: s.restartCount,
    image: s.image,
    imageID: s.imageID,
    ...(s.containerID === undefined ? {} : { containerID: s.containerID }),
    started: s.started,
  };
}
