import type { ContainerConfig__Output } from '../../generated/runtime/v1/ContainerConfig.js';
import { RuntimeError } from '../errors.js';
import type { ImageConfig } from '../images/image-config.js';
import type { SpecOpt } from '../oci/spec.js';
import type { ContainerRecord } from '../store/container-store.js';
import { CREDENTIAL_SPEC_REGISTRY_KEY, stagedFromSecurityOption } from '../windows/credential-spec-handoff.js';
import { withWindowsUsername } from '../windows/oci-windows.js';
import { DockershimKepFlavor } from './dockershim-kep.js';
import type { RuntimeFlavor, RuntimeFlavorName } from './flavor.js';

/**
 * The key cri-dockerd opens under HKEY_LOCAL_MACHINE and names in its messages
 * (cri-dockerd core/helpers_windows.go `credentialSpecRegistryLocation`, moby's too).
 */
export const CRI_DOCKERD_REGISTRY_LOCATION = CREDENTIAL_SPEC_REGISTRY_KEY.replace(/^HKLM\\/, '');

/** Go's %q for the ASCII strings quoted here (backslashes doubled, as strconv.Quote does). */
const goQuote = (s: string): string => JSON.stringify(s);

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Mirantis cri-dockerd (core/helpers_windows.go, core/container_create.go,
 * core/container_remove.go, core/container_start.go, core/security_context_windows.go at
 * v0.4.x): CreateContainer copies the credential spec into a registry value
 * `k8s-cred-spec-<80 hex>` under `HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\
 * Virtualization\Containers\CredentialSpecs` and passes `credentialspec=registry://<name>`;
 * the value stays until RemoveContainer (removed at once, best effort, when the create fails),
 * and every matching value is removed when the service starts. RunAsUsername becomes Docker's
 * `Config.User`. cri-dockerd never reads `host_process`: Docker has no HostProcess containers,
 * so a HostProcess pod runs as an ordinary process-isolated container, with no error and no
 * hcsshim annotation. Errors are plain Go errors, so every one reaches the kubelet as gRPC
 * Unknown.
 */
export class CriDockerdFlavor extends DockershimKepFlavor implements RuntimeFlavor {
  override readonly name: RuntimeFlavorName = 'cri-dockerd';

  /** cri-dockerd does not look at host_process: nothing to agree on. */
  override checkContainerAgainstSandbox(): void {}

  /** `Config.User` = run_as_username when set (Docker falls back to the image's USER). */
  override containerSpecOpts(config: ContainerConfig__Output, image: ImageConfig): SpecOpt[] {
    return [withWindowsUsername(image.user, config.windows?.security_context?.run_as_username)];
  }

  /** The pause container gets nothing Windows-specific from cri-dockerd. */
  override sandboxSpecOpts(): SpecOpt[] {
    return [];
  }

  /** Docker starts an ordinary (isolated) container whatever host_process says. */
  override hostProcess(): boolean {
    return false;
  }

  /** core/container_start.go: `failed to start container %q: %v`; the daemon's error as the Docker client words it. */
  override startFailed(err: unknown, containerId: string): Error {
    return new RuntimeError('Unknown', `failed to start container ${goQuote(containerId)}: Error response from daemon: ${messageOf(err)}`, { cause: err });
  }

  /**
   * core/container_remove.go: `failed to run platform-specific clean ups for container %q: %v`
   * around the []error of core/helpers_windows.go removeGMSARegistryValue
   * (`unable to remove registry value %q/%q: %v`).
   */
  override removeFailed(err: unknown, container: ContainerRecord): Error {
    const value = container.securityOptions.map(stagedFromSecurityOption).find((s) => s?.transport === 'registry');
    const inner = value === undefined
      ? messageOf(err)
      : `unable to remove registry value ${goQuote(CRI_DOCKERD_REGISTRY_LOCATION)}/${goQuote(value.name)}: ${messageOf(err)}`;
    return new RuntimeError('Unknown', `failed to run platform-specific clean ups for container ${goQuote(container.id)}: [${inner}]`, { cause: err });
  }

  /**
   * core/helpers_windows.go copyGMSACredSpecToRegistryValue: the failure goes back unwrapped.
   * The value's name is not known here, so the text names the key only (cri-winsim's wording).
   */
  protected override stageFailed(err: unknown): Error {
    return new RuntimeError('Unknown', `unable to write into registry key ${goQuote(CRI_DOCKERD_REGISTRY_LOCATION)}: ${messageOf(err)}`, { cause: err });
  }
}
