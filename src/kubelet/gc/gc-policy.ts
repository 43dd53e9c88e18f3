/**
 * What the kubelet's garbage collection removes, as pure decisions over what the runtime lists
 * (kubernetes v1.34): containers and sandboxes as pkg/kubelet/kuberuntime/kuberuntime_gc.go
 * decides (evictableContainers, evictContainers, evictSandboxes), images as
 * pkg/kubelet/images/image_gc_manager.go does (imagesInEvictionOrder, GarbageCollect, freeSpace).
 * The collector (garbage-collector.ts) lists, calls these and removes what they name.
 */

/** kubecontainer.GCPolicy and the flags that set it. */
export interface ContainerGcPolicy {
  /** --minimum-container-ttl-duration (0): a dead container younger than this is kept. */
  readonly minAgeMs: number;
  /** --maximum-dead-containers-per-container (1); negative: no limit. */
  readonly maxPerPodContainer: number;
  /** --maximum-dead-containers (-1: no limit). */
  readonly maxContainers: number;
}

export const defaultContainerGcPolicy: ContainerGcPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

/** images.ImageGCPolicy and the flags that set it. */
export interface ImageGcPolicy {
  /** --image-gc-high-threshold (85): usage at or above this percentage triggers a collection. */
  readonly highThresholdPercent: number;
  /** --image-gc-low-threshold (80): the collection frees space down to this percentage. */
  readonly lowThresholdPercent: number;
  /** --minimum-image-ttl-duration (2m): an image first seen less than this ago is kept. */
  readonly minAgeMs: number;
}

export const defaultImageGcPolicy: ImageGcPolicy = { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000 };

/** A container as ListContainers reports it, with the kubelet's labels read. */
export interface GcContainer {
  readonly id: string;
  readonly podUid: string;
  readonly name: string;
  readonly sandboxId: string;
  readonly running: boolean;
  /** CONTAINER_UNKNOWN: stopped before it is removed. */
  readonly unknown: boolean;
  readonly createdAtMs: number;
}

export interface GcSandbox {
  readonly id: string;
  readonly podUid: string;
  readonly ready: boolean;
  readonly createdAtMs: number;
}

export interface ContainerGcDecision {
  readonly containers: readonly GcContainer[];
  readonly sandboxes: readonly string[];
}

/** byCreated: newest first. */
const newestFirst = <T extends { createdAtMs: number }>(list: T[]): T[] => list.sort((a, b) => b.createdAtMs - a.createdAtMs);

/**
 * evictContainers and evictSandboxes: the dead containers (not running, old enough) grouped by pod
 * and container name; all of a removed pod's; then at most maxPerPodContainer per group (newest
 * kept); then, over maxContainers in all, an equal share per group (at least 1), then the oldest
 * across groups. Sandboxes: of each pod, every inactive one (not ready, no containers left) but
 * the newest, all of them for a removed pod.
 */
export function containersToRemove(
  containers: readonly GcContainer[],
  sandboxes: readonly GcSandbox[],
  policy: ContainerGcPolicy,
  nowMs: number,
  podRemoved: (uid: string) => boolean,
): ContainerGcDecision {
  const units = new Map<string, GcContainer[]>();
  const newestGcTime = nowMs - policy.minAgeMs;
  for (const c of containers) {
    if (c.running || c.createdAtMs > newestGcTime) continue;
    const key = `${c.podUid}\u0000${c.name}`;
    units.set(key, [...(units.get(key) ?? []), c]);
  }
  const removed: GcContainer[] = [];
  /** removeOldestN: sorted newest first, the last `count` go. */
  const removeOldest = (list: GcContainer[], count: number): GcContainer[] => {
    const keep = Math.max(0, list.length - count);
    newestFirst(list);
    removed.push(...list.slice(keep));
    return list.slice(0, keep);
  };
  for (const [key, unit] of units) {
    if (podRemoved(unit[0]!.podUid)) {
      removeOldest(unit, unit.length);
      units.delete(key);
    }
  }
  const enforcePerUnit = (max: number): void => {
    for (const [key, unit] of units) if (unit.length > max) units.set(key, removeOldest(unit, unit.length - max));
  };
  if (policy.maxPerPodContainer >= 0) enforcePerUnit(policy.maxPerPodContainer);
  const total = (): number => [...units.values()].reduce((n, u) => n + u.length, 0);
  if (policy.maxContainers >= 0 && total() > policy.maxContainers) {
    enforcePerUnit(Math.max(1, Math.floor(policy.maxContainers / units.size)));
    const count = total();
    if (count > policy.maxContainers) removeOldest([...units.values()].flat(), count - policy.maxContainers);
  }

  // Sandboxes, with the containers that will remain in mind (a sandbox is active while it has any).
  const gone = new Set(removed.map((c) => c.id));
  const withContainers = new Set(containers.filter((c) => !gone.has(c.id)).map((c) => c.sandboxId));
  const byPod = new Map<string, GcSandbox[]>();
  for (const s of sandboxes) byPod.set(s.podUid, [...(byPod.get(s.podUid) ?? []), s]);
  const sandboxIds: string[] = [];
  for (const [uid, list] of byPod) {
    newestFirst(list);
    const keep = podRemoved(uid) ? 0 : 1;
    for (const s of list.slice(keep)) if (!s.ready && !withContainers.has(s.id)) sandboxIds.push(s.id);
  }
  return { containers: removed, sandboxes: sandboxIds };
}

/** What the image GC manager remembers of an image (imageRecord). */
export interface ImageRecord {
  readonly id: string;
  readonly sizeBytes: number;
  readonly pinned: boolean;
  readonly firstDetectedMs: number;
  readonly lastUsedMs: number;
}

export interface ImageFsUsage {
  readonly capacityBytes: number;
  readonly availableBytes: number;
}

export type ImageGcDecision =
  | { readonly kind: 'nothing'; readonly usagePercent: number }
  | { readonly kind: 'invalid-capacity'; readonly message: string }
  | { readonly kind: 'free'; readonly usagePercent: number; readonly bytesToFree: number; readonly images: readonly ImageRecord[]; readonly bytesFreed: number };

/**
 * GarbageCollect's space branch: at or over the high threshold, free capacity × (100 − low) / 100 −
 * available bytes, taking unused, unpinned images least recently used first (ties: first detected
 * first), skipping those first seen less than minAge ago, until enough is freed.
 */
export function imagesToRemove(records: readonly ImageRecord[], inUse: ReadonlySet<string>, usage: ImageFsUsage, policy: ImageGcPolicy, nowMs: number): ImageGcDecision {
  const capacity = usage.capacityBytes;
  const available = Math.min(usage.availableBytes, capacity);
  if (capacity === 0) return { kind: 'invalid-capacity', message: 'invalid capacity 0 on image filesystem' };
  const usagePercent = 100 - Math.trunc((available * 100) / capacity);
  if (usagePercent < policy.highThresholdPercent) return { kind: 'nothing', usagePercent };
  const bytesToFree = Math.trunc((capacity * (100 - policy.lowThresholdPercent)) / 100) - available;
  const candidates = records
    .filter((r) => !inUse.has(r.id) && !r.pinned)
    .sort((a, b) => a.lastUsedMs - b.lastUsedMs || a.firstDetectedMs - b.firstDetectedMs);
  const chosen: ImageRecord[] = [];
  let freed = 0;
  for (const image of candidates) {
    if (freed >= bytesToFree) break;
    if (image.lastUsedMs >= nowMs) continue;
    if (nowMs - image.firstDetectedMs < policy.minAgeMs) continue;
    chosen.push(image);
    freed += image.sizeBytes;
  }
  return { kind: 'free', usagePercent, bytesToFree, images: chosen, bytesFreed: freed };
}

/** The FreeDiskSpaceFailed text (image_gc_manager.go GarbageCollect). */
export function freeDiskSpaceFailedMessage(bytesToFree: number, freed: number): string {
  return `Failed to garbage collect required amount of images. Attempted to free ${bytesToFree} bytes, but only found ${freed} bytes eligible to free.`;
}
