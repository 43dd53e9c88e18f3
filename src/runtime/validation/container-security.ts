import type { LinuxContainerSecurityContext__Output } from '../../generated/runtime/v1/LinuxContainerSecurityContext.js';
import type { SecurityProfile__Output } from '../../generated/runtime/v1/SecurityProfile.js';
import { RuntimeError } from '../errors.js';

/** The values a (deprecated) seccomp_profile_path may take, as the kubelet and runtimes accept them. */
const SECCOMP_NAMES: ReadonlySet<string> = new Set(['', 'unconfined', 'runtime/default', 'docker/default']);

/** runtime.v1.SecurityProfile.ProfileType.Localhost */
const LOCALHOST = 2;

/**
 * Create-time checks of a Linux container security context (what containerd refuses before
 * creating anything): a group without a user, and seccomp profiles it cannot resolve.
 */
export function validateLinuxContainerSecurity(sc: LinuxContainerSecurityContext__Output | null, field = 'config.linux.security_context'): void {
  if (sc === null) return;
  if (sc.run_as_group !== null && sc.run_as_user === null && sc.run_as_username === '') {
    throw new RuntimeError(
      'InvalidArgument',
      `${field}.run_as_group ${sc.run_as_group.value} is set without run_as_user or run_as_username: a group needs a user`,
    );
  }
  validateSeccompPath(sc.seccomp_profile_path, `${field}.seccomp_profile_path`);
  validateProfile(sc.seccomp, `${field}.seccomp`);
  validateProfile(sc.apparmor, `${field}.apparmor`);
}

export function validateSeccompPath(path: string, field: string): void {
  if (SECCOMP_NAMES.has(path)) return;
  if (path.startsWith('localhost/') && path.length > 'localhost/'.length) return;
  throw new RuntimeError(
    'InvalidArgument',
    `${field} "${path}" is not supported: use "", "unconfined", "runtime/default", "docker/default" or "localhost/<path>"`,
  );
}

function validateProfile(profile: SecurityProfile__Output | null, field: string): void {
  if (profile === null) return;
  if (profile.profile_type === LOCALHOST && profile.localhost_ref === '') {
    throw new RuntimeError('InvalidArgument', `${field}.localhost_ref must be set when profile_type is Localhost`);
  }
  if (profile.profile_type !== LOCALHOST && profile.localhost_ref !== '') {
    throw new RuntimeError('InvalidArgument', `${field}.localhost_ref is only valid with profile_type Localhost`);
  }
}
