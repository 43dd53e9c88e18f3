/**
 * The Node side of a simulated node (virtual-kubelet's NodeController): registers the Node with
 * the labels, nodeInfo, capacity, addresses and conditions a Windows kubelet reports
 * (pkg/kubelet/kubelet_node_status.go, nodestatus/setters.go, v1.34), renews its Lease in
 * kube-node-lease (pkg/kubelet/nodelease: renewed every 40 s × 0.25 = 10 s, duration 40 s), and
 * PATCHes the status when it changes or every nodeStatusReportFrequency (5 min), checking every
 * nodeStatusUpdateFrequency (10 s). A Node deleted behind its back is registered again. While the
 * API server cannot be reached, every failed step is logged and retried with back-off.
 */
import { randomUUID } from 'node:crypto';
import type { V1Node, V1NodeCondition, V1Taint } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import { unaryCall, type CriClient } from '../../cri/proto.js';
import { ApiError, isConflict, isNotFound, type ApiRequester } from './api-client.js';
import { TimerWheel, type WheelTask } from './timer-wheel.js';
import { nodeAllocatable, type AdmissionNode } from '../kubelet-admission.js';

/** The kubelet version this node reports (the release its behaviour follows). */
export const kubeletVersion = 'v1.34.12';

export interface NodeIdentity {
  /** The Node's name (`--hostname-override`). */
  readonly name: string;
  /** Windows build `Major.Minor.Build` (the node file's osBuild). */
  readonly osBuild: string;
  /** The loopback address reported as InternalIP and served by the kubelet endpoint. */
  readonly nodeIp: string;
  readonly kubeletPort: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly V1Taint[];
  readonly maxPods: number;
  readonly cpu: string;
  readonly memory: string;
  readonly ephemeralStorage: string;
}

export interface NodeControllerOptions {
  /** nodeStatusUpdateFrequency (10 s). */
  readonly statusUpdateMs?: number;
  /** nodeStatusReportFrequency (5 min): an unchanged status is still reported this often. */
  readonly statusReportMs?: number;
  /** nodeLeaseDurationSeconds (40). */
  readonly leaseDurationSeconds?: number;
  /** First retry delay and its cap while the API server fails. */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
  /** The process's timer wheel (one timer for every node); default: one of its own. */
  readonly wheel?: TimerWheel;
}

const leaseNamespace = 'kube-node-lease';

/** metav1.MicroTime as the API serialises it. */
const microTime = (d: Date): string => d.toISOString().replace(/Z$/, '000Z');
const time = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** osImage for a Windows build, as `Get-ComputerInfo` names the Server releases. */
export function windowsOsImage(osBuild: string): string {
  const build = Number(osBuild.split('.')[2]);
  const release = build === 17763 ? '2019' : build === 20348 ? '2022' : build === 26100 ? '2025' : undefined;
  return release === undefined ? 'Windows Server Datacenter' : `Windows Server ${release} Datacenter`;
}

/** The kubelet's own labels on a Windows node, then --node-labels. */
export function nodeLabels(identity: NodeIdentity): Record<string, string> {
  return {
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': identity.name,
    'kubernetes.io/os': 'windows',
    'node.kubernetes.io/windows-build': identity.osBuild,
    ...identity.labels,
  };
}

/** The Node as this node's admission reads it: its labels, taints and allocatable. */
export function admissionNode(identity: NodeIdentity): AdmissionNode {
  return { name: identity.name, labels: nodeLabels(identity), taints: identity.taints, allocatable: nodeAllocatable(identity) };
}

export class NodeController {
  private readonly bootId = randomUUID();
  private readonly machineId = randomUUID().replaceAll('-', '');
  private runtimeVersion = '';
  private nodeUid = '';
  private registered = false;
  private lastReported = '';
  private lastReportAt = 0;
  /** Condition type → [status, lastTransitionTime]. */
  private readonly transitions = new Map<string, { status: string; at: string }>();
  private readonly tasks = new Set<WheelTask>();
  private readonly wheel: TimerWheel;
  private readonly ownWheel: boolean;
  /** The Lease as last written (nodelease's latestLease): renewed from it without a GET. */
  private latestLease: { metadata?: { resourceVersion?: string } } | undefined;
  private stopped = false;
  private statusFailures = 0;
  private leaseFailures = 0;

  constructor(
    private readonly api: ApiRequester,
    private readonly cri: CriClient,
    readonly identity: NodeIdentity,
    private readonly logger: Logger,
    private readonly options: NodeControllerOptions = {},
  ) {
    this.ownWheel = options.wheel === undefined;
    this.wheel = options.wheel ?? new TimerWheel();
  }

  /** The Node's UID once registered (the Lease's owner). */
  get uid(): string {
    return this.nodeUid;
  }

  /** Starts registration, status and lease loops; resolves once the Node is registered. */
  async start(): Promise<void> {
    await this.ensureRegistered();
    this.schedule(() => this.statusTick(), 0);
    this.schedule(() => this.leaseTick(), 0);
  }

  stop(): void {
    this.stopped = true;
    for (const task of this.tasks) task.cancel();
    this.tasks.clear();
    if (this.ownWheel) this.wheel.stop();
  }

  private schedule(fn: () => Promise<void>, delayMs: number): void {
    if (this.stopped) return;
    const task = this.wheel.schedule(() => {
      this.tasks.delete(task);
      void fn();
    }, delayMs);
    this.tasks.add(task);
  }

  /**
   * The next period: the first one is shortened at random, so that nodes registered together
   * (a thousand in one process) do not renew or check in the same instant ever after.
   */
  private period(every: number, first: boolean): number {
    return first ? Math.round(every * (0.5 + Math.random() * 0.5)) : every;
  }

  private statusTicks = 0;
  private leaseTicks = 0;

  private backoff(failures: number): number {
    const initial = this.options.retryInitialMs ?? 200;
    return Math.min(initial * 2 ** Math.max(0, failures - 1), this.options.retryMaxMs ?? 7_000);
  }

  private async runtimeStatus(): Promise<{ ready: boolean; message: string }> {
    try {
      if (this.runtimeVersion === '') {
        const v = await unaryCall(this.cri.runtime, 'Version', { version: '' }, { timeoutMs: 10_000 });
        this.runtimeVersion = `${v.runtime_name}://${v.runtime_version}`;
      }
      const status = await unaryCall(this.cri.runtime, 'Status', { verbose: false }, { timeoutMs: 10_000 });
      const conditions = status.status?.conditions ?? [];
      const notReady = conditions.filter((c) => !c.status);
      if (notReady.length === 0) return { ready: true, message: 'kubelet is posting ready status' };
      // nodestatus.ReadyCondition: the runtime's failing conditions, as the kubelet's runtime state reports them.
      const runtime = notReady.find((c) => c.type === 'RuntimeReady');
      if (runtime !== undefined) return { ready: false, message: `container runtime status check may not have completed yet: RuntimeReady=false reason:${runtime.reason} message:${runtime.message}` };
      const network = notReady[0]!;
      return { ready: false, message: `container runtime network not ready: NetworkReady=false reason:${network.reason} message:${network.message}` };
    } catch (err) {
      return { ready: false, message: `container runtime is down: ${(err as Error).message}` };
    }
  }

  private condition(type: string, ok: boolean, reason: string, message: string, now: string): V1NodeCondition {
    const status = ok ? 'True' : 'False';
    const previous = this.transitions.get(type);
    const at = previous !== undefined && previous.status === status ? previous.at : now;
    this.transitions.set(type, { status, at });
    return { type, status, reason, message, lastHeartbeatTime: now as unknown as Date, lastTransitionTime: at as unknown as Date };
  }

  /** The status the kubelet reports now; `heartbeat` is the time stamped on the conditions. */
  private async status(now: Date): Promise<V1Node['status']> {
    const id = this.identity;
    const runtime = await this.runtimeStatus();
    const stamp = time(now);
    return {
      capacity: { cpu: id.cpu, memory: id.memory, pods: String(id.maxPods), 'ephemeral-storage': id.ephemeralStorage },
      // The same allocatable the kubelet's admission counts against (kubelet-admission.ts).
      allocatable: nodeAllocatable(id),
      conditions: [
        this.condition('MemoryPressure', false, 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available', stamp),
        this.condition('DiskPressure', false, 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure', stamp),
        this.condition('PIDPressure', false, 'KubeletHasSufficientPID', 'kubelet has sufficient PID available', stamp),
        runtime.ready
          ? this.condition('Ready', true, 'KubeletReady', runtime.message, stamp)
          : this.condition('Ready', false, 'KubeletNotReady', runtime.message, stamp),
      ],
      // InternalIP only. A kubelet also reports a Hostname address (nodestatus.NodeAddress), but
      // here it would be the node's name, which no DNS resolves, and kube-apiserver's default
      // --kubelet-preferred-address-types puts Hostname first
      // (cmd/kube-apiserver/app/options/options.go, v1.34): logs, exec, attach and port-forward
      // would dial `<name>:<port>` and fail. kwok's nodes report only addresses that resolve.
      addresses: [{ type: 'InternalIP', address: id.nodeIp }],
      daemonEndpoints: { kubeletEndpoint: { Port: id.kubeletPort } },
      nodeInfo: {
        machineID: this.machineId,
        systemUUID: this.machineId.toUpperCase(),
        bootID: this.bootId,
        kernelVersion: `${id.osBuild}.0`,
        osImage: windowsOsImage(id.osBuild),
        containerRuntimeVersion: this.runtimeVersion,
        kubeletVersion,
        kubeProxyVersion: '',
        operatingSystem: 'windows',
        architecture: 'amd64',
      },
    };
  }

  /** registerWithAPIServer: create the Node; an existing one is taken over (its status is patched next). */
  private async register(): Promise<void> {
    let failures = 0;
    for (;;) {
      if (this.stopped) return;
      try {
        const node: V1Node = {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: this.identity.name, labels: nodeLabels(this.identity), annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' } },
          spec: this.identity.taints.length === 0 ? {} : { taints: [...this.identity.taints] },
          status: await this.status(new Date()),
        };
        try {
          const created = await this.api.request<V1Node>('POST', '/api/v1/nodes', node);
          this.nodeUid = created.metadata?.uid ?? '';
          this.logger.info({ node: this.identity.name }, 'Successfully registered node');
        } catch (err) {
          if (!isConflict(err)) throw err;
          // Already registered (a restart): keep the object, bring the labels up to date.
          const patched = await this.api.request<V1Node>('PATCH', `/api/v1/nodes/${this.identity.name}`, { metadata: { labels: nodeLabels(this.identity) } }, 'application/strategic-merge-patch+json');
          this.nodeUid = patched.metadata?.uid ?? '';
          this.logger.info({ node: this.identity.name }, 'Node was previously registered');
        }
        this.registered = true;
        this.lastReported = '';
        return;
      } catch (err) {
        // Refused credentials or a node the user may not register are not going to get better.
        if (err instanceof ApiError && (err.status === 401 || err.status === 403) && this.nodeUid === '') {
          throw new Error(`${this.api.description}: cannot register node ${this.identity.name}: ${err.message}`, { cause: err });
        }
        failures++;
        const delay = this.backoff(failures);
        this.logger.warn({ node: this.identity.name, attempt: failures, retryInMs: delay, err: errorText(err) }, 'Unable to register node with API server');
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  /** The Node was deleted (seen by the process's node watch): register it again now. */
  nodeDeleted(): void {
    if (this.stopped || !this.registered) return;
    this.logger.warn({ node: this.identity.name }, 'node not found in the API server; registering it again');
    this.registered = false;
    void this.ensureRegistered().catch((err: unknown) => this.logger.error({ node: this.identity.name, err: errorText(err) }, 'registering the node again failed'));
  }

  private registering: Promise<void> | undefined;

  /** One registration at a time, however many ticks and watch events ask for it. */
  private ensureRegistered(): Promise<void> {
    if (this.registered) return Promise.resolve();
    this.registering ??= this.register().finally(() => {
      this.registering = undefined;
    });
    return this.registering;
  }

  private async statusTick(): Promise<void> {
    const every = this.options.statusUpdateMs ?? 10_000;
    try {
      if (!this.registered) await this.ensureRegistered();
      const now = new Date();
      const status = await this.status(now);
      // What changed, with the heartbeat times left out.
      const fingerprint = JSON.stringify({ ...status, conditions: status?.conditions?.map(({ lastHeartbeatTime: _h, ...c }) => c) });
      const due = Date.now() - this.lastReportAt >= (this.options.statusReportMs ?? 300_000);
      if (fingerprint !== this.lastReported || due) {
        await this.api.request('PATCH', `/api/v1/nodes/${this.identity.name}/status`, { status }, 'application/strategic-merge-patch+json');
        this.lastReported = fingerprint;
        this.lastReportAt = Date.now();
      }
      if (this.statusFailures > 0) this.logger.info({ node: this.identity.name, after: this.statusFailures }, 'node status updated again');
      this.statusFailures = 0;
      this.schedule(() => this.statusTick(), this.period(every, this.statusTicks++ === 0));
    } catch (err) {
      if (isNotFound(err)) {
        // The Node was deleted: register it again (the kubelet's registration runs again).
        this.logger.warn({ node: this.identity.name }, 'node not found in the API server; registering it again');
        this.registered = false;
        this.schedule(() => this.statusTick(), 0);
        return;
      }
      this.statusFailures++;
      const delay = Math.min(this.backoff(this.statusFailures), every);
      this.logger.warn({ node: this.identity.name, attempt: this.statusFailures, retryInMs: delay, err: errorText(err) }, 'Error updating node status, will retry');
      this.schedule(() => this.statusTick(), delay);
    }
  }

  private lease(now: Date, resourceVersion?: string): Record<string, unknown> {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.identity.name,
        namespace: leaseNamespace,
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
        ...(this.nodeUid === '' ? {} : { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.identity.name, uid: this.nodeUid }] }),
      },
      spec: { holderIdentity: this.identity.name, leaseDurationSeconds: this.options.leaseDurationSeconds ?? 40, renewTime: microTime(now) },
    };
  }

  private async leaseTick(): Promise<void> {
    const duration = this.options.leaseDurationSeconds ?? 40;
    const every = duration * 250; // nodeLeaseRenewIntervalFraction 0.25
    const path = `/apis/coordination.k8s.io/v1/namespaces/${leaseNamespace}/leases/${this.identity.name}`;
    try {
      // nodelease: renew from the Lease last written; GET (or create) only without one, or after a conflict.
      let written: { metadata?: { resourceVersion?: string } } | undefined;
      if (this.latestLease !== undefined) {
        try {
          written = await this.api.request('PUT', path, this.lease(new Date(), this.latestLease.metadata?.resourceVersion));
        } catch (err) {
          if (!isConflict(err) && !isNotFound(err)) throw err;
          this.latestLease = undefined;
        }
      }
      if (written === undefined) {
        let existing: { metadata?: { resourceVersion?: string } } | undefined;
        try {
          existing = await this.api.request('GET', path);
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
        if (existing === undefined) written = await this.api.request('POST', `/apis/coordination.k8s.io/v1/namespaces/${leaseNamespace}/leases`, this.lease(new Date()));
        else written = await this.api.request('PUT', path, this.lease(new Date(), existing.metadata?.resourceVersion));
      }
      this.latestLease = written;
      if (this.leaseFailures > 0) this.logger.info({ node: this.identity.name, after: this.leaseFailures }, 'node lease renewed again');
      this.leaseFailures = 0;
      this.schedule(() => this.leaseTick(), this.period(every, this.leaseTicks++ === 0));
    } catch (err) {
      this.leaseFailures++;
      const delay = Math.min(this.backoff(this.leaseFailures), every);
      this.logger.warn({ node: this.identity.name, attempt: this.leaseFailures, retryInMs: delay, err: errorText(err) }, 'failed to update lease, will retry');
      this.schedule(() => this.leaseTick(), delay);
    }
  }
}

export const errorText = (err: unknown): string => (err instanceof ApiError || err instanceof Error ? err.message : String(err));

const units: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12, '': 1 };

/** A whole-unit quantity (`16Gi`, `500M`, `1024`) in bytes; the flags are checked with it. */
export function quantityBytes(value: string): number {
  const match = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(value);
  if (match === null) throw new Error(`${JSON.stringify(value)} is not a quantity such as 16Gi or 500M`);
  return Number(match[1]) * (units[match[2] ?? '']!);
}
