import { join } from 'node:path';
import type { ContainerStats } from '../generated/runtime/v1/ContainerStats.js';
import type { ContainerStatsRequest__Output } from '../generated/runtime/v1/ContainerStatsRequest.js';
import type { ContainerStatsResponse } from '../generated/runtime/v1/ContainerStatsResponse.js';
import type { ListContainerStatsRequest__Output } from '../generated/runtime/v1/ListContainerStatsRequest.js';
import type { ListContainerStatsResponse } from '../generated/runtime/v1/ListContainerStatsResponse.js';
import type { ListPodSandboxStatsRequest__Output } from '../generated/runtime/v1/ListPodSandboxStatsRequest.js';
import type { ListPodSandboxStatsResponse } from '../generated/runtime/v1/ListPodSandboxStatsResponse.js';
import type { PodSandboxStats } from '../generated/runtime/v1/PodSandboxStats.js';
import type { PodSandboxStatsRequest__Output } from '../generated/runtime/v1/PodSandboxStatsRequest.js';
import type { PodSandboxStatsResponse } from '../generated/runtime/v1/PodSandboxStatsResponse.js';
import { nanosToWire } from './clock.js';
import { recordFilter } from './container-status.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerState, type ContainerRecord } from './store/container-store.js';
import { SandboxState, type SandboxRecord } from './store/sandbox-store.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

/**
 * Simulated resource usage. CPU time grows with the time the init process has run times its
 * command's nominal load, plus the time exec'd commands ran; memory is a stable per-container
 * figure derived from the image; page faults and network counters grow with uptime. All
 * timestamps are the sampling time, so successive samples always advance.
 */

const u64 = (n: bigint | number): { value: string } => ({ value: BigInt(typeof n === 'number' ? Math.max(0, Math.round(n)) : n).toString() });

/** A stable number in [0, 1) from an id (FNV-1a), so figures differ between containers but not between samples. */
function jitter(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h >>> 0) / 2 ** 32;
}

export interface CpuSample {
  usageCoreNanos: bigint;
  usageNanoCores: number;
}

export function containerCpu(container: ContainerRecord, now: bigint): CpuSample {
  const { startedAtNanos, finishedAtNanos, state } = container.status;
  if (startedAtNanos === 0n) return { usageCoreNanos: container.live.execCpuNanos, usageNanoCores: 0 };
  const end = state === ContainerState.RUNNING || finishedAtNanos === 0n ? now : finishedAtNanos;
  const load = (container.live.process?.cpuLoad ?? 0.001) * (0.8 + 0.4 * jitter(container.id));
  const ran = end > startedAtNanos ? end - startedAtNanos : 0n;
  const usageCoreNanos = BigInt(Math.round(Number(ran) * load)) + container.live.execCpuNanos;
  const running = state === ContainerState.RUNNING;
  return { usageCoreNanos, usageNanoCores: running ? Math.round(load * 1e9) : 0 };
}

export function containerWorkingSet(container: ContainerRecord): number {
  if (container.status.state !== ContainerState.RUNNING) return 0;
  const base = container.os === 'windows' ? 48 * 1024 * 1024 : 2 * 1024 * 1024;
  return Math.round(base * (1 + jitter(container.id)) + container.processes.count(container.id) * 512 * 1024);
}

function memoryLimit(container: ContainerRecord): number {
  const linux = Number(container.resources?.linux?.memory_limit_in_bytes ?? 0);
  const windows = Number(container.resources?.windows?.memory_limit_in_bytes ?? 0);
  return linux > 0 ? linux : windows > 0 ? windows : 0;
}

export function buildContainerStats(ctx: RuntimeContext, container: ContainerRecord): ContainerStats {
  const now = ctx.clock.nowNanos();
  const ts = nanosToWire(now);
  const cpu = containerCpu(container, now);
  const workingSet = containerWorkingSet(container);
  const limit = memoryLimit(container);
  const uptimeSeconds = container.status.startedAtNanos === 0n ? 0 : Number((now - container.status.startedAtNanos) / 1_000_000_000n);
  const logBytes = container.live.logWriter?.bytesWritten ?? 0;
  return {
    attributes: {
      id: container.id,
      metadata: container.metadata,
      labels: container.labels,
      annotations: container.annotations,
    },
    cpu: { timestamp: ts, usage_core_nano_seconds: u64(cpu.usageCoreNanos), usage_nano_cores: u64(cpu.usageNanoCores) },
    memory: {
      timestamp: ts,
      working_set_bytes: u64(workingSet),
      ...(limit > 0 ? { available_bytes: u64(Math.max(0, limit - workingSet)) } : {}),
      usage_bytes: u64(workingSet * 1.25),
      rss_bytes: u64(workingSet * 0.8),
      page_faults: u64(workingSet === 0 ? 0 : 1200 + uptimeSeconds * 3),
      major_page_faults: u64(workingSet === 0 ? 0 : 4),
    },
    writable_layer: {
      timestamp: ts,
      fs_id: { mountpoint: join(ctx.settings.stateDir, 'containers') },
      used_bytes: u64(4096 + logBytes),
      inodes_used: u64(4),
    },
  };
}

function mustFindContainer(ctx: RuntimeContext, id: string): ContainerRecord {
  requireField(id, 'container_id');
  return ctx.containers.mustFind(id);
}

export function containerStats(ctx: RuntimeContext, req: ContainerStatsRequest__Output): ContainerStatsResponse {
  return { stats: buildContainerStats(ctx, mustFindContainer(ctx, req.container_id)) };
}

/** ListContainerStats: every container that is not exited (created and running), filtered. */
export function listContainerStats(ctx: RuntimeContext, req: ListContainerStatsRequest__Output): ListContainerStatsResponse {
  const containers = ctx.containers
    .list(recordFilter(ctx, req.filter))
    .filter((c) => c.status.state !== ContainerState.EXITED);
  return { stats: containers.map((c) => buildContainerStats(ctx, c)) };
}

export function buildPodSandboxStats(ctx: RuntimeContext, sandbox: SandboxRecord): PodSandboxStats {
  const now = ctx.clock.nowNanos();
  const ts = nanosToWire(now);
  const containers = ctx.containers.inGroup(sandbox.id).filter((c) => c.status.state === ContainerState.RUNNING);
  const containerStats = containers.map((c) => buildContainerStats(ctx, c));
  let cpuNanos = 0n;
  let nanoCores = 0;
  let workingSet = 0;
  for (const c of containers) {
    const cpu = containerCpu(c, now);
    cpuNanos += cpu.usageCoreNanos;
    nanoCores += cpu.usageNanoCores;
    workingSet += containerWorkingSet(c);
  }
  const ready = sandbox.status.state === SandboxState.READY;
  const uptime = ready ? Number((now - sandbox.createdAtNanos) / 1_000_000n) : 0;
  const processCount = containers.reduce((n, c) => n + c.processes.count(c.id), ready ? 1 : 0);
  const attributes = { id: sandbox.id, metadata: sandbox.config.metadata, labels: sandbox.labels, annotations: sandbox.annotations };
  const cpu = { timestamp: ts, usage_core_nano_seconds: u64(cpuNanos), usage_nano_cores: u64(nanoCores) };
  const rx = Math.round(uptime * 0.8);
  const tx = Math.round(uptime * 0.5);
  if (sandbox.os === 'windows') {
    return {
      attributes,
      windows: {
        cpu,
        memory: { timestamp: ts, working_set_bytes: u64(workingSet), commit_memory_bytes: u64(workingSet * 1.5), page_faults: u64(uptime / 100) },
        network: {
          timestamp: ts,
          default_interface: { name: 'Ethernet', rx_bytes: u64(rx), rx_packets_dropped: u64(0), tx_bytes: u64(tx), tx_packets_dropped: u64(0) },
          interfaces: [],
        },
        process: { timestamp: ts, process_count: u64(processCount) },
        containers: containerStats.map((s) => ({ attributes: s.attributes ?? null, cpu: s.cpu ?? null, memory: { timestamp: ts, working_set_bytes: s.memory?.working_set_bytes ?? null }, writable_layer: s.writable_layer ?? null })),
      },
    };
  }
  return {
    attributes,
    linux: {
      cpu,
      memory: { timestamp: ts, working_set_bytes: u64(workingSet), usage_bytes: u64(workingSet * 1.25), rss_bytes: u64(workingSet * 0.8) },
      network: {
        timestamp: ts,
        default_interface: { name: 'eth0', rx_bytes: u64(rx), rx_errors: u64(0), tx_bytes: u64(tx), tx_errors: u64(0) },
        interfaces: [],
      },
      process: { timestamp: ts, process_count: u64(processCount) },
      containers: containerStats,
    },
  };
}

export function podSandboxStats(ctx: RuntimeContext, req: PodSandboxStatsRequest__Output): PodSandboxStatsResponse {
  requireField(req.pod_sandbox_id, 'pod_sandbox_id');
  return { stats: buildPodSandboxStats(ctx, ctx.sandboxes.mustFind(req.pod_sandbox_id)) };
}

/** ListPodSandboxStats: ready sandboxes, filtered by id and labels. */
export function listPodSandboxStats(ctx: RuntimeContext, req: ListPodSandboxStatsRequest__Output): ListPodSandboxStatsResponse {
  const filter = recordFilter(ctx, req.filter);
  filter.state = SandboxState.READY;
  const sandboxes = ctx.sandboxes.list(filter);
  return { stats: sandboxes.map((s) => buildPodSandboxStats(ctx, s)) };
}

/** The RPCs this file serves (see rpc.ts). */
export const statsRpcs = { ContainerStats: containerStats, ListContainerStats: listContainerStats, PodSandboxStats: podSandboxStats, ListPodSandboxStats: listPodSandboxStats } satisfies RpcHandlers;
