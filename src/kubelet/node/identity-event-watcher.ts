/**
 * Node mode's events for identity operations that failed inside containers (identity-events.ts):
 * every few seconds, for the node's pods whose containers got a credential spec, the runtime's
 * records of their domain operations are read and each new failure is posted on the pod through
 * the node's event recorder. The interval is cri-winsim's own: a real kubelet posts no such event.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import { createIdentityClient, type IdentityClient } from '../../cri/identity-service.js';
import { identityFailureEvents } from '../explain/identity-events.js';
import type { PodRecord } from '../pod-records.js';
import type { EventRecorder } from './event-recorder.js';

/** How often the runtime's identity records are read (the kubelet's node status update frequency). */
export const IDENTITY_EVENTS_INTERVAL_MS = 10_000;

export interface WatchedPod {
  readonly pod: V1Pod;
  record: PodRecord;
}

export class IdentityEventWatcher {
  private client: IdentityClient | undefined;
  private task: { cancel(): void } | undefined;
  private stopped = false;

  constructor(
    private readonly endpoint: string,
    private readonly scheduler: { schedule(fn: () => void, delayMs: number): { cancel(): void } },
    private readonly recorder: EventRecorder,
    /** The node's live pods, read at each pass. */
    private readonly pods: () => Iterable<WatchedPod>,
    private readonly callTimeoutMs: number,
    private readonly logger: Logger,
    private readonly intervalMs = IDENTITY_EVENTS_INTERVAL_MS,
  ) {}

  start(): void {
    this.next();
  }

  stop(): void {
    this.stopped = true;
    this.task?.cancel();
    this.client?.close();
  }

  private next(): void {
    if (this.stopped) return;
    this.task = this.scheduler.schedule(() => void this.pass().finally(() => this.next()), this.intervalMs);
  }

  /** One pass: only pods with a container that was given a credential spec are asked about. */
  async pass(): Promise<void> {
    for (const watched of this.pods()) {
      if (this.stopped) return;
      const gmsa = Object.values(watched.record.containers).some((c) => c.containerId !== undefined && (c.identity?.criConfig.credentialSpecBytes ?? 0) > 0);
      if (!gmsa) continue;
      try {
        this.client ??= createIdentityClient(this.endpoint);
        const { events, seen } = await identityFailureEvents(this.client, watched.record, this.callTimeoutMs);
        watched.record = { ...watched.record, identityEventsSeen: seen };
        if (events.length > 0) this.recorder.record(watched.pod, events);
      } catch (err) {
        this.logger.debug({ err, pod: watched.pod.metadata?.name }, 'reading the runtime identity records failed');
      }
    }
  }
}
