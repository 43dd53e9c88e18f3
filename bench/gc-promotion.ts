/**
 * What a process's young-generation collections (scavenges) moved into the old generation: the
 * bytes of objects that outlived one. A request's objects should die young; what is promoted
 * instead makes every scavenge slower (it copies them) and brings the old generation's
 * collections, the longest pauses, sooner. Measured with V8's GC profiler (each collection's
 * space usage before and after it), so it costs nothing between collections.
 */
import { GCProfiler, type GCProfilerResult } from 'node:v8';

/** Where a scavenge puts what it promotes. */
const OLD_SPACES: ReadonlySet<string> = new Set(['old_space', 'large_object_space']);

export interface Promotion {
  scavenges: number;
  /** Bytes promoted by the scavenges, in all. */
  promotedBytes: number;
}

function oldSpaceUse(spaces: GCProfilerResult['statistics'][number]['afterGC']['heapSpaceStatistics']): number {
  let used = 0;
  for (const space of spaces) if (OLD_SPACES.has(space.spaceName)) used += space.spaceUsedSize;
  return used;
}

/** Sums, over the scavenges of a GC profile, how much the old generation grew during each. */
export function promotionOf(statistics: GCProfilerResult['statistics']): Promotion {
  let scavenges = 0;
  let promotedBytes = 0;
  for (const gc of statistics) {
    if (gc.gcType !== 'Scavenge') continue;
    scavenges++;
    // A scavenge only adds to the old spaces; a smaller figure afterwards is the concurrent
    // sweeper finishing meanwhile, not negative promotion.
    promotedBytes += Math.max(0, oldSpaceUse(gc.afterGC.heapSpaceStatistics) - oldSpaceUse(gc.beforeGC.heapSpaceStatistics));
  }
  return { scavenges, promotedBytes };
}

/** Counts this process's promotion from now until stop(). */
export function recordPromotion(): { stop(): Promotion } {
  const profiler = new GCProfiler();
  profiler.start();
  return { stop: () => promotionOf(profiler.stop().statistics) };
}
