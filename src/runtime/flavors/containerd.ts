import type { ContainerConfig__Output } from '../../generated/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig__Output } from '../../generated/runtime/v1/PodSandboxConfig.js';
import { RuntimeError } from '../errors.js';
import type { ImageConfig } from '../images/image-config.js';
import type { SpecOpt } from '../oci/spec.js';
import type { ContainerRecord } from '../store/container-store.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import { HOST_PROCESS_DISAGREEMENT, withHostProcessAnnotation, withWindowsUsername } from '../windows/oci-windows.js';
import type { RuntimeFlavor, RuntimeFlavorName } from './flavor.js';
import { sandboxHostProcess } from './windows-sandbox.js';

/** The Windows pause image's USER (mcr.microsoft.com/oss/kubernetes/pause, see images/catalogue.ts). */
const PAUSE_IMAGE_USER = 'ContainerUser';

/** containerd's working directory for a HostProcess container whose config and image name none. */
const HOST_PROCESS_CWD = 'C:\\hpc';

/** Go's %q for the ASCII strings quoted here. */
const goQuote = (s: string): string => JSON.stringify(s);

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * containerd's WithWindowsCredentialSpec (internal/cri/opts/spec_windows_opts.go): the CRI
 * credential_spec, the JSON text itself, becomes `windows.credentialSpec` as a string.
 */
export function withWindowsCredentialSpecText(credentialSpec: string): SpecOpt {
  return (spec) => {
    if (credentialSpec === '') return;
    spec.windows = Object.assign(spec.windows ?? {}, { credentialSpec });
  };
}

/**
 * containerd 2.x (v2.2.7 internal/cri/server/container_create.go buildWindowsSpec,
 * podsandbox/sandbox_run_windows.go sandboxContainerSpec, container_start.go): no hand-off.
 * The credential spec string goes into the OCI spec at create, of the container and of the pause
 * sandbox, as `windows.credentialSpec`; `process.user.username` is the image's user replaced by
 * run_as_username, on both; the HostProcess annotation carries the sandbox's value and a
 * HostProcess container with no working directory runs in `C:\hpc`. hcsshim reads the spec when
 * the task is created. Errors are plain Go errors wrapped on the way up, which containerd's
 * errgrpc turns into gRPC Unknown.
 */
export class ContainerdFlavor implements RuntimeFlavor {
  readonly name: RuntimeFlavorName = 'containerd';

  /**
   * buildWindowsSpec: `pod spec and all containers inside must have the HostProcess field set to
   * be valid`, wrapped by generateContainerSpec and createContainer.
   */
  checkContainerAgainstSandbox(sandbox: SandboxRecord, config: ContainerConfig__Output, containerId: string): void {
    if (sandbox.os !== 'windows') return;
    if (sandboxHostProcess(sandbox) === (config.windows?.security_context?.host_process ?? false)) return;
    throw new RuntimeError(
      'Unknown',
      `failed to generate container ${goQuote(containerId)} spec: failed to generate spec opts: ${HOST_PROCESS_DISAGREEMENT}`,
    );
  }

  containerSpecOpts(config: ContainerConfig__Output, image: ImageConfig): SpecOpt[] {
    const sc = config.windows?.security_context ?? null;
    const hostProcess = sc?.host_process ?? false;
    const opts: SpecOpt[] = [
      withWindowsUsername(image.user, sc?.run_as_username),
      withWindowsCredentialSpecText(sc?.credential_spec ?? ''),
      withHostProcessAnnotation(hostProcess),
    ];
    if (hostProcess && config.working_dir === '' && image.workingDir === '') {
      opts.push((spec) => {
        spec.process.cwd = HOST_PROCESS_CWD;
      });
    }
    return opts;
  }

  /** The string has been in the spec since CreateContainer. */
  startedSpecOpts(): SpecOpt[] {
    return [];
  }

  sandboxSpecOpts(config: PodSandboxConfig__Output): SpecOpt[] {
    const sc = config.windows?.security_context ?? null;
    return [
      withWindowsUsername(PAUSE_IMAGE_USER, sc?.run_as_username),
      withWindowsCredentialSpecText(sc?.credential_spec ?? ''),
      withHostProcessAnnotation(sc?.host_process ?? false),
    ];
  }

  hostProcess(config: ContainerConfig__Output): boolean {
    return config.windows?.security_context?.host_process ?? false;
  }

  /** Nothing is staged: no file, no registry value, no security option. */
  stageCredentialSpec(): Promise<string[]> {
    return Promise.resolve([]);
  }

  /** hcsshim reads `windows.credentialSpec` of the spec: the config's text. */
  credentialSpecAtStart(_container: ContainerRecord, config: ContainerConfig__Output): Promise<string | undefined> {
    const text = config.windows?.security_context?.credential_spec ?? '';
    return Promise.resolve(text === '' ? undefined : text);
  }

  /**
   * container_start.go `failed to create containerd task: %w` around the task manager's
   * `failed to create shim task: %w`; the shim's (hcsshim's) error inside.
   */
  startFailed(err: unknown, _containerId: string): Error {
    return new RuntimeError('Unknown', `failed to create containerd task: failed to create shim task: ${messageOf(err)}`, { cause: err });
  }

  /** Nothing is staged, so nothing can fail to be removed; kept for the interface. */
  removeFailed(err: unknown): Error {
    return err instanceof Error ? err : new RuntimeError('Unknown', String(err));
  }

  handoffView(): Record<string, unknown> {
    return { runtimeFlavor: this.name };
  }
}
