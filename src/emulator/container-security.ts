import type { OciSpec } from '../runtime/oci/spec.js';

/**
 * What a process sees of the Linux security settings the runtime wrote into its container's OCI
 * spec: the capability masks of /proc/<pid>/status, whether it holds a capability, and whether
 * the seccomp filter lets a system call through (the runtime composes them in oci/linux-security).
 */

/** Linux capability numbers (include/uapi/linux/capability.h), for the masks in /proc/<pid>/status. */
const CAPABILITY_BITS = [
  'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP', 'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER', 'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT',
  'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE',
  'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP', 'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ',
  'PERFMON', 'BPF', 'CHECKPOINT_RESTORE',
].map((n) => `CAP_${n}`);

/** A capability set as the 16-hex-digit mask /proc/<pid>/status shows (`CapBnd:\t00000000a80425fb`). */
export function capabilityMask(caps: readonly string[] | undefined): string {
  let mask = 0n;
  for (const cap of caps ?? []) {
    const bit = CAPABILITY_BITS.indexOf(cap);
    if (bit >= 0) mask |= 1n << BigInt(bit);
  }
  return mask.toString(16).padStart(16, '0');
}

/** A capability as the OCI spec names it: `net_raw`, `NET_RAW` and `CAP_NET_RAW` are `CAP_NET_RAW`. */
export const capabilityName = (c: string): string => (c.toUpperCase().startsWith('CAP_') ? c.toUpperCase() : `CAP_${c.toUpperCase()}`);

/** Whether the container's seccomp filter lets a system call through. */
export function syscallAllowed(spec: OciSpec, name: string): boolean {
  const seccomp = spec.linux?.seccomp;
  if (seccomp === undefined) return true;
  const rule = seccomp.syscalls?.find((r) => r.names.includes(name));
  const action = rule?.action ?? seccomp.defaultAction;
  return action === 'SCMP_ACT_ALLOW' || action === 'SCMP_ACT_LOG';
}

/** Whether the process holds a capability (in the effective set). */
export function hasCapability(spec: OciSpec, cap: string): boolean {
  return spec.process.capabilities?.effective?.includes(capabilityName(cap)) ?? false;
}
