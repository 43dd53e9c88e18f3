import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { startInitProcess } from './container-start.js';
import { CriLogWriter } from './logging/cri-log-writer.js';
import { isHostNetwork } from './network/host-network.js';
import { parseIpv4Cidr } from './network/pod-ip-pool.js';
import { ProcessTable } from '../emulator/process-table.js';
import { applyPodCidr } from './runtime-status.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerRecord, ContainerState } from './store/container-store.js';
import type { ImageRecord } from './store/image-store.js';
import type { MetadataDb } from './store/metadata-db.js';
import { decodeDomain, DOMAIN_RECORD_ID } from './store/domain-record.js';
import {
  CONTAINER_FIELDS,
  decodeStored,
  encodeContainer,
  encodeSandbox,
  IMAGE_FIELDS,
  NETWORK_FIELDS,
  NETWORK_RECORD_ID,
  SANDBOX_FIELDS,
  type StoredContainer,
  type StoredNetwork,
  type StoredSandbox,
} from './store/record-codec.js';
import { SandboxState, type SandboxRecord } from './store/sandbox-store.js';

/** containerd v2.2.7, internal/cri/server/restart.go: a container whose task is gone after a restart. */
export const UNKNOWN_EXIT_CODE = 255;
export const UNKNOWN_EXIT_REASON = 'Unknown';

export interface RecoveryReport {
  images: number;
  sandboxes: number;
  containers: number;
  /** Containers whose process was re-created (running before the restart). */
  resumed: number;
  /** Records that could not be read: logged with their id and left in the store, unused. */
  skipped: { kind: string; id: string; reason: string }[];
  /** The highest simulated host pid of a reloaded record (new ones are handed out above it). */
  maxHostPid: number;
  /** Host ports of READY sandboxes listening again; sandboxes whose host ports could not be bound. */
  hostPorts: number;
  hostPortFailures: number;
  /** The pod range in use when UpdateRuntimeConfig had set one before the restart. */
  podCidr?: string;
  /** The live domain's generation when a changed domain was reloaded. */
  domainGeneration?: number;
}

/**
 * Reloads what the metadata store holds into the runtime's stores (a runtime start on a state
 * directory used before), as containerd's CRI plugin recovers its sandboxes and containers:
 * - images, sandboxes and containers come back with their ids, names, configs, IPs, times and
 *   exit codes;
 * - a container that was RUNNING keeps running: its simulated process is re-created with its
 *   original start time and its log is appended to (the simulator's processes die with the
 *   runtime, where containerd's live on in their shims); unless `reboot`, which says the node
 *   restarted: every container that was not EXITED becomes EXITED with exit code 255 and reason
 *   `Unknown` (containerd's `restart.go` for a container whose task is gone) and every sandbox
 *   NOTREADY;
 * - a start or removal cut short by the crash is forgotten (`starting`/`removing` cleared, the
 *   kubelet retries); a CREATED container can still be started with its credential spec.
 * A record that cannot be read is logged with its kind and id and skipped.
 */
export async function recoverState(ctx: RuntimeContext, db: MetadataDb, reboot: boolean): Promise<RecoveryReport> {
  const report: RecoveryReport = { images: 0, sandboxes: 0, containers: 0, resumed: 0, skipped: [], maxHostPid: 0, hostPorts: 0, hostPortFailures: 0 };
  const skip = (kind: string, id: string, err: unknown): void => {
    const reason = err instanceof Error ? err.message : String(err);
    report.skipped.push({ kind, id, reason });
    ctx.logger.error({ kind, id, reason }, 'skipped a stored record the runtime cannot read');
  };
  const now = ctx.clock.nowNanos();
  let maxPid = 1000;

  for (const row of db.rows('image')) {
    try {
      const stored = decodeStored<ImageRecord & { v: number }>(row.id, row.data, IMAGE_FIELDS);
      const { v: _v, ...image } = stored;
      ctx.images.restore(image);
      report.images++;
    } catch (err) {
      skip('image', row.id, err);
    }
  }

  // The pod CIDRs UpdateRuntimeConfig set before the restart: containerd v2 writes the kubelet's
  // pod CIDR into a CNI config file (internal/cri/server/update_runtime_config.go), which outlives
  // a restart and a reboot alike, so the kept range wins over `--pod-cidr`.
  for (const row of db.rows('meta')) {
    if (row.id === DOMAIN_RECORD_ID) {
      // The live domain as the last apply left it (`ad apply`, a scenario): an AD does not go back
      // to the node file's state because a node's runtime restarted. Checked as an apply is.
      try {
        const stored = decodeDomain(row.data);
        ctx.windows.domain.restore({ generation: stored.generation, document: stored.document, source: stored.source, appliedAtMs: stored.appliedAtMs });
        report.domainGeneration = stored.generation;
      } catch (err) {
        skip('meta', row.id, err);
      }
      continue;
    }
    if (row.id !== NETWORK_RECORD_ID) continue;
    try {
      const stored = decodeStored<StoredNetwork>(row.id, row.data, NETWORK_FIELDS);
      const ranges = [stored.podCidr, stored.kubeletPodCidr].filter((text) => text !== '');
      const cidrs = ranges.map((text) => {
        const cidr = typeof text === 'string' ? parseIpv4Cidr(text) : undefined;
        if (cidr === undefined) throw new Error(`pod CIDR ${JSON.stringify(text)} is not an IPv4 CIDR`);
        return cidr;
      });
      for (const cidr of cidrs) applyPodCidr(ctx.network, cidr);
      report.podCidr = ctx.network.podIps.range;
    } catch (err) {
      skip('meta', row.id, err);
    }
  }

  const rebooted: SandboxRecord[] = [];
  const ready: SandboxRecord[] = [];
  for (const row of db.rows('sandbox')) {
    try {
      const s = decodeStored<StoredSandbox>(row.id, row.data, SANDBOX_FIELDS);
      const status = reboot && s.status.state === SandboxState.READY ? { state: SandboxState.NOTREADY, stoppedAtNanos: now } : s.status;
      const processes = new ProcessTable();
      // The pause process lives as long as the sandbox is READY (StopPodSandbox removes it).
      if (status.state === SandboxState.READY) {
        processes.add({ pid: processes.allocatePid(), comm: 'pause', argv: s.ociSpec.process.args, startedAtNanos: s.createdAtNanos, cpuLoad: 0.00001, group: s.id, kill: () => undefined });
      }
      const record: SandboxRecord = {
        id: s.id,
        name: s.name,
        config: s.config,
        labels: s.config.labels,
        annotations: s.config.annotations,
        runtimeHandler: s.runtimeHandler,
        os: s.os,
        createdAtNanos: s.createdAtNanos,
        hostname: s.hostname,
        ip: s.ip,
        pid: s.pid,
        logDirectory: s.logDirectory,
        ociSpec: s.ociSpec,
        platform: s.platform,
        processes,
        resources: s.resources,
        status,
      };
      ctx.sandboxes.names.reserve(record.name, record.id);
      ctx.sandboxes.add(record);
      if (status !== s.status) rebooted.push(record);
      else if (status.state === SandboxState.READY) ready.push(record);
      maxPid = Math.max(maxPid, s.pid);
      report.sandboxes++;
    } catch (err) {
      skip('sandbox', row.id, err);
    }
  }

  const changed: ContainerRecord[] = [];
  const running: ContainerRecord[] = [];
  for (const row of db.rows('container')) {
    try {
      const c = decodeStored<StoredContainer>(row.id, row.data, CONTAINER_FIELDS);
      const sandbox = ctx.sandboxes.get(c.sandboxId);
      if (sandbox === undefined) throw new Error(`its pod sandbox ${c.sandboxId} is not in the store`);
      const record = new ContainerRecord(c, sandbox, c.sharesPodPid ? sandbox.processes : new ProcessTable());
      // A start or removal the crash cut short answered nothing: the kubelet retries it.
      let status = { ...c.status, starting: false, removing: false };
      const wasActive = c.status.state === ContainerState.RUNNING || c.status.state === ContainerState.UNKNOWN;
      if (reboot && (wasActive || c.status.state === ContainerState.CREATED)) {
        status = { ...status, state: ContainerState.EXITED, exitCode: UNKNOWN_EXIT_CODE, reason: UNKNOWN_EXIT_REASON, message: '', finishedAtNanos: now, pid: 0 };
      } else if (c.status.state === ContainerState.CREATED && c.status.starting) {
        status = { ...status, state: ContainerState.CREATED, pid: 0 };
      }
      record.status = status;
      const config = { ...c.config, labels: c.labels, annotations: c.annotations, metadata: c.metadata, image: c.imageSpec };
      ctx.containers.names.reserve(record.name, record.id);
      ctx.containers.add(record, config);
      if (status.starting !== c.status.starting || status.removing !== c.status.removing || status.state !== c.status.state) changed.push(record);
      if (status.state === ContainerState.RUNNING) running.push(record);
      maxPid = Math.max(maxPid, status.pid);
      report.containers++;
    } catch (err) {
      skip('container', row.id, err);
    }
  }

  // A READY sandbox keeps its network (the CNI's state outlives containerd's restart): its pod IP
  // stays taken, so the pool never hands it out again, and its host ports listen again. A
  // sandbox the reboot made NOTREADY has neither (its network went with the node).
  for (const sandbox of ready) {
    if (sandbox.ip !== '' && !ctx.network.podIps.reserve(sandbox.ip)) {
      ctx.logger.error({ podSandboxId: sandbox.id, ip: sandbox.ip }, 'a reloaded sandbox\'s pod IP is held by another sandbox');
    }
    // A sandbox in the node's network has no pod network to restore (containerd's getNetNS loads
    // none for it), and so no host ports of the portmap plugin.
    if (isHostNetwork(sandbox.config)) continue;
    try {
      await ctx.network.hostPorts.bind(sandbox, sandbox.config.port_mappings, () => undefined);
      report.hostPorts += sandbox.config.port_mappings.filter((m) => m.host_port > 0 && m.protocol === 0).length;
    } catch (err) {
      // Something else took the port while the runtime was down: the sandbox runs without it.
      ctx.logger.error({ err, podSandboxId: sandbox.id }, 'could not bind a reloaded sandbox\'s host ports again');
      report.hostPortFailures++;
    }
  }
  report.maxHostPid = maxPid;

  for (const container of running) {
    try {
      await resumeContainer(ctx, container);
      report.resumed++;
    } catch (err) {
      // The process cannot be re-created (a command the registry no longer has): its task is gone.
      ctx.logger.error({ err, containerId: container.id }, 'could not resume a running container');
      ctx.containers.updateStatus(container.id, (s) => ({ ...s, state: ContainerState.EXITED, exitCode: UNKNOWN_EXIT_CODE, reason: UNKNOWN_EXIT_REASON, finishedAtNanos: now, pid: 0 }));
      changed.push(container);
    }
  }
  // What recovery changed is written back (the listeners are attached after it).
  for (const sandbox of rebooted) db.changed('sandbox', sandbox.id, () => encodeSandbox(sandbox));
  for (const container of changed) db.changed('container', container.id, () => encodeContainer(container, ctx.containers.configOf(container)));
  return report;
}

/**
 * Re-creates a running container's init process, with its original start time, logging to its
 * file; a container whose config has `stdin: true` gets a new input channel (attach works again).
 */
async function resumeContainer(ctx: RuntimeContext, container: ContainerRecord): Promise<void> {
  const writer = await CriLogWriter.open(container.logPath, ctx.clock, ctx.onLogError, ctx.logFiles);
  try {
    const process = startInitProcess(ctx, container, writer, container.status.startedAtNanos);
    container.live.logWriter = writer;
    container.live.process = process;
    container.live.watch(process, container, ctx.onContainerExit);
  } catch (err) {
    await writer.close();
    throw err;
  }
}

/**
 * Removes the runtime-owned log directories (`pods/<sandbox id>`, `containers/<container id>`
 * under the state dir) that no reloaded record owns: what an ephemeral run or a record removed
 * before its directory left. Entries are looked at with lstat and removed as they are: a planted
 * symlink is removed itself, never followed. Returns how many were removed.
 */
export async function sweepRuntimeLogDirectories(ctx: RuntimeContext): Promise<number> {
  let removed = 0;
  for (const [dir, owned] of [
    ['pods', (id: string) => ctx.sandboxes.get(id) !== undefined],
    ['containers', (id: string) => ctx.containers.get(id) !== undefined],
  ] as const) {
    const root = join(ctx.settings.stateDir, dir);
    let names: string[];
    try {
      if (!(await lstat(root)).isDirectory()) {
        await rm(root, { force: true });
        continue;
      }
      names = await readdir(root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    for (const name of names) {
      const path = join(root, name);
      const isDir = (await lstat(path)).isDirectory();
      if (isDir && owned(name)) continue;
      await rm(path, { recursive: isDir, force: true });
      removed++;
    }
  }
  return removed;
}
