import { join } from 'node:path';
import { merged } from '../tuning/merged.js';
import type { RunPodSandboxRequest__Output } from '../generated/runtime/v1/RunPodSandboxRequest.js';
import type { RunPodSandboxResponse } from '../generated/runtime/v1/RunPodSandboxResponse.js';
import { CleanupStack } from './cleanup.js';
import { RuntimeError } from './errors.js';
import { ContainerEventType, publishEvent } from './events.js';
import { isHostNetwork } from './network/host-network.js';
import { composeSpec, withAnnotations, withHostname, withProcessArgs, withSysctls } from './oci/spec.js';
import type { RuntimeContext } from './runtime-context.js';
import { ProcessTable } from '../emulator/process-table.js';
import { windowsSandboxPlatform } from './flavors/windows-sandbox.js';
import { SandboxState, type SandboxRecord } from './store/sandbox-store.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

/** Where a sandbox's container logs go when its config names no log_directory. */
export const runtimeLogDirectory = (ctx: RuntimeContext, sandboxId: string): string => join(ctx.settings.stateDir, 'pods', sandboxId);

/** The pod's PID namespace with the sandbox's pause process as PID 1. */
function pauseNamespace(sandboxId: string, argv: string[], now: bigint): ProcessTable {
  const table = new ProcessTable();
  table.add({ pid: table.allocatePid(), comm: 'pause', argv, startedAtNanos: now, cpuLoad: 0.00001, group: sandboxId, kill: () => undefined });
  return table;
}

/**
 * RunPodSandbox: validates the config, reserves the sandbox name, gives the pod an IP (unless it
 * uses the node's network) and a hostname, and records a READY sandbox.
 */
export async function runPodSandbox(ctx: RuntimeContext, req: RunPodSandboxRequest__Output): Promise<RunPodSandboxResponse> {
  const config = req.config;
  // containerd v2.2.7, internal/cri/server/sandbox_run.go (a missing config has no metadata either).
  if (config === null || config.metadata === null) throw new RuntimeError('InvalidArgument', 'sandbox config must include metadata');
  const metadata = config.metadata;
  // The metadata is the pod's identity: crictl refuses a PodSandboxStatus without name,
  // namespace and uid, so a sandbox is never created without them.
  requireField(metadata.name, 'config.metadata.name');
  requireField(metadata.namespace, 'config.metadata.namespace');
  requireField(metadata.uid, 'config.metadata.uid');

  const cleanup = new CleanupStack();
  try {
    const id = ctx.random.newId();
    // One flat string (a template literal leaves a tree of parts the record would keep).
    const name = [metadata.name, metadata.namespace, metadata.uid, metadata.attempt].join('_');
    ctx.sandboxes.names.reserve(name, id);
    cleanup.defer(`release sandbox name ${name}`, () => ctx.sandboxes.names.release(name, id));
    // containerd 2.x internal/cri/server/sandbox_run.go around config.GetSandboxRuntime
    // (internal/cri/config/config.go); a plain error, so gRPC Unknown.
    if (!ctx.settings.runtimeHandlers.includes(req.runtime_handler)) {
      throw new RuntimeError('Unknown', `unable to get OCI runtime for sandbox "${id}": no runtime for "${req.runtime_handler}" is configured`);
    }

    const os = config.windows !== null ? 'windows' : ctx.settings.defaultSandboxOs;
    const hostname = config.hostname !== '' ? config.hostname : metadata.name;
    // A pod in the node's network gets no network of its own: containerd sets up the pod network
    // (CNI: an IP, and the portmap plugin's host ports) only when host networking was not
    // requested (internal/cri/server/sandbox_run.go, `if !hostNetwork(config)`). Its servers
    // listen on the node's address and ports directly (podListenAddress).
    let ip = '';
    if (!isHostNetwork(config)) {
      const podIp = ctx.network.podIps.allocate();
      ip = podIp;
      cleanup.defer(`release pod IP ${podIp}`, () => ctx.network.podIps.release(podIp));
      await ctx.network.hostPorts.bind({ id, name, ip }, config.port_mappings, (m) =>
        ctx.logger.warn({ podSandboxId: id, hostPort: m.host_port, protocol: m.protocol }, 'host port not bound: the simulator forwards TCP host ports only'));
      cleanup.defer(`release host ports of ${id}`, () => ctx.network.hostPorts.release(id));
    }
    const ociSpec = composeSpec(
      os,
      withProcessArgs(os === 'windows' ? ['c:\\windows\\system32\\cmd.exe', '/c', 'pause.exe'] : ['/pause']),
      withHostname(hostname),
      withAnnotations(merged(config.annotations, {
        'io.kubernetes.cri.container-type': 'sandbox',
        'io.kubernetes.cri.sandbox-id': id,
        'io.kubernetes.cri.sandbox-name': metadata.name,
        'io.kubernetes.cri.sandbox-namespace': metadata.namespace,
        'io.kubernetes.cri.sandbox-uid': metadata.uid,
      })),
      withSysctls(config.linux?.sysctls ?? {}),
      // The pause sandbox's Windows options as the runtime flavor writes them.
      ...(os === 'windows' ? ctx.flavor.sandboxSpecOpts(config) : []),
    );
    const record: SandboxRecord = {
      id,
      name,
      config,
      labels: config.labels,
      annotations: config.annotations,
      runtimeHandler: req.runtime_handler,
      os,
      createdAtNanos: ctx.clock.nowNanos(),
      hostname,
      ip,
      pid: ctx.nextHostPid(),
      logDirectory: config.log_directory !== '' ? config.log_directory : runtimeLogDirectory(ctx, id),
      ociSpec,
      platform: os === 'windows' ? windowsSandboxPlatform(config) : {},
      processes: pauseNamespace(id, ociSpec.process.args, ctx.clock.nowNanos()),
      resources: undefined,
      status: { state: SandboxState.READY, stoppedAtNanos: 0n },
    };
    ctx.sandboxes.add(record);
    await cleanup.done(ctx.logger);
    ctx.logger.info({ podSandboxId: id, name }, 'pod sandbox ready');
    publishEvent(ctx, id, id, ContainerEventType.CREATED);
    publishEvent(ctx, id, id, ContainerEventType.STARTED);
    return { pod_sandbox_id: id };
  } catch (err) {
    await cleanup.unwind(ctx.logger, err);
    throw err;
  }
}

/** The RPCs this file serves (see rpc.ts). */
export const sandboxRunRpcs = { RunPodSandbox: runPodSandbox } satisfies RpcHandlers;
