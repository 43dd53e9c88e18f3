import { RuntimeError } from '../errors.js';
import type { CredentialSpecDocument } from './credential-spec.js';

/**
 * The part of an OCI runtime spec the Windows options touch. Structural and minimal, so the
 * runtime's full spec type (src/runtime/oci/spec.ts) is assignable to it and these options can
 * be used as its SpecOpts.
 */
export interface WindowsOciSpec {
  process: { user: { uid?: number; gid?: number; username?: string } };
  windows?: { credentialSpec?: unknown };
  annotations?: Record<string, string>;
}

/** An OCI spec option: changes one aspect of the spec in place (containerd's SpecOpts). */
export type WindowsSpecOpt = (spec: WindowsOciSpec) => void;

/** hcsshim's annotation for HostProcess containers (containerd sets it to "true" or "false"). */
export const HOST_PROCESS_ANNOTATION = 'microsoft.com/hostprocess-container';

/** containerd's text when sandbox and container disagree on HostProcess (REFERENCE §7). */
export const HOST_PROCESS_DISAGREEMENT = 'pod spec and all containers inside must have the HostProcess field set to be valid';

/**
 * A non-empty CRI credential_spec becomes `windows.credentialSpec` (containerd's
 * WithWindowsCredentialSpec); here the validated document rather than its text.
 */
export function withWindowsCredentialSpec(document: CredentialSpecDocument | undefined): WindowsSpecOpt {
  return (spec) => {
    if (document === undefined) return;
    spec.windows = Object.assign(spec.windows ?? {}, { credentialSpec: document });
  };
}

/**
 * `process.user.username`: the image's user, replaced by the CRI run_as_username when set
 * (containerd: `username = imageConfig.User; if runAsUser != "" { username = runAsUser }`).
 * Whether the user exists is decided when the process starts, as hcsshim does.
 */
export function withWindowsUsername(imageUser: string | undefined, runAsUsername: string | undefined): WindowsSpecOpt {
  return (spec) => {
    const username = runAsUsername !== undefined && runAsUsername !== '' ? runAsUsername : (imageUser ?? '');
    spec.process.user.username = username;
  };
}

/** The HostProcess annotation, always present with the sandbox's value, as containerd writes it. */
export function withHostProcessAnnotation(hostProcess: boolean): WindowsSpecOpt {
  return (spec) => {
    spec.annotations = Object.assign(spec.annotations ?? {}, { [HOST_PROCESS_ANNOTATION]: String(hostProcess) });
  };
}

/**
 * containerd's rule: a container's HostProcess must equal its sandbox's, in both directions.
 * Throws InvalidArgument with containerd's text.
 */
export function checkHostProcessAgreement(sandboxHostProcess: boolean, containerHostProcess: boolean): void {
  if (sandboxHostProcess !== containerHostProcess) throw new RuntimeError('InvalidArgument', HOST_PROCESS_DISAGREEMENT);
}

/** Applies options in order. */
export function applyWindowsSpecOpts(spec: WindowsOciSpec, ...opts: WindowsSpecOpt[]): WindowsOciSpec {
  for (const opt of opts) opt(spec);
  return spec;
}
