/**
 * One simulated node's kubelet in node mode: its NodeController (Node, Lease, status) and its
 * PodController (pods bound to it), over one CRI client. Several of them share a process, an API
 * client (its connection pool), a pod informer, a node watch, a sync limiter and a timer wheel;
 * each has only its own rate limits (a real kubelet's client QPS and event QPS) and state.
 */
import type { Logger } from '../../log.js';
import type { CriClient } from '../../cri/proto.js';
import { ImagePulls } from '../pod-worker-options.js';
import { rateLimited, type ApiClient } from './api-client.js';
import { EventRecorder } from './event-recorder.js';
import { admissionNode, NodeController, type NodeControllerOptions, type NodeIdentity } from './node-controller.js';
import { PodController, type SyncLimiter } from './pod-controller.js';
import { GarbageCollector, type GarbageCollectorOptions } from '../gc/garbage-collector.js';
import type { NodeDeletionWatch, PodInformer } from './pod-informer.js';

export interface KubeletNodeOptions {
  readonly api: ApiClient;
  readonly cri: CriClient;
  readonly identity: NodeIdentity;
  readonly informer: PodInformer;
  readonly nodeWatch: NodeDeletionWatch;
  readonly limiter: SyncLimiter;
  readonly podLogsRoot: string;
  /** --runtime-request-timeout. */
  readonly callTimeoutMs: number;
  readonly nodeCpuCount: number;
  readonly logger: Logger;
  readonly nodeController?: NodeControllerOptions;
  readonly backoffInitialMs?: number;
  /** --kube-api-qps/--kube-api-burst and --event-qps/--event-burst (default the kubelet's 50/100 each). */
  readonly limits?: { readonly qps: number; readonly burst: number; readonly eventQps: number; readonly eventBurst: number };
  /** Container and image garbage collection (gc/garbage-collector.ts); none when absent. */
  readonly garbageCollection?: Omit<GarbageCollectorOptions, 'onNodeEvent'>;
}

export class KubeletNode {
  readonly nodeController: NodeController;
  readonly podController: PodController;
  private readonly gc: GarbageCollector | undefined;

  constructor(private readonly options: KubeletNodeOptions) {
    const logger = options.logger.child({ node: options.identity.name });
    const limits = options.limits ?? { qps: 50, burst: 100, eventQps: 50, eventBurst: 100 };
    const api = rateLimited(options.api, limits.qps, limits.burst);
    const events = rateLimited(options.api, limits.eventQps, limits.eventBurst);
    this.nodeController = new NodeController(api, options.cri, options.identity, logger, options.nodeController);
    this.podController = new PodController(api, options.cri, new EventRecorder(events, options.identity.name, logger), logger, {
      nodeName: options.identity.name,
      nodeIp: options.identity.nodeIp,
      node: admissionNode(options.identity),
      nodeCpuCount: options.nodeCpuCount,
      podLogsRoot: options.podLogsRoot,
      callTimeoutMs: options.callTimeoutMs,
      limiter: options.limiter,
      imagePulls: new ImagePulls(),
      ...(options.backoffInitialMs === undefined ? {} : { backoffInitialMs: options.backoffInitialMs }),
      // Probe workers wait on the same wheel as the node's lease and status timers.
      ...(options.nodeController?.wheel === undefined ? {} : { wheel: options.nodeController.wheel }),
    });
    // Subscribed before the informer starts; the informer's first list reaches every node.
    options.informer.subscribe(options.identity.name, this.podController);
    options.nodeWatch.subscribe(options.identity.name, () => this.nodeController.nodeDeleted());
    // GC events are about the node (the kubelet's nodeRef).
    const recorder = new EventRecorder(events, options.identity.name, logger);
    this.gc =
      options.garbageCollection === undefined
        ? undefined
        : new GarbageCollector(options.cri, {
            callTimeoutMs: options.callTimeoutMs,
            ...options.garbageCollection,
            onNodeEvent: (e) => recorder.recordForNode([e]),
            // Every node's collections on the process's one timer wheel.
            ...(options.nodeController?.wheel === undefined ? {} : { scheduler: options.nodeController.wheel }),
          });
  }

  get name(): string {
    return this.options.identity.name;
  }

  /** Adopts the runtime's pods, then registers the Node (the informer is started by the caller). */
  async start(): Promise<void> {
    await this.podController.start();
    await this.nodeController.start();
    this.gc?.start();
  }

  stop(): void {
    void this.gc?.stop();
    this.nodeController.stop();
    this.podController.stop();
  }
}
