/**
 * Events about pods, posted as the kubelet's recorder posts them (client-go tools/record):
 * source component `kubelet` and host the node, involvedObject the pod (with
 * `spec.containers{name}` for a container), a repeat of the same event within the cache patches
 * count and lastTimestamp of the first instead of creating another. Posting is best effort and,
 * as the broadcaster's, asynchronous: a pod sync hands its events over and goes on to its status
 * (which no event waits in front of); they are posted in order, at the recorder's own rate
 * (--event-qps/--event-burst), and beyond `maxPending` waiting ones, dropped with a warning, as
 * client-go's broadcaster drops them when its queue is full. A failure is logged, never fails a
 * pod sync.
 */
import { randomBytes } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import type { ApiRequester } from './api-client.js';
import { errorText } from './node-controller.js';
import type { PodEvent } from '../pod-worker-options.js';

interface Posted {
  readonly name: string;
  count: number;
}

const maxCached = 4096;
/** client-go's broadcaster queue (maxQueuedEvents 1000). */
const maxPending = 1000;
const time = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

export class EventRecorder {
  private readonly posted = new Map<string, Posted>();
  private tail: Promise<void> = Promise.resolve();
  private pending = 0;
  private dropped = 0;

  constructor(
    private readonly api: ApiRequester,
    private readonly nodeName: string,
    private readonly logger: Logger,
  ) {}

  /** Queues the events of one pod, to be posted in order; returns at once. */
  record(pod: V1Pod, events: readonly PodEvent[]): void {
    for (const event of events) {
      if (this.pending >= maxPending) {
        if (this.dropped++ % 100 === 0) this.logger.warn({ node: this.nodeName, dropped: this.dropped }, 'event queue full; dropping events');
        continue;
      }
      this.pending++;
      this.tail = this.tail.then(() => this.post(pod, event)).finally(() => {
        this.pending--;
      });
    }
  }

  /**
   * Queues events about the node itself, involvedObject the kubelet's nodeRef (kind Node, UID the
   * node's name, events in the default namespace), as garbage collection reports them.
   */
  recordForNode(events: readonly PodEvent[]): void {
    const nodeRef: V1Pod = { metadata: { name: this.nodeName, namespace: 'default', uid: this.nodeName } };
    for (const event of events) this.tail = this.tail.then(() => this.post(nodeRef, event, 'Node'));
  }

  /** Resolves once the events queued so far are posted (or failed). */
  async flushed(): Promise<void> {
    await this.tail;
  }

  private async post(pod: V1Pod, event: PodEvent, kind: 'Pod' | 'Node' = 'Pod'): Promise<void> {
    const m = pod.metadata ?? {};
    const namespace = m.namespace ?? 'default';
    const fieldPath = event.container === undefined ? undefined : `${containerListOf(pod, event.container)}{${event.container}}`;
    const key = [m.uid, fieldPath ?? '', event.type, event.reason, event.message].join('\u0000');
    const now = time(new Date());
    const seen = this.posted.get(key);
    try {
      if (seen !== undefined) {
        seen.count++;
        await this.api.request('PATCH', `/api/v1/namespaces/${namespace}/events/${seen.name}`, { count: seen.count, lastTimestamp: now }, 'application/strategic-merge-patch+json');
        return;
      }
      // client-go names events <object>.<unix nanoseconds in hex>.
      const name = `${m.name}.${(BigInt(Date.now()) * 1_000_000n + BigInt(randomBytes(2).readUInt16BE(0))).toString(16)}`;
      await this.api.request('POST', `/api/v1/namespaces/${namespace}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: 'v1',
          kind,
          name: m.name,
          ...(kind === 'Node' ? {} : { namespace }),
          uid: m.uid,
          ...(m.resourceVersion === undefined ? {} : { resourceVersion: m.resourceVersion }),
          ...(fieldPath === undefined ? {} : { fieldPath }),
        },
        reason: event.reason,
        message: event.message,
        type: event.type,
        source: { component: 'kubelet', host: this.nodeName },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        reportingComponent: 'kubelet',
        reportingInstance: this.nodeName,
      });
      if (this.posted.size >= maxCached) this.posted.delete(this.posted.keys().next().value!);
      this.posted.set(key, { name, count: 1 });
    } catch (err) {
      // A patch of an expired event: post it afresh next time.
      this.posted.delete(key);
      this.logger.warn({ pod: `${namespace}/${m.name}`, reason: event.reason, err: errorText(err) }, 'Server rejected event (will not retry!)');
    }
  }

  /** Forgets a pod's events (the pod is gone). */
  forget(uid: string): void {
    for (const key of this.posted.keys()) if (key.startsWith(`${uid}\u0000`)) this.posted.delete(key);
  }
}

function containerListOf(pod: V1Pod, name: string): string {
  if ((pod.spec?.initContainers ?? []).some((c) => c.name === name)) return 'spec.initContainers';
  return 'spec.containers';
}
