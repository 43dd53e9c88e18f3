import type { ContainerConfig__Output } from '../generated/runtime/v1/ContainerConfig.js';
import type { CleanupStack } from './cleanup.js';
import type { ImageConfig } from './images/catalogue.js';
import type { SpecOpt } from './oci/spec.js';
import type { RuntimeContext } from './runtime-context.js';
import type { RuntimeFlavor } from './runtime-flavor.js';
import type { SandboxRecord } from './store/sandbox-store.js';

/**
 * CreateContainer, the Windows part, as the runtime flavor does it (runtime-flavor*.ts):
 * HostProcess agreement with the sandbox, the user and HostProcess annotation in the OCI spec,
 * and the hand-off of the credential spec.
 */

/** The flavor's HostProcess rule between the container and its sandbox, once the id is known. */
export function checkWindowsContainerAgainstSandbox(ctx: RuntimeContext, sandbox: SandboxRecord, config: ContainerConfig__Output, containerId: string): void {
  ctx.windows.flavor.checkContainerAgainstSandbox(sandbox, config, containerId);
}

/** The flavor's Windows options of the container's spec (`process.user.username`, the HostProcess annotation, …). */
export function windowsContainerSpecOpts(flavor: RuntimeFlavor, config: ContainerConfig__Output, image: ImageConfig): SpecOpt[] {
  return flavor.containerSpecOpts(config, image);
}

/**
 * The hand-off of the credential spec, as the flavor does it: the KEP's temporary file or
 * cri-dockerd's registry value (returning the Docker security options that name it), or nothing
 * (containerd). The removal is declared on `cleanup` right where the spec is written.
 */
export function stageCredentialSpec(ctx: RuntimeContext, config: ContainerConfig__Output, containerId: string, cleanup: CleanupStack): Promise<string[]> {
  return ctx.windows.flavor.stageCredentialSpec(ctx, config, containerId, cleanup);
}

/** Staged credential specs no live container refers to (the leak gauge, read when scraped). */
export function countCredentialSpecLeaks(ctx: RuntimeContext): Promise<number> {
  return ctx.windows.countLeaks(liveSecurityOptions(ctx));
}

function* liveSecurityOptions(ctx: RuntimeContext): Iterable<readonly string[]> {
  for (const c of ctx.containers.all()) yield c.securityOptions;
}
