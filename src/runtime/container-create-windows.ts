import type { ContainerConfig__Output } from '../generated/runtime/v1/ContainerConfig.js';
import type { CleanupStack } from './cleanup.js';
import { withContext } from './errors.js';
import type { ImageConfig } from './images/catalogue.js';
import type { SpecOpt } from './oci/spec.js';
import type { RuntimeContext } from './runtime-context.js';
import { sandboxHostProcess } from './sandbox-run-windows.js';
import type { SandboxRecord } from './store/sandbox-store.js';
import { checkHostProcessAgreement, withHostProcessAnnotation, withWindowsUsername } from './windows/oci-windows.js';

/**
 * CreateContainer, the Windows part (containerd's container_create_windows.go and dockershim's
 * security-context step): HostProcess agreement with the sandbox, the user and HostProcess
 * annotation in the OCI spec, and the hand-off of the credential spec.
 */

/** containerd: a container's HostProcess must equal its sandbox's (both ways). */
export function checkWindowsContainerAgainstSandbox(sandbox: SandboxRecord, config: ContainerConfig__Output): void {
  if (sandbox.os !== 'windows') return;
  checkHostProcessAgreement(sandboxHostProcess(sandbox), config.windows?.security_context?.host_process ?? false);
}

/** `process.user.username` (the image user, replaced by run_as_username) and the HostProcess annotation. */
export function windowsContainerSpecOpts(config: ContainerConfig__Output, image: ImageConfig): SpecOpt[] {
  const sc = config.windows?.security_context ?? null;
  return [withWindowsUsername(image.user, sc?.run_as_username), withHostProcessAnnotation(sc?.host_process ?? false)];
}

/**
 * The dockershim layer: writes the CRI credential spec where the backend reads it (the KEP's
 * temporary file, or cri-dockerd's registry value) and returns the Docker security options that
 * name it. The removal is declared on `cleanup` right where the spec is written, so every later
 * CreateContainer failure removes it.
 */
export async function stageCredentialSpec(
  ctx: RuntimeContext,
  config: ContainerConfig__Output,
  containerId: string,
  cleanup: CleanupStack,
): Promise<string[]> {
  const credentialSpec = config.windows?.security_context?.credential_spec ?? '';
  if (credentialSpec === '') return [];
  const { windows } = ctx;
  let staged;
  try {
    windows.checkFault('credential-spec-write', containerId);
    staged = await windows.handoff.stage(credentialSpec);
  } catch (err) {
    throw withContext(err, `failed to write the credential spec of container ${containerId}`);
  }
  cleanup.defer(`remove credential spec ${staged.name}`, () => windows.handoff.remove(staged));
  windows.checkFault('credential-spec-written', containerId);
  return [staged.securityOption];
}

/** Staged credential specs no live container refers to (the leak gauge, read when scraped). */
export function countCredentialSpecLeaks(ctx: RuntimeContext): Promise<number> {
  return ctx.windows.countLeaks(liveSecurityOptions(ctx));
}

function* liveSecurityOptions(ctx: RuntimeContext): Iterable<readonly string[]> {
  for (const c of ctx.containers.all()) yield c.securityOptions;
}
