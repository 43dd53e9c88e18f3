import type { ExecutionTarget } from './process/command-registry.js';
import { specEnv } from './oci/spec.js';
import { windowsIdentity } from './container-start-windows.js';
import type { ContainerRecord } from './store/container-store.js';
import type { SandboxRecord } from './store/sandbox-store.js';

/** What commands of a container see of it (start and exec share it). */
export function executionTarget(container: ContainerRecord, sandbox: SandboxRecord | undefined): ExecutionTarget {
  return {
    containerId: container.id,
    sandboxId: container.sandboxId,
    os: container.os,
    hostname: container.ociSpec.hostname,
    ociSpec: container.ociSpec,
    user: container.user,
    platform: {
      ...container.platform,
      podIp: sandbox?.ip ?? '',
      stdinOpen: container.config.stdin,
    },
    processes: container.processes,
    // Made on first use: most containers never read or write a private file.
    get files() {
      return container.files;
    },
  };
}

/**
 * The environment of a container process: the spec's env plus what the OS adds at logon
 * (Windows USERNAME, COMPUTERNAME, USERPROFILE …; Linux HOME).
 */
export function processEnvironment(container: ContainerRecord): Map<string, string> {
  const env = specEnv(container.ociSpec);
  if (container.os === 'windows') {
    const computer = container.ociSpec.hostname.toUpperCase().slice(0, 15);
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
    const identity = windowsIdentity(container);
    for (const [k, v] of Object.entries(identity?.environment ?? {})) if (!env.has(k)) env.set(k, v);
    for (const [k, v] of Object.entries(defaults)) if (!env.has(k)) env.set(k, v);
  } else if (!env.has('HOME')) {
    env.set('HOME', container.user === 'root' ? '/root' : '/');
  }
  return env;
}
