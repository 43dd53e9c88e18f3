import { merged } from '../tuning/merged.js';
import type { ExecutionTarget } from '../emulator/command-registry.js';
import type { ContainerFiles } from '../emulator/container-files.js';
import { CONTAINER_STDIN_KEY, type ContainerStdin } from '../emulator/container-stdin.js';
import type { ProcessTable } from '../emulator/process-table.js';
import type { OciSpec } from './oci/spec.js';
import { specEnv } from './oci/spec.js';
import { containerPlatform, currentWindowsIdentity, logonSession, windowsIdentity } from './container-start-windows.js';
import { WINDOWS_IDENTITY_SOURCE_KEY, WINDOWS_LOGON_SESSION_KEY } from '../emulator/windows-identity.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord } from './store/container-store.js';
import type { SandboxRecord } from './store/sandbox-store.js';
import { podListenAddress } from './network/host-network.js';
import { WINDOWS_SESSION_KEY } from '../emulator/windows-identity.js';
import { windowsSession } from './windows-session.js';

/**
 * What commands of a container see of it (start and exec share it). A class, not a literal with a
 * getter: V8 turns every object literal with an accessor into a slow dictionary object.
 */
class ContainerExecutionTarget implements ExecutionTarget {
  readonly containerId: string;
  readonly sandboxId: string;
  readonly os: 'linux' | 'windows';
  readonly hostname: string;
  readonly ociSpec: OciSpec;
  readonly user: string;
  readonly platform: Record<string, unknown>;
  readonly processes: ProcessTable;

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly container: ContainerRecord,
    sandbox: SandboxRecord | undefined,
    stdin?: ContainerStdin,
  ) {
    const spec = ctx.containers.specOf(container);
    this.containerId = container.id;
    this.sandboxId = container.sandboxId;
    this.os = container.os;
    this.hostname = spec.hostname;
    this.ociSpec = spec;
    this.user = container.user;
    this.platform = merged(containerPlatform(ctx, container), {
      // Where its servers listen: the pod IP, or the node's address in the node's network.
      podIp: sandbox === undefined ? '' : podListenAddress(sandbox),
      stdinOpen: ctx.containers.configOf(container).stdin,
      ...(stdin === undefined ? {} : { [CONTAINER_STDIN_KEY]: stdin }),
      // Identity commands read the identity when they run: the live domain may have changed
      // since this process started (a loop of `nltest /sc_verify` sees a domain controller go).
      ...(container.os === 'windows'
        ? { [WINDOWS_IDENTITY_SOURCE_KEY]: () => currentWindowsIdentity(ctx, container), [WINDOWS_LOGON_SESSION_KEY]: logonSession(ctx, container), [WINDOWS_SESSION_KEY]: windowsSession(ctx, container) }
        : {}),
    });
    this.processes = container.processes;
  }

  /** Made on first use: most containers never read or write a private file. */
  get files(): ContainerFiles {
    return this.ctx.containers.filesOf(this.container);
  }
}

/** `stdin`: the main process's input channel (only the init process's target carries it). */
export function executionTarget(ctx: RuntimeContext, container: ContainerRecord, stdin?: ContainerStdin): ExecutionTarget {
  return new ContainerExecutionTarget(ctx, container, ctx.sandboxes.get(container.sandboxId), stdin);
}

/**
 * The environment of a container process: the spec's env plus what the OS adds at logon
 * (Windows USERNAME, COMPUTERNAME, USERPROFILE …; Linux HOME).
 */
export function processEnvironment(ctx: RuntimeContext, container: ContainerRecord): Map<string, string> {
  const spec = ctx.containers.specOf(container);
  const env = specEnv(spec);
  if (container.os === 'windows') {
    const computer = spec.hostname.toUpperCase().slice(0, 15);
    const defaults: Record<string, string> = {
      USERNAME: container.user,
      USERDOMAIN: 'User Manager',
      COMPUTERNAME: computer,
      USERPROFILE: `C:\\Users\\${container.user}`,
      SystemRoot: 'C:\\Windows',
      ComSpec: 'C:\\Windows\\system32\\cmd.exe',
    };
    // The logon session's variables (USERNAME, USERDOMAIN, COMPUTERNAME …) come from the identity
    // the container started with; the image's and the config's env still win.
    const identity = windowsIdentity(ctx, container);
    for (const [k, v] of Object.entries(identity?.environment ?? {})) if (!env.has(k)) env.set(k, v);
    for (const [k, v] of Object.entries(defaults)) if (!env.has(k)) env.set(k, v);
  } else if (!env.has('HOME')) {
    env.set('HOME', container.user === 'root' ? '/root' : '/');
  }
  return env;
}
