import { isAbsolute, join } from 'node:path';
import type { ContainerConfig__Output } from '../generated/runtime/v1/ContainerConfig.js';
import type { CreateContainerRequest__Output } from '../generated/runtime/v1/CreateContainerRequest.js';
import type { CreateContainerResponse } from '../generated/runtime/v1/CreateContainerResponse.js';
import { merged } from '../tuning/merged.js';
import { CleanupStack } from './cleanup.js';
import { RuntimeError } from './errors.js';
import { ContainerEventType, publishEvent } from './events.js';
import type { ImageConfig } from './images/image-config.js';
import {
  composeSpec,
  withAnnotations,
  withCwd,
  withEnv,
  withHostname,
  withImageUser,
  withLinuxResources,
  withLinuxUser,
  withMounts,
  withNoNewPrivileges,
  withProcessArgs,
  withReadonlyRootfs,
  withSysctls,
  withTerminal,
  withWindowsResources,
  type OciSeccomp,
  type OciSpec,
} from './oci/spec.js';
import type { RuntimeFlavor } from './flavors/flavor.js';
import { effectiveCapabilities, resolveSeccomp, withCapabilities, withSeccomp } from './oci/linux-security.js';
import type { RuntimeContext } from './runtime-context.js';
import { ProcessTable, type ContainerRecord, type ContainerSpecs } from './store/container-store.js';
import { SandboxState, type SandboxRecord } from './store/sandbox-store.js';
import { validateLinuxContainerSecurity } from './validation/container-security.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

/**
 * The process argv: the config's command replaces the image ENTRYPOINT, and its args replace
 * CMD; with no command, the image ENTRYPOINT runs with the config's args or else the image CMD
 * (the kubelet/containerd rule).
 */
export function resolveProcessArgs(config: Pick<ContainerConfig__Output, 'command' | 'args'>, image: Pick<ImageConfig, 'entrypoint' | 'cmd'>): string[] {
  if (config.command.length > 0) return [...config.command, ...config.args];
  return [...image.entrypoint, ...(config.args.length > 0 ? config.args : image.cmd)];
}

/** The user name commands print: run_as_username/uid over the image user, per OS. */
function effectiveUser(os: 'linux' | 'windows', config: ContainerConfig__Output, image: ImageConfig): string {
  if (os === 'windows') {
    const requested = config.windows?.security_context?.run_as_username ?? '';
    return requested || image.user || 'ContainerAdministrator';
  }
  const sc = config.linux?.security_context;
  if (sc?.run_as_username) return sc.run_as_username;
  if (sc?.run_as_user) return sc.run_as_user.value === '0' ? 'root' : sc.run_as_user.value;
  const name = image.user.split(':')[0] ?? '';
  return name === '' || name === '0' ? 'root' : name;
}

/** The files a real runtime bind-mounts into every container from the sandbox. */
function buildSandboxFiles(sandbox: SandboxRecord): Map<string, string> {
  const dns = sandbox.config.dns_config;
  const resolv = [
    ...(dns?.servers ?? []).map((s) => `nameserver ${s}`),
    ...(dns !== null && dns.searches.length > 0 ? [`search ${dns.searches.join(' ')}`] : []),
    ...(dns !== null && dns.options.length > 0 ? [`options ${dns.options.join(' ')}`] : []),
  ];
  // Namespaced sysctls of the pod show in /proc/sys of every container (kernel.shm_rmid_forced →
  // /proc/sys/kernel/shm_rmid_forced).
  const sysctls = Object.entries(sandbox.config.linux?.sysctls ?? {}).map(
    ([key, value]) => [`/proc/sys/${key.replace(/\./g, '/')}`, `${value}\n`] as [string, string],
  );
  return new Map([
    ...sysctls,
    ['/etc/hostname', `${sandbox.hostname}\n`],
    // A pod in the node's network has no address of its own to name (its sandbox has no IP).
    ['/etc/hosts', `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n${sandbox.ip === '' ? '' : `${sandbox.ip}\t${sandbox.hostname}\n`}`],
    ['/etc/resolv.conf', resolv.length > 0 ? `${resolv.join('\n')}\n` : ''],
  ]);
}

/** Composes the container's OCI spec from the image config, the CRI config and the sandbox. */
export function buildContainerSpec(
  os: 'linux' | 'windows',
  config: ContainerConfig__Output,
  image: ImageConfig,
  sandbox: SandboxRecord,
  args: string[],
  id: string,
  seccomp: OciSeccomp | undefined,
  flavor: RuntimeFlavor,
): OciSpec {
  const sc = config.linux?.security_context ?? null;
  const envs = config.envs.map((kv) => `${kv.key}=${kv.value}`);
  return composeSpec(
    os,
    withProcessArgs(args),
    withEnv([...image.env, ...(os === 'linux' ? [`HOSTNAME=${sandbox.hostname}`] : []), ...envs]),
    withCwd(config.working_dir !== '' ? config.working_dir : image.workingDir),
    withImageUser(image.user),
    // run_as_username on Linux names a user of the image (resolved like USER).
    ...(os === 'linux' && sc?.run_as_username ? [withImageUser(sc.run_as_username)] : []),
    withLinuxUser(
      sc?.run_as_user ? Number(sc.run_as_user.value) : undefined,
      sc?.run_as_group ? Number(sc.run_as_group.value) : undefined,
      (sc?.supplemental_groups ?? []).map(Number),
    ),
    // Windows: the user and the HostProcess annotation as the runtime flavor writes them.
    ...(os === 'windows' ? flavor.containerSpecOpts(config, image) : []),
    withNoNewPrivileges(sc?.no_new_privs ?? false),
    withReadonlyRootfs(sc?.readonly_rootfs ?? false),
    ...(os === 'linux' ? [withCapabilities(effectiveCapabilities(sc)), withSeccomp(seccomp)] : []),
    withHostname(sandbox.hostname),
    withTerminal(config.tty),
    withMounts(
      config.mounts.map((m) => ({
        destination: m.container_path,
        source: m.host_path,
        type: 'bind',
        options: ['rbind', m.readonly ? 'ro' : 'rw'],
      })),
    ),
    withLinuxResources(config.linux?.resources ? { ...config.linux.resources } : undefined),
    withWindowsResources(config.windows?.resources ? { ...config.windows.resources } : undefined),
    withSysctls(sandbox.config.linux?.sysctls ?? {}),
    withAnnotations(merged(config.annotations, {
      'io.kubernetes.cri.container-type': 'container',
      'io.kubernetes.cri.container-name': config.metadata?.name ?? '',
      'io.kubernetes.cri.sandbox-id': sandbox.id,
      'io.kubernetes.cri.image-name': config.image?.image ?? '',
      'io.kubernetes.cri.container-id': id,
    })),
  );
}

const EMPTY_STRINGS: readonly string[] = Object.freeze([]);

/**
 * A container's OCI spec from its config and record: composed as at create, with the resources
 * UpdateContainerResources set and the credential spec HCS validated at start.
 */
function composeContainerSpec(r: ContainerRecord, config: ContainerConfig__Output, flavor: RuntimeFlavor): OciSpec {
  const spec = buildContainerSpec(r.os, config, r.imageConfig, r.sandbox, [...r.args], r.id, r.seccomp, flavor);
  const resources = r.resources;
  withLinuxResources(resources?.linux ? { ...resources.linux } : undefined)(spec);
  withWindowsResources(resources?.windows ? { ...resources.windows } : undefined)(spec);
  if (r.os === 'windows') for (const opt of flavor.startedSpecOpts(r)) opt(spec);
  return spec;
}

/** How the container store composes a container's spec (with the runtime flavor's Windows options) and its pod's files. */
export function containerSpecsFor(flavor: RuntimeFlavor): ContainerSpecs {
  return Object.freeze({ compose: (r: ContainerRecord, config: ContainerConfig__Output) => composeContainerSpec(r, config, flavor), podFiles: buildSandboxFiles });
}

/**
 * Checks that the config composes into an OCI spec (a value the spec cannot take fails
 * CreateContainer before anything is stored) and returns that spec, for the store to keep.
 */
export function validateContainerConfig(record: ContainerRecord, config: ContainerConfig__Output, flavor: RuntimeFlavor): OciSpec {
  return composeContainerSpec(record, config, flavor);
}

/**
 * CreateContainer: checks the request, the sandbox and the image, reserves the name, composes the
 * OCI spec and records a CREATED container. Nothing is left behind when any step fails.
 */
export async function createContainer(ctx: RuntimeContext, req: CreateContainerRequest__Output): Promise<CreateContainerResponse> {
  requireField(req.pod_sandbox_id, 'pod_sandbox_id');
  const config = req.config;
  // containerd v2.2.7, internal/cri/server/container_create.go (a missing config has no metadata either).
  if (config === null || config.metadata === null) throw new RuntimeError('InvalidArgument', 'container config must include metadata');
  // crictl refuses a ContainerStatus without metadata.name and image.image, so both are required.
  requireField(config.metadata.name, 'config.metadata.name');
  const imageName = config.image?.image ?? '';
  requireField(imageName, 'config.image.image');

  const sandbox = ctx.sandboxes.mustFind(req.pod_sandbox_id);
  if (sandbox.status.state !== SandboxState.READY) {
    throw new RuntimeError('FailedPrecondition', `pod sandbox ${sandbox.id} is not ready: containers cannot be created in it`);
  }
  const image = ctx.images.resolve(imageName);
  if (image === undefined) throw new RuntimeError('NotFound', `image "${imageName}" not found: pull it before creating a container`);
  validateLinuxContainerSecurity(config.linux?.security_context ?? null);
  if (config.linux?.security_context?.privileged && !sandbox.config.linux?.security_context?.privileged) {
    // containerd: a privileged container needs a privileged sandbox.
    throw new RuntimeError('InvalidArgument', `config.linux.security_context.privileged: no privileged container allowed in sandbox ${sandbox.id}`);
  }
  const args = resolveProcessArgs(config, image.config);
  const linuxSc = config.linux?.security_context ?? null;
  const seccomp = image.config.os === 'linux' ? await resolveSeccomp(linuxSc, effectiveCapabilities(linuxSc)) : undefined;
  if (args.length === 0) throw new RuntimeError('InvalidArgument', `no command specified: config.command is empty and image "${imageName}" has no entrypoint or cmd`);

  const cleanup = new CleanupStack();
  try {
    const id = ctx.random.newId();
    const meta = sandbox.config.metadata;
    // join makes one flat string (a template literal leaves a tree of parts the record would keep).
    const name = [config.metadata.name, meta?.name ?? '', meta?.namespace ?? '', meta?.uid ?? '', config.metadata.attempt].join('_');
    ctx.containers.names.reserve(name, id);
    cleanup.defer(`release container name ${name}`, () => ctx.containers.names.release(name, id));

    // The runtime flavor's HostProcess rule between the container and its Windows sandbox.
    ctx.flavor.checkContainerAgainstSandbox(sandbox, config, id);
    const os = image.config.os;
    // Windows: the flavor hands the credential spec over — the KEP's temporary file, cri-dockerd's
    // registry value, nothing for containerd — removed again by `cleanup` if anything below fails.
    const staged = os === 'windows' ? await ctx.flavor.stageCredentialSpec(config, id, cleanup) : [];
    const securityOptions = staged.length === 0 ? EMPTY_STRINGS : staged;
    // CRI NamespaceMode POD (0, also when unset) joins the pod's PID namespace on Linux, as
    // containerd does; the kubelet sends CONTAINER unless the pod shares its process namespace.
    const pidMode = config.linux?.security_context?.namespace_options?.pid ?? 0;
    const sharesPodPid = os === 'linux' && sandbox.os === 'linux' && pidMode === 0;
    const logPath = config.log_path === ''
      ? join(ctx.settings.stateDir, 'containers', id, 'container.log')
      : isAbsolute(config.log_path) ? config.log_path : join(sandbox.logDirectory, config.log_path);
    const record = ctx.containers.newRecord({
      id,
      name,
      imageName,
      imageId: image.id,
      imageRef: image.repoDigests[0] ?? image.id,
      imageConfig: image.config,
      os,
      createdAtNanos: ctx.clock.nowNanos(),
      logPath,
      runtimeOwnedLog: config.log_path === '',
      args,
      seccomp,
      securityOptions,
      user: effectiveUser(os, config, image.config),
      resources: config.linux?.resources || config.windows?.resources
        ? { linux: config.linux?.resources ?? null, windows: config.windows?.resources ?? null }
        : null,
      sharesPodPid,
    }, sandbox, sharesPodPid ? sandbox.processes : new ProcessTable(), config);
    const spec = validateContainerConfig(record, config, ctx.flavor);
    ctx.containers.add(record, config, spec);
    await cleanup.done(ctx.logger);
    ctx.logger.info({ podSandboxId: sandbox.id, containerId: id, name }, 'container created');
    publishEvent(ctx, id, sandbox.id, ContainerEventType.CREATED);
    return { container_id: id };
  } catch (err) {
    await cleanup.unwind(ctx.logger, err);
    throw err;
  }
}

/** The RPCs this file serves (see rpc.ts). */
export const containerCreateRpcs = { CreateContainer: createContainer } satisfies RpcHandlers;
