import { readFile } from 'node:fs/promises';
import type { LinuxContainerSecurityContext__Output } from '../../generated/runtime/v1/LinuxContainerSecurityContext.js';
import type { SecurityProfile__Output } from '../../generated/runtime/v1/SecurityProfile.js';
import { RuntimeError } from '../errors.js';
import { capabilityName } from '../../emulator/container-security.js';
import type { OciSeccomp, SpecOpt } from './spec.js';

/** The capabilities containerd gives a non-privileged container (its default set). */
export const DEFAULT_CAPABILITIES = [
  'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FSETID', 'CAP_FOWNER', 'CAP_MKNOD', 'CAP_NET_RAW', 'CAP_SETGID', 'CAP_SETUID',
  'CAP_SETFCAP', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_KILL', 'CAP_AUDIT_WRITE',
];

/** Every capability (privileged containers get them all). */
export const ALL_CAPABILITIES = [
  ...DEFAULT_CAPABILITIES, 'CAP_DAC_READ_SEARCH', 'CAP_LINUX_IMMUTABLE', 'CAP_NET_BROADCAST', 'CAP_NET_ADMIN', 'CAP_IPC_LOCK',
  'CAP_IPC_OWNER', 'CAP_SYS_MODULE', 'CAP_SYS_RAWIO', 'CAP_SYS_PTRACE', 'CAP_SYS_PACCT', 'CAP_SYS_ADMIN', 'CAP_SYS_BOOT',
  'CAP_SYS_NICE', 'CAP_SYS_RESOURCE', 'CAP_SYS_TIME', 'CAP_SYS_TTY_CONFIG', 'CAP_LEASE', 'CAP_AUDIT_CONTROL', 'CAP_MAC_OVERRIDE',
  'CAP_MAC_ADMIN', 'CAP_SYSLOG', 'CAP_WAKE_ALARM', 'CAP_BLOCK_SUSPEND', 'CAP_AUDIT_READ', 'CAP_PERFMON', 'CAP_BPF',
  'CAP_CHECKPOINT_RESTORE',
];

/** Capability set after add/drop (`ALL` allowed in both), or all of them when privileged. */
export function effectiveCapabilities(sc: LinuxContainerSecurityContext__Output | null): string[] {
  if (sc?.privileged) return [...ALL_CAPABILITIES];
  const add = (sc?.capabilities?.add_capabilities ?? []).map(capabilityName);
  const drop = (sc?.capabilities?.drop_capabilities ?? []).map(capabilityName);
  let caps = add.includes('CAP_ALL') ? [...ALL_CAPABILITIES] : [...new Set([...DEFAULT_CAPABILITIES, ...add])];
  if (drop.includes('CAP_ALL')) caps = add.includes('CAP_ALL') ? caps : add.filter((c) => c !== 'CAP_ALL');
  else caps = caps.filter((c) => !drop.includes(c));
  return caps;
}

export const withCapabilities = (caps: readonly string[]): SpecOpt => (spec) => {
  spec.process.capabilities = { bounding: [...caps], effective: [...caps], permitted: [...caps] };
};

export const withSeccomp = (seccomp: OciSeccomp | undefined): SpecOpt => (spec) => {
  if (spec.linux === undefined) return;
  if (seccomp === undefined) delete spec.linux.seccomp;
  else spec.linux.seccomp = seccomp;
};

/** A reduced runtime/default profile: the calls the default profile refuses to unprivileged containers. */
function runtimeDefault(caps: readonly string[]): OciSeccomp {
  const blocked = ['kexec_load', 'reboot', 'swapon', 'swapoff', 'init_module', 'delete_module', 'acct', 'bpf', 'open_by_handle_at'];
  // The default profile allows these only with CAP_SYS_ADMIN.
  if (!caps.includes('CAP_SYS_ADMIN')) blocked.push('mount', 'umount2', 'sethostname', 'setdomainname', 'unshare', 'setns');
  return { defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: blocked, action: 'SCMP_ACT_ERRNO' }], profile: 'runtime/default' };
}

async function loadLocalhost(path: string, field: string): Promise<OciSeccomp> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new RuntimeError('InvalidArgument', `${field}: cannot load seccomp profile "${path}": ${reason}`);
  }
  const profile = parsed as Partial<OciSeccomp>;
  if (typeof profile !== 'object' || profile === null || typeof profile.defaultAction !== 'string') {
    throw new RuntimeError('InvalidArgument', `${field}: seccomp profile "${path}" has no defaultAction`);
  }
  return { defaultAction: profile.defaultAction, syscalls: Array.isArray(profile.syscalls) ? profile.syscalls : [], profile: `localhost/${path}` };
}

/**
 * The seccomp filter of a container, as containerd derives it: none when privileged or
 * unconfined (also when nothing is set), the runtime default, or a localhost profile file read at
 * create time (a missing file fails the create).
 */
export async function resolveSeccomp(sc: LinuxContainerSecurityContext__Output | null, caps: readonly string[], field = 'config.linux.security_context'): Promise<OciSeccomp | undefined> {
  if (sc === null || sc.privileged) return undefined;
  const profile: SecurityProfile__Output | null = sc.seccomp;
  if (profile !== null) {
    if (profile.profile_type === 1) return undefined;
    if (profile.profile_type === 2) return loadLocalhost(profile.localhost_ref, `${field}.seccomp`);
    return runtimeDefault(caps);
  }
  const path = sc.seccomp_profile_path;
  if (path === '' || path === 'unconfined') return undefined;
  if (path.startsWith('localhost/')) return loadLocalhost(path.slice('localhost/'.length), `${field}.seccomp_profile_path`);
  return runtimeDefault(caps);
}
