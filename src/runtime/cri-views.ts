import type { Container } from '../generated/runtime/v1/Container.js';
import type { ContainerStatus } from '../generated/runtime/v1/ContainerStatus.js';
import type { Image } from '../generated/runtime/v1/Image.js';
import type { PodSandbox } from '../generated/runtime/v1/PodSandbox.js';
import type { PodSandboxStatus } from '../generated/runtime/v1/PodSandboxStatus.js';
import { nanosToWire } from './clock.js';
import { containerStatusPlatform } from './container-start-windows.js';
import { isolationOfHandler } from './images/windows-compat.js';
import { isHostNetwork } from './network/host-network.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord } from './store/container-store.js';
import { imageUser, type ImageRecord } from './store/image-store.js';
import { SandboxState, type SandboxRecord } from './store/sandbox-store.js';

/** Conversions from store records to the CRI messages the RPCs return. */

const imageSpecOf = (c: ContainerRecord): { image: string; annotations: Record<string, string>; user_specified_image: string } => ({
  image: c.imageName,
  annotations: c.imageSpec?.annotations ?? {},
  user_specified_image: c.imageSpec?.user_specified_image || c.imageName,
});

export function toPodSandbox(s: SandboxRecord): PodSandbox {
  return {
    id: s.id,
    metadata: s.config.metadata,
    state: s.status.state,
    created_at: nanosToWire(s.createdAtNanos),
    labels: s.labels,
    annotations: s.annotations,
    runtime_handler: s.runtimeHandler,
  };
}

export function toPodSandboxStatus(s: SandboxRecord): PodSandboxStatus {
  const ready = s.status.state === SandboxState.READY;
  const namespaceOptions = s.config.linux?.security_context?.namespace_options ?? null;
  const status: PodSandboxStatus = {
    id: s.id,
    metadata: s.config.metadata,
    state: s.status.state,
    created_at: nanosToWire(s.createdAtNanos),
    // containerd's getIPs (internal/cri/server/sandbox_status.go): no IP for a sandbox in the
    // node's network ("we are not responsible for reporting the IP"), none once its network
    // namespace is closed (stopped).
    network: { ip: ready && !isHostNetwork(s.config) ? s.ip : '', additional_ips: [] },
    labels: s.labels,
    annotations: s.annotations,
    runtime_handler: s.runtimeHandler,
  };
  if (s.os === 'linux') {
    status.linux = {
      namespaces: {
        options: {
          network: namespaceOptions?.network ?? 0,
          pid: namespaceOptions?.pid ?? 0,
          ipc: namespaceOptions?.ipc ?? 0,
          target_id: '',
        },
      },
    };
  }
  return status;
}

/** containerd's verbose sandbox info: `info["info"]` holds pid, runtimeSpec and the config. */
export function sandboxInfo(s: SandboxRecord): Record<string, string> {
  return {
    info: JSON.stringify({
      pid: s.status.state === SandboxState.READY ? s.pid : 0,
      processStatus: s.status.state === SandboxState.READY ? 'running' : 'stopped',
      netNamespaceClosed: s.status.state !== SandboxState.READY,
      image: s.os === 'windows' ? 'mcr.microsoft.com/oss/kubernetes/pause:3.10' : 'registry.k8s.io/pause:3.10',
      runtimeHandler: s.runtimeHandler,
      runtimeType: s.os === 'windows' ? 'io.containerd.runhcs.v1' : 'io.containerd.runc.v2',
      // containerd's Windows config for the Hyper-V handler: runhcs options SandboxIsolation = 1 (HYPERVISOR).
      ...(s.os === 'windows' && isolationOfHandler(s.runtimeHandler) === 'hyperv' ? { runtimeOptions: { SandboxIsolation: 1 } } : {}),
      runtimeSpec: s.ociSpec,
      config: s.config,
      platform: s.platform,
    }),
  };
}

export function toContainer(c: ContainerRecord): Container {
  return {
    id: c.id,
    pod_sandbox_id: c.sandboxId,
    metadata: c.metadata,
    image: imageSpecOf(c),
    image_ref: c.imageRef,
    image_id: c.imageId,
    state: c.status.state,
    created_at: nanosToWire(c.createdAtNanos),
    labels: c.labels,
    annotations: c.annotations,
  };
}

export function toContainerStatus(ctx: RuntimeContext, c: ContainerRecord): ContainerStatus {
  const user = ctx.containers.specOf(c).process.user;
  const status: ContainerStatus = {
    id: c.id,
    metadata: c.metadata,
    state: c.status.state,
    created_at: nanosToWire(c.createdAtNanos),
    started_at: nanosToWire(c.status.startedAtNanos),
    finished_at: nanosToWire(c.status.finishedAtNanos),
    exit_code: c.status.exitCode,
    image: imageSpecOf(c),
    image_ref: c.imageRef,
    image_id: c.imageId,
    reason: c.status.reason,
    message: c.status.message,
    labels: c.labels,
    annotations: c.annotations,
    mounts: ctx.containers.configOf(c).mounts,
    log_path: c.logPath,
    resources: c.resources,
  };
  if (c.os === 'linux') {
    status.user = {
      linux: {
        uid: String(user.uid ?? 0),
        gid: String(user.gid ?? 0),
        supplemental_groups: [...new Set([user.gid ?? 0, ...(user.additionalGids ?? [])])].map(String),
      },
    };
  }
  return status;
}

/** containerd's verbose container info: `info["info"]` holds sandboxID, pid, runtimeSpec, config. */
export function containerInfo(ctx: RuntimeContext, c: ContainerRecord): Record<string, string> {
  // cri-dockerd (core/container_status.go, convert.go containerInspectToRuntimeAPIContainerInfo):
  // `info["info"]` is {"sandboxID", "pid"} and nothing else.
  if (ctx.flavor.name === 'cri-dockerd') return { info: JSON.stringify({ sandboxID: c.sandboxId, pid: c.status.pid }) };
  return {
    info: JSON.stringify({
      sandboxID: c.sandboxId,
      pid: c.status.pid,
      removing: c.status.removing,
      snapshotKey: c.id,
      snapshotter: c.os === 'windows' ? 'windows' : 'overlayfs',
      runtimeType: c.os === 'windows' ? 'io.containerd.runhcs.v1' : 'io.containerd.runc.v2',
      config: ctx.containers.configOf(c),
      runtimeSpec: ctx.containers.specOf(c),
      securityOptions: c.securityOptions,
      platform: containerStatusPlatform(ctx, c),
    }),
  };
}

export function toImage(i: ImageRecord): Image {
  const user = imageUser(i.config.user);
  const image: Image = {
    id: i.id,
    repo_tags: [...i.repoTags],
    repo_digests: [...i.repoDigests],
    size: String(i.size),
    username: user.username ?? '',
    spec: { image: i.id, annotations: {} },
    pinned: i.pinned,
  };
  if (user.uid !== undefined) image.uid = { value: user.uid.toString() };
  return image;
}

export function imageInfo(i: ImageRecord): Record<string, string> {
  return {
    info: JSON.stringify({
      imageSpec: {
        os: i.config.os,
        architecture: 'amd64',
        ...(i.config.osVersion === undefined ? {} : { 'os.version': i.config.osVersion }),
        config: {
          User: i.config.user,
          Env: i.config.env,
          Entrypoint: i.config.entrypoint,
          Cmd: i.config.cmd,
          WorkingDir: i.config.workingDir,
          StopSignal: i.config.stopSignal,
          ...(i.config.exposedPorts === undefined ? {} : { ExposedPorts: Object.fromEntries(i.config.exposedPorts.map((p) => [`${p}/tcp`, {}])) }),
          ...(i.config.labels === undefined ? {} : { Labels: i.config.labels }),
        },
      },
    }),
  };
}
