/**
 * What every route of the kubelet's server works with: the node's pods, the CRI client and the
 * runtime's view of pods. One per server; routes hold no state of their own.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { unaryCall, type CriClient } from '../../cri/proto.js';
import type { Logger } from '../../log.js';
import type { RuntimePods } from './runtime-pods.js';
import type { KubeletServerMetrics } from './server-metrics.js';
import type { PodRecord } from '../pod-records.js';

export interface RouteContext {
  readonly nodeName: string;
  readonly cri: CriClient;
  readonly callTimeoutMs: number;
  readonly runtimePods: RuntimePods;
  readonly metrics: KubeletServerMetrics;
  readonly log: Logger;
  readonly nodeStartTime: Date;
  readonly memoryCapacityBytes?: number;
  /** The pods bound to the node (the kubelet's pod manager). */
  pods(): readonly V1Pod[];
  /** The kubelet's record of a pod of the node (for /explain); absent: the route answers 404. */
  podRecord?(namespace: string, name: string): PodRecord | undefined;
  /** The sync loop's health for /healthz (an error text when unhealthy). */
  syncLoopHealth(): string | undefined;
  /** The runtime's name (CRI Version), for `<runtime>://<id>` in texts. */
  runtimeName(): Promise<string>;
}

/** One request as a route sees it: the decoded path below the route's root, the query, an upgrade. */
export interface RouteRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  /** The path's segments after the root (`/containerLogs/ns/pod/c` → `['ns', 'pod', 'c']`). */
  readonly rest: readonly string[];
  readonly query: URLSearchParams;
  readonly upgrade: { socket: Duplex; head: Buffer } | undefined;
}

/**
 * A route family of server.go: the first path segment it answers, the methods it allows, and
 * whether the rest of the path has a shape it serves (otherwise: 404).
 */
export interface Route {
  readonly root: string;
  /** The methods it allows (others: 405); undefined: any. */
  readonly methods?: readonly string[];
  matches(rest: readonly string[]): boolean;
  handle(ctx: RouteContext, r: RouteRequest): Promise<void> | void;
}

export function findPod(pods: readonly V1Pod[], namespace: string, name: string): V1Pod | undefined {
  return pods.find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
}

/** kubecontainer.GetContainerSpec: containers, init containers, ephemeral containers. */
export function containerSpec(pod: V1Pod, name: string): V1Container | undefined {
  const spec = pod.spec;
  return spec?.containers.find((c) => c.name === name)
    ?? spec?.initContainers?.find((c) => c.name === name)
    ?? (spec?.ephemeralContainers?.find((c) => c.name === name) as V1Container | undefined);
}

/** The runtime's name from CRI Version, asked once per server; `cri` while the runtime cannot answer. */
export function runtimeNameOf(cri: CriClient, callTimeoutMs: number): () => Promise<string> {
  let cached: string | undefined;
  return async () => {
    if (cached === undefined) {
      try {
        cached = (await unaryCall(cri.runtime, 'Version', { version: '' }, { timeoutMs: callTimeoutMs })).runtime_name;
      } catch {
        return 'cri';
      }
    }
    return cached;
  };
}
