/**
 * The kubelet's garbage collection over CRI (kubelet.go StartGarbageCollection, kubernetes v1.34):
 * containers and sandboxes every minute (ContainerGCPeriod), images every five minutes
 * (ImageGCPeriod), each decided by gc-policy.ts. Image GC is driven by ImageFsInfo's used bytes
 * against the image filesystem's capacity — on a real node cadvisor's size of that filesystem; here
 * the node's ephemeral-storage capacity, available being capacity minus used. A high threshold of
 * 100 turns image GC off, as in the kubelet. Events go to the node: ContainerGCFailed on every
 * failed container collection, ImageGCFailed only when image collection fails twice in a row,
 * FreeDiskSpaceFailed and InvalidDiskCapacity from the image collection itself.
 */
import { unaryCall, type CriClient } from '../../cri/proto.js';
import { isNotFound } from '../../cri/runtime-calls.js';
import { KubernetesContainerNameLabel, KubernetesPodUIDLabel } from '../cri-config.js';
import { type PodEvent } from '../pod-worker-options.js';
import { grpcErrorString } from '../cri-errors.js';
import {
  containersToRemove,
  defaultContainerGcPolicy,
  defaultImageGcPolicy,
  freeDiskSpaceFailedMessage,
  imagesToRemove,
  type ContainerGcPolicy,
  type GcContainer,
  type GcSandbox,
  type ImageGcPolicy,
  type ImageRecord,
} from './gc-policy.js';

export interface GarbageCollectorOptions {
  readonly containerPolicy?: ContainerGcPolicy;
  readonly imagePolicy?: ImageGcPolicy;
  /** The image filesystem's size in bytes (the node's ephemeral-storage capacity). */
  readonly imageFsCapacityBytes: number;
  /** ContainerGCPeriod (1 min) and ImageGCPeriod (5 min); shorter in tests. */
  readonly containerPeriodMs?: number;
  readonly imagePeriodMs?: number;
  readonly callTimeoutMs?: number;
  /** A pod the kubelet no longer has: all its dead containers and sandboxes go. Default: none. */
  readonly podRemoved?: (uid: string) => boolean;
  /** Events about the node (the kubelet's nodeRef). */
  readonly onNodeEvent?: (event: PodEvent) => void;
  /** Milliseconds clock, replaceable in tests. */
  readonly now?: () => number;
  /** Where the periods are timed (node mode: the process's timer wheel); default: its own timers. */
  readonly scheduler?: { schedule(fn: () => void, delayMs: number): { cancel(): void } };
}

/** setTimeout as a scheduler; unref'd, so a collection never keeps a process alive. */
const timeoutScheduler = {
  schedule(fn: () => void, delayMs: number): { cancel(): void } {
    const timer = setTimeout(fn, delayMs);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

const nanosToMs = (ns: string | number): number => Number(BigInt(ns) / 1_000_000n);
const ContainerRunning = 1;
const ContainerUnknown = 3;
const SandboxReady = 0;

export class GarbageCollector {
  /** imageRecords: first seen and last used, by image id; kept between collections. */
  private readonly records = new Map<string, { firstDetectedMs: number; lastUsedMs: number }>();
  private readonly tasks = new Map<string, { cancel(): void }>();
  private stopped = false;
  private imageFailedBefore = false;
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cri: CriClient,
    private readonly options: GarbageCollectorOptions,
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private get call(): { timeoutMs: number } {
    return { timeoutMs: this.options.callTimeoutMs ?? 30_000 };
  }

  private event(reason: string, message: string): void {
    this.options.onNodeEvent?.({ type: 'Warning', reason, message });
  }

  /** Starts both periodic collections (the first of each after one period, as wait.Until's jitterless loop). */
  start(): void {
    const scheduler = this.options.scheduler ?? timeoutScheduler;
    const every = (ms: number, run: () => Promise<unknown>): void => {
      const name = `${ms}:${this.tasks.size}`;
      const next = (): void => {
        if (this.stopped) return;
        this.tasks.set(
          name,
          scheduler.schedule(() => {
            if (this.stopped) return;
            // One collection at a time: a slow one is not overtaken by the next period.
            this.running = this.running.then(run, run).then(next);
          }, ms),
        );
      };
      next();
    };
    every(this.options.containerPeriodMs ?? 60_000, () => this.collectContainers().catch((err: unknown) => this.event('ContainerGCFailed', errorText(err))));
    const policy = this.options.imagePolicy ?? defaultImageGcPolicy;
    if (policy.highThresholdPercent === 100) return;
    every(this.options.imagePeriodMs ?? 300_000, () =>
      this.collectImages().then(
        () => {
          this.imageFailedBefore = false;
        },
        (err: unknown) => {
          // Only repeated failures become an event: the first may be stats not ready yet.
          if (this.imageFailedBefore) this.event('ImageGCFailed', errorText(err));
          this.imageFailedBefore = true;
        },
      ),
    );
  }

  /** Stops the timers and waits for a collection under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const task of this.tasks.values()) task.cancel();
    this.tasks.clear();
    await this.running.catch(() => undefined);
  }

  /** One container collection: dead containers, then sandboxes left without any. Returns what went. */
  async collectContainers(): Promise<{ containers: string[]; sandboxes: string[] }> {
    const listed = (await unaryCall(this.cri.runtime, 'ListContainers', {}, this.call)).containers;
    const containers: GcContainer[] = listed
      .filter((c) => c.labels[KubernetesPodUIDLabel] !== undefined && c.labels[KubernetesContainerNameLabel] !== undefined)
      .map((c) => ({
        id: c.id,
        podUid: c.labels[KubernetesPodUIDLabel]!,
        name: c.labels[KubernetesContainerNameLabel]!,
        sandboxId: c.pod_sandbox_id,
        running: c.state === ContainerRunning,
        unknown: c.state === ContainerUnknown,
        createdAtMs: nanosToMs(c.created_at),
      }));
    const sandboxes: GcSandbox[] = (await unaryCall(this.cri.runtime, 'ListPodSandbox', {}, this.call)).items
      .filter((s) => s.labels[KubernetesPodUIDLabel] !== undefined)
      .map((s) => ({ id: s.id, podUid: s.labels[KubernetesPodUIDLabel]!, ready: s.state === SandboxReady, createdAtMs: nanosToMs(s.created_at) }));
    // Containers the kubelet does not manage still keep their sandbox.
    const others = listed.filter((c) => c.labels[KubernetesPodUIDLabel] === undefined).map((c) => ({ id: c.id, podUid: '', name: '', sandboxId: c.pod_sandbox_id, running: true, unknown: false, createdAtMs: 0 }));
    const decision = containersToRemove([...containers, ...others], sandboxes, this.options.containerPolicy ?? defaultContainerGcPolicy, this.now(), this.options.podRemoved ?? (() => false));
    const removed: string[] = [];
    for (const c of decision.containers) {
      // A container in an unknown state may still run: stopped first, as removeOldestN does.
      if (c.unknown) await this.ignoreNotFound(unaryCall(this.cri.runtime, 'StopContainer', { container_id: c.id, timeout: '0' }, this.call));
      if (await this.ignoreNotFound(unaryCall(this.cri.runtime, 'RemoveContainer', { container_id: c.id }, this.call))) removed.push(c.id);
    }
    const removedSandboxes: string[] = [];
    for (const id of decision.sandboxes) {
      await this.ignoreNotFound(unaryCall(this.cri.runtime, 'StopPodSandbox', { pod_sandbox_id: id }, this.call));
      if (await this.ignoreNotFound(unaryCall(this.cri.runtime, 'RemovePodSandbox', { pod_sandbox_id: id }, this.call))) removedSandboxes.push(id);
    }
    return { containers: removed, sandboxes: removedSandboxes };
  }

  /** One image collection (GarbageCollect's space branch). Returns the removed image ids. */
  async collectImages(): Promise<string[]> {
    const now = this.now();
    const images = (await unaryCall(this.cri.image, 'ListImages', {}, this.call)).images;
    // detectImages: an image is in use while any container, running or not, was made from it.
    const containers = (await unaryCall(this.cri.runtime, 'ListContainers', {}, this.call)).containers;
    const inUse = new Set<string>();
    for (const c of containers) for (const ref of [c.image_ref, c.image?.image ?? '']) if (ref !== '') inUse.add(ref);
    const used = (id: string, tags: readonly string[]): boolean => inUse.has(id) || tags.some((t) => inUse.has(t));
    const seen = new Set<string>();
    const records: ImageRecord[] = [];
    for (const image of images) {
      seen.add(image.id);
      const record = this.records.get(image.id) ?? { firstDetectedMs: now, lastUsedMs: 0 };
      if (used(image.id, image.repo_tags)) record.lastUsedMs = now;
      this.records.set(image.id, record);
      records.push({ id: image.id, sizeBytes: Number(image.size), pinned: image.pinned, ...record });
    }
    for (const id of this.records.keys()) if (!seen.has(id)) this.records.delete(id);
    const inUseIds = new Set(images.filter((i) => used(i.id, i.repo_tags)).map((i) => i.id));

    const fs = (await unaryCall(this.cri.image, 'ImageFsInfo', {}, this.call)).image_filesystems;
    const usedBytes = fs.reduce((n, f) => n + Number(f.used_bytes?.value ?? 0), 0);
    const capacity = this.options.imageFsCapacityBytes;
    const decision = imagesToRemove(records, inUseIds, { capacityBytes: capacity, availableBytes: Math.max(0, capacity - usedBytes) }, this.options.imagePolicy ?? defaultImageGcPolicy, now);
    if (decision.kind === 'invalid-capacity') {
      this.event('InvalidDiskCapacity', decision.message);
      throw new Error(decision.message);
    }
    if (decision.kind === 'nothing') return [];
    const removed: string[] = [];
    const failures: string[] = [];
    let freed = 0;
    for (const image of decision.images) {
      try {
        await unaryCall(this.cri.image, 'RemoveImage', { image: { image: image.id } }, this.call);
        this.records.delete(image.id);
        removed.push(image.id);
        freed += image.sizeBytes;
      } catch (err) {
        failures.push(grpcErrorString(err));
      }
    }
    if (failures.length > 0) {
      throw new Error(`wanted to free ${decision.bytesToFree} bytes, but freed ${freed} bytes space with errors in image deletion: ${failures.length === 1 ? failures[0] : `[${failures.join(', ')}]`}`);
    }
    if (freed < decision.bytesToFree) {
      const message = freeDiskSpaceFailedMessage(decision.bytesToFree, freed);
      this.event('FreeDiskSpaceFailed', message);
      throw new Error(message);
    }
    return removed;
  }

  /** true when the call succeeded; false when the object was gone already (NotFound). */
  private async ignoreNotFound(call: Promise<unknown>): Promise<boolean> {
    try {
      await call;
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

const errorText = (err: unknown): string => (typeof (err as { code?: unknown }).code === 'number' ? grpcErrorString(err) : err instanceof Error ? err.message : String(err));
