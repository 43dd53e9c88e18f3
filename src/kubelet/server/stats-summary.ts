/**
 * /stats/summary: the Summary API (k8s.io/kubelet/pkg/apis/stats/v1alpha1 types.go, v0.34)
 * built from the runtime's CRI stats, as the kubelet's CRI stats provider does
 * (pkg/kubelet/stats/cri_stats_provider.go and its Windows half, v1.34): one PodStats per ready
 * sandbox (ListPodSandboxStats), start times from ListPodSandbox/ListContainers created_at,
 * the image filesystem from ImageFsInfo. A simulated node has no cAdvisor: the node's CPU,
 * memory and network figures are the sums over its pods (our own rule), its memory available is
 * the node's capacity less that sum, and no system containers are reported.
 */
import { unaryCall, type CriClient } from '../../cri/proto.js';
import type { PodSandboxStats__Output } from '../../generated/runtime/v1/PodSandboxStats.js';
import type { UInt64Value__Output } from '../../generated/runtime/v1/UInt64Value.js';

type Uint = number | undefined;

export interface CpuStats { time: string; usageNanoCores?: number; usageCoreNanoSeconds?: number }
export interface MemoryStats { time: string; availableBytes?: number; usageBytes?: number; workingSetBytes?: number; rssBytes?: number; pageFaults?: number; majorPageFaults?: number }
export interface InterfaceStats { name: string; rxBytes?: number; rxErrors?: number; txBytes?: number; txErrors?: number }
export interface NetworkStats extends InterfaceStats { time: string; interfaces?: InterfaceStats[] }
export interface FsStats { time: string; availableBytes?: number; capacityBytes?: number; usedBytes?: number; inodesFree?: number; inodes?: number; inodesUsed?: number }
export interface ContainerStats { name: string; startTime: string; cpu?: CpuStats; memory?: MemoryStats; rootfs?: FsStats; logs?: FsStats }
export interface PodStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerStats[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  'ephemeral-storage'?: FsStats;
  process_stats?: { process_count?: number };
}
export interface NodeStats {
  nodeName: string;
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  fs?: FsStats;
  runtime?: { imageFs?: FsStats; containerFs?: FsStats };
}
export interface Summary { node: NodeStats; pods: PodStats[] }

export interface NodeFigures {
  readonly nodeName: string;
  /** When the node started (metav1.Time). */
  readonly startTime: Date;
  /** Memory capacity of the node in bytes, for availableBytes. */
  readonly memoryCapacityBytes?: number;
}

/** metav1.Time: RFC3339 at second precision, UTC. */
export function rfc3339(nanos: string | bigint): string {
  const ms = Number(BigInt(nanos) / 1_000_000n);
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const u = (v: UInt64Value__Output | null | undefined): Uint => (v === null || v === undefined ? undefined : Number(v.value));

/** Drops undefined members, so the JSON has what omitempty would leave. */
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function podStats(s: PodSandboxStats__Output, sandboxCreatedAt: Map<string, string>, containerCreatedAt: Map<string, string>): PodStats | undefined {
  const a = s.attributes;
  if (a === null || a.metadata === null) return undefined;
  const startTime = rfc3339(sandboxCreatedAt.get(a.id) ?? '0');
  const pod: PodStats = { podRef: { name: a.metadata.name, namespace: a.metadata.namespace, uid: a.metadata.uid }, startTime, containers: [] };
  const w = s.windows;
  const l = s.linux;
  const cpu = w?.cpu ?? l?.cpu ?? null;
  if (cpu !== null) pod.cpu = compact({ time: rfc3339(cpu.timestamp), usageNanoCores: u(cpu.usage_nano_cores), usageCoreNanoSeconds: u(cpu.usage_core_nano_seconds) });
  if (w?.memory) {
    pod.memory = compact({ time: rfc3339(w.memory.timestamp), availableBytes: u(w.memory.available_bytes), usageBytes: u(w.memory.commit_memory_bytes), workingSetBytes: u(w.memory.working_set_bytes), pageFaults: u(w.memory.page_faults) });
  } else if (l?.memory) {
    pod.memory = compact({ time: rfc3339(l.memory.timestamp), availableBytes: u(l.memory.available_bytes), usageBytes: u(l.memory.usage_bytes), workingSetBytes: u(l.memory.working_set_bytes), rssBytes: u(l.memory.rss_bytes), pageFaults: u(l.memory.page_faults), majorPageFaults: u(l.memory.major_page_faults) });
  }
  if (w?.network) {
    const iface = (i: { name: string; rx_bytes: UInt64Value__Output | null; tx_bytes: UInt64Value__Output | null }): InterfaceStats => compact({ name: i.name, rxBytes: u(i.rx_bytes), txBytes: u(i.tx_bytes) });
    const d = w.network.default_interface;
    pod.network = compact({ time: rfc3339(w.network.timestamp), ...(d ? iface(d) : { name: '' }), interfaces: w.network.interfaces.length > 0 ? w.network.interfaces.map(iface) : d ? [iface(d)] : undefined });
  } else if (l?.network) {
    const iface = (i: { name: string; rx_bytes: UInt64Value__Output | null; rx_errors: UInt64Value__Output | null; tx_bytes: UInt64Value__Output | null; tx_errors: UInt64Value__Output | null }): InterfaceStats =>
      compact({ name: i.name, rxBytes: u(i.rx_bytes), rxErrors: u(i.rx_errors), txBytes: u(i.tx_bytes), txErrors: u(i.tx_errors) });
    const d = l.network.default_interface;
    pod.network = compact({ time: rfc3339(l.network.timestamp), ...(d ? iface(d) : { name: '' }), interfaces: l.network.interfaces.length > 0 ? l.network.interfaces.map(iface) : d ? [iface(d)] : undefined });
  }
  const processCount = u(w?.process?.process_count ?? l?.process?.process_count);
  if (processCount !== undefined) pod.process_stats = { process_count: processCount };

  let ephemeral = 0;
  let ephemeralTime: string | undefined;
  for (const c of w?.containers ?? l?.containers ?? []) {
    const ca = c.attributes;
    if (ca === null || ca.metadata === null) continue;
    const container: ContainerStats = { name: ca.metadata.name, startTime: rfc3339(containerCreatedAt.get(ca.id) ?? '0') };
    if (c.cpu) container.cpu = compact({ time: rfc3339(c.cpu.timestamp), usageNanoCores: u(c.cpu.usage_nano_cores), usageCoreNanoSeconds: u(c.cpu.usage_core_nano_seconds) });
    if (c.memory) {
      const m = c.memory as { timestamp: string; working_set_bytes?: UInt64Value__Output | null; available_bytes?: UInt64Value__Output | null; usage_bytes?: UInt64Value__Output | null; commit_memory_bytes?: UInt64Value__Output | null; rss_bytes?: UInt64Value__Output | null; page_faults?: UInt64Value__Output | null; major_page_faults?: UInt64Value__Output | null };
      container.memory = compact({ time: rfc3339(m.timestamp), availableBytes: u(m.available_bytes), usageBytes: u(m.usage_bytes ?? m.commit_memory_bytes), workingSetBytes: u(m.working_set_bytes), rssBytes: u(m.rss_bytes), pageFaults: u(m.page_faults), majorPageFaults: u(m.major_page_faults) });
    }
    if (c.writable_layer) {
      const used = u(c.writable_layer.used_bytes);
      container.rootfs = compact({ time: rfc3339(c.writable_layer.timestamp), usedBytes: used });
      ephemeral += used ?? 0;
      ephemeralTime ??= container.rootfs.time;
    }
    pod.containers.push(container);
  }
  pod.containers.sort((x, y) => x.name.localeCompare(y.name));
  if (ephemeralTime !== undefined) pod['ephemeral-storage'] = { time: ephemeralTime, usedBytes: ephemeral };
  return pod;
}

/** The Summary of the node right now; onlyCpuAndMemory drops the rest, as GetCPUAndMemoryStats does. */
export async function statsSummary(cri: CriClient, node: NodeFigures, callTimeoutMs: number, onlyCpuAndMemory = false): Promise<Summary> {
  const call = { timeoutMs: callTimeoutMs };
  const [sandboxStats, sandboxes, containers, imageFs] = await Promise.all([
    unaryCall(cri.runtime, 'ListPodSandboxStats', {}, call),
    unaryCall(cri.runtime, 'ListPodSandbox', {}, call),
    unaryCall(cri.runtime, 'ListContainers', {}, call),
    onlyCpuAndMemory ? Promise.resolve(undefined) : unaryCall(cri.image, 'ImageFsInfo', {}, call),
  ]);
  const sandboxCreatedAt = new Map(sandboxes.items.map((s) => [s.id, s.created_at]));
  const containerCreatedAt = new Map(containers.containers.map((c) => [c.id, c.created_at]));
  const pods = sandboxStats.stats.map((s) => podStats(s, sandboxCreatedAt, containerCreatedAt)).filter((p): p is PodStats => p !== undefined);
  pods.sort((x, y) => `${x.podRef.namespace}/${x.podRef.name}`.localeCompare(`${y.podRef.namespace}/${y.podRef.name}`));

  const now = rfc3339(BigInt(Date.now()) * 1_000_000n);
  let nanoCores = 0;
  let coreNanos = 0;
  let workingSet = 0;
  let rx = 0;
  let tx = 0;
  for (const p of pods) {
    nanoCores += p.cpu?.usageNanoCores ?? 0;
    coreNanos += p.cpu?.usageCoreNanoSeconds ?? 0;
    workingSet += p.memory?.workingSetBytes ?? 0;
    rx += p.network?.rxBytes ?? 0;
    tx += p.network?.txBytes ?? 0;
  }
  const nodeStats: NodeStats = {
    nodeName: node.nodeName,
    startTime: node.startTime.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    cpu: { time: now, usageNanoCores: nanoCores, usageCoreNanoSeconds: coreNanos },
    memory: compact({
      time: now,
      availableBytes: node.memoryCapacityBytes !== undefined ? Math.max(0, node.memoryCapacityBytes - workingSet) : undefined,
      usageBytes: workingSet,
      workingSetBytes: workingSet,
    }),
  };
  if (onlyCpuAndMemory) {
    return {
      node: nodeStats,
      pods: pods.map((p) => compact({
        podRef: p.podRef, startTime: p.startTime, cpu: p.cpu, memory: p.memory,
        containers: p.containers.map((c) => compact({ name: c.name, startTime: c.startTime, cpu: c.cpu, memory: c.memory })),
      })),
    };
  }
  nodeStats.network = { time: now, name: 'Ethernet', rxBytes: rx, txBytes: tx, interfaces: [{ name: 'Ethernet', rxBytes: rx, txBytes: tx }] };
  const fs = imageFs?.image_filesystems[0];
  if (fs) {
    const imageFsStats = compact<FsStats>({ time: rfc3339(fs.timestamp), usedBytes: u(fs.used_bytes), inodesUsed: u(fs.inodes_used) });
    nodeStats.fs = imageFsStats;
    const containerFs = imageFs?.container_filesystems[0];
    nodeStats.runtime = { imageFs: imageFsStats, containerFs: containerFs ? compact<FsStats>({ time: rfc3339(containerFs.timestamp), usedBytes: u(containerFs.used_bytes), inodesUsed: u(containerFs.inodes_used) }) : imageFsStats };
  }
  return { node: nodeStats, pods };
}
