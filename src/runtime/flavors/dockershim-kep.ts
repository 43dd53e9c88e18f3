import type { ContainerConfig__Output } from '../../generated/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig__Output } from '../../generated/runtime/v1/PodSandboxConfig.js';
import type { CleanupStack } from '../cleanup.js';
import { RuntimeError, withContext } from '../errors.js';
import type { ImageConfig } from '../images/image-config.js';
import type { SpecOpt } from '../oci/spec.js';
import type { ContainerRecord } from '../store/container-store.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import { checkHostProcessAgreement, withHostProcessAnnotation, withWindowsCredentialSpec, withWindowsUsername } from '../windows/oci-windows.js';
import { credentialSpecFromSecurityOptions } from '../windows/security-options.js';
import type { WindowsRuntime } from '../windows/windows-runtime.js';
import type { RuntimeFlavor, RuntimeFlavorName } from './flavor.js';
import { sandboxHostProcess } from './windows-sandbox.js';

/**
 * The GMSA KEP's dockershim (the default flavor, what cri-winsim did before flavors existed):
 * CreateContainer writes the credential spec to a temporary file (or, with
 * `--credspec-transport registry`, a registry value) and passes `credentialspec=file://<name>`;
 * at StartContainer the backend reads it back with moby's rules, and the file is deleted once
 * StartContainer returns. HostProcess: the sandbox and its containers must agree (the rule
 * containerd enforces), and the OCI spec carries hcsshim's HostProcess annotation. `windows` is
 * the runtime's Windows path: its hand-off was opened with this flavor's transport.
 */
export class DockershimKepFlavor implements RuntimeFlavor {
  readonly name: RuntimeFlavorName = 'dockershim-kep';

  constructor(protected readonly windows: WindowsRuntime) {}

  checkContainerAgainstSandbox(sandbox: SandboxRecord, config: ContainerConfig__Output): void {
    if (sandbox.os !== 'windows') return;
    checkHostProcessAgreement(sandboxHostProcess(sandbox), config.windows?.security_context?.host_process ?? false);
  }

  containerSpecOpts(config: ContainerConfig__Output, image: ImageConfig): SpecOpt[] {
    const sc = config.windows?.security_context ?? null;
    return [withWindowsUsername(image.user, sc?.run_as_username), withHostProcessAnnotation(sc?.host_process ?? false)];
  }

  startedSpecOpts(container: ContainerRecord): SpecOpt[] {
    // The document HCS accepted, as windows.credentialSpec.
    return container.credentialSpec === undefined ? [] : [withWindowsCredentialSpec(container.credentialSpec)];
  }

  sandboxSpecOpts(config: PodSandboxConfig__Output): SpecOpt[] {
    return [withHostProcessAnnotation(config.windows?.security_context?.host_process ?? false)];
  }

  hostProcess(config: ContainerConfig__Output): boolean {
    return config.windows?.security_context?.host_process ?? false;
  }

  async stageCredentialSpec(config: ContainerConfig__Output, containerId: string, cleanup: CleanupStack): Promise<string[]> {
    const credentialSpec = config.windows?.security_context?.credential_spec ?? '';
    if (credentialSpec === '') return [];
    const { windows } = this;
    let staged;
    try {
      windows.checkFault('credential-spec-write', containerId);
      staged = await windows.handoff.stage(credentialSpec);
    } catch (err) {
      throw this.stageFailed(err, containerId);
    }
    // Declared where the spec is written, so every later CreateContainer failure removes it.
    cleanup.defer(`remove credential spec ${staged.name}`, () => windows.handoff.remove(staged));
    windows.checkFault('credential-spec-written', containerId);
    return [staged.securityOption];
  }

  /** cri-winsim's own text: the KEP does not word this failure. */
  protected stageFailed(err: unknown, containerId: string): Error {
    return withContext(err, `failed to write the credential spec of container ${containerId}`);
  }

  credentialSpecAtStart(container: ContainerRecord): Promise<string | undefined> {
    const { windows } = this;
    return credentialSpecFromSecurityOptions(windows.backendSecurityOptions(container.securityOptions, container.id), {
      containerId: container.id,
      credentialSpecDirectory: windows.handoff.directory,
      registry: windows.handoff.registry,
      reader: windows.fileReader,
    });
  }

  startFailed(err: unknown, _containerId: string): Error {
    return err instanceof Error ? err : new RuntimeError('Unknown', String(err));
  }

  /** cri-winsim's own text (the KEP does not word it); the code stays the cause's. */
  removeFailed(err: unknown, container: ContainerRecord): Error {
    return withContext(err, `failed to remove the credential spec of container ${container.id}`);
  }

  handoffView(): Record<string, unknown> {
    return { runtimeFlavor: this.name };
  }
}
