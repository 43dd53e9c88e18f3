/**
 * Where node mode's pod status goes: the API server (the status manager's share, status_manager.go
 * v1.34). A pod's status is the view pod-status.ts computes, with the conditions'
 * lastTransitionTime kept while their status holds (kubelet_pods.go generateAPIPodStatus) and the
 * IP lists marked for a strategic-merge replace; it is PATCHed to pods/status (with metadata.uid)
 * only when it changed, and a terminated pod is DELETEd with gracePeriodSeconds 0 and a UID
 * precondition.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import type { ContainerStatusView, PodStatusView } from '../pod-status.js';
import { isConflict, isNotFound, type ApiRequester } from './api-client.js';
import { errorText } from './node-controller.js';

export interface ApiPodStatusSinkOptions {
  readonly nodeIp: string;
  /** Asks for the pod's next sync later: a status or deletion that failed is sent again by it. */
  readonly retry: (uid: string) => void;
}

/** What the API server was last sent for a pod. */
interface Sent {
  /** The status PATCHed last, without the conditions' times ('' before the first). */
  fingerprint: string;
  readonly transitions: ConditionTransitions;
}

/** The API server as the sink of the node's pod statuses (one per node). */
export class ApiPodStatusSink {
  private readonly sent = new Map<string, Sent>();

  constructor(
    private readonly api: ApiRequester,
    private readonly logger: Logger,
    private readonly options: ApiPodStatusSinkOptions,
  ) {}

  /** Whether a status of the pod with `uid` was sent since this kubelet started. */
  reported(uid: string): boolean {
    return (this.sent.get(uid)?.fingerprint ?? '') !== '';
  }

  /** Sends the pod's status as the view shows it. */
  async report(pod: V1Pod, view: PodStatusView): Promise<void> {
    await this.patch(pod, apiPodStatus(view, this.of(pod).transitions, this.options.nodeIp));
  }

  /** A pod node admission rejected: Failed, with the reason and "Pod was rejected: <message>". */
  async reject(pod: V1Pod, rejection: { reason: string; message: string }): Promise<void> {
    await this.patch(pod, { phase: 'Failed', reason: rejection.reason, message: `Pod was rejected: ${rejection.message}` });
  }

  /**
   * The status manager's DELETE of a pod whose containers stopped and whose final status was sent.
   * True once answered (or the pod is gone); false when it failed and a retry is queued.
   */
  async delete(pod: V1Pod): Promise<boolean> {
    const m = pod.metadata!;
    try {
      await this.api.request('DELETE', `/api/v1/namespaces/${m.namespace}/pods/${m.name}`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: m.uid } });
      this.logger.info({ pod: podKey(pod) }, 'pod terminated and deleted');
      return true;
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return true; // gone, or a new pod of that name
      this.logger.warn({ pod: podKey(pod), err: errorText(err) }, 'failed to delete the terminated pod; will retry');
      this.options.retry(m.uid ?? '');
      return false;
    }
  }

  /** The pod is gone from the API server. */
  forget(uid: string): void {
    this.sent.delete(uid);
  }

  private of(pod: V1Pod): Sent {
    const uid = pod.metadata?.uid ?? '';
    let sent = this.sent.get(uid);
    if (sent === undefined) {
      sent = { fingerprint: '', transitions: new Map() };
      this.sent.set(uid, sent);
    }
    return sent;
  }

  /** PATCH pods/status (strategic merge, with metadata.uid as the status manager sends it) when it changed. */
  private async patch(pod: V1Pod, status: Record<string, unknown>): Promise<void> {
    const sent = this.of(pod);
    const { conditions, ...rest } = status as { conditions?: { lastTransitionTime?: string }[] };
    const fingerprint = JSON.stringify({ ...rest, conditions: conditions?.map(({ lastTransitionTime: _t, ...c }) => c) });
    if (fingerprint === sent.fingerprint) return;
    const m = pod.metadata!;
    try {
      await this.api.request('PATCH', `/api/v1/namespaces/${m.namespace}/pods/${m.name}/status`, { metadata: { uid: m.uid }, status }, 'application/strategic-merge-patch+json');
      sent.fingerprint = fingerprint;
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return; // gone, or a new pod of that name
      this.logger.warn({ pod: podKey(pod), err: errorText(err) }, 'Failed to update status for pod');
      // Try again later: nothing else would send it.
      this.options.retry(m.uid ?? '');
    }
  }
}

export const podKey = (pod: V1Pod): string => `${pod.metadata?.namespace}/${pod.metadata?.name}`;

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
