import type { ContainerConfig__Output } from '../../generated/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig__Output } from '../../generated/runtime/v1/PodSandboxConfig.js';
import type { CleanupStack } from '../cleanup.js';
import { RuntimeError } from '../errors.js';
import type { ImageConfig } from '../images/image-config.js';
import type { SpecOpt } from '../oci/spec.js';
import type { ContainerRecord } from '../store/container-store.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import type { CredentialSpecTransportKind } from '../windows/credential-spec-handoff.js';

/**
 * Which real Windows node the runtime reproduces (`--runtime-flavor`, DESIGN "Which real node"):
 * - `dockershim-kep`: the GMSA KEP's dockershim — a temporary credential spec file passed as
 *   `credentialspec=file://…`, deleted once StartContainer returns (this project's origin, the
 *   default: what the runtime did before flavors existed);
 * - `cri-dockerd`: Mirantis cri-dockerd — a registry value `k8s-cred-spec-<80 hex>` passed as
 *   `credentialspec=registry://…`, kept until RemoveContainer, swept at start-up; HostProcess
 *   ignored (Docker has no HostProcess containers);
 * - `containerd`: containerd 2.x — no hand-off: the credential spec string is
 *   `windows.credentialSpec` of the container's and of the pause sandbox's OCI spec.
 */
export type RuntimeFlavorName = 'dockershim-kep' | 'cri-dockerd' | 'containerd';

export const RUNTIME_FLAVORS: readonly RuntimeFlavorName[] = ['dockershim-kep', 'cri-dockerd', 'containerd'];

export const DEFAULT_RUNTIME_FLAVOR: RuntimeFlavorName = 'dockershim-kep';

/** Checks a `--runtime-flavor` value. */
export function parseRuntimeFlavor(value: string): RuntimeFlavorName {
  if ((RUNTIME_FLAVORS as readonly string[]).includes(value)) return value as RuntimeFlavorName;
  throw new RuntimeError('InvalidArgument', `--runtime-flavor: must be one of ${RUNTIME_FLAVORS.join(', ')}, not ${JSON.stringify(value)}`);
}

/**
 * The flavor a runtime value runs with, as its options name it: checked once when the runtime
 * opens (select.ts), before anything is created. `transport` is how this flavor stages a
 * credential spec for the backend: the KEP's file or cri-dockerd's registry value; undefined for
 * containerd, which stages nothing.
 */
export interface FlavorChoice {
  readonly name: RuntimeFlavorName;
  readonly transport: CredentialSpecTransportKind | undefined;
}

/**
 * What differs between the simulated runtimes on the Windows path, as the RPC handlers see it
 * (`ctx.flavor`): made once when the runtime opens (NodeRuntime.open, select.ts), with the
 * runtime's Windows path (credential spec hand-off, fault seam) inside. Each flavor lives in its
 * own file of this folder; the handlers call these methods and nothing else of it.
 */
export interface RuntimeFlavor {
  readonly name: RuntimeFlavorName;

  /**
   * CreateContainer, once the container's id is known: the HostProcess rule between the
   * container and its Windows sandbox, with the flavor's text and code.
   */
  checkContainerAgainstSandbox(sandbox: SandboxRecord, config: ContainerConfig__Output, containerId: string): void;

  /** The Windows options of the container's OCI spec at create (user, HostProcess annotation, …). */
  containerSpecOpts(config: ContainerConfig__Output, image: ImageConfig): SpecOpt[];

  /** What StartContainer added to the spec once the backend accepted the credential spec. */
  startedSpecOpts(container: ContainerRecord): SpecOpt[];

  /** The Windows options of the pause sandbox's OCI spec. */
  sandboxSpecOpts(config: PodSandboxConfig__Output): SpecOpt[];

  /** Whether the container really runs as a HostProcess container on this runtime. */
  hostProcess(config: ContainerConfig__Output): boolean;

  /**
   * CreateContainer: hands the credential spec over to the backend and returns the Docker
   * security options that name it (none for containerd). Its removal on a later create failure
   * is declared on `cleanup`.
   */
  stageCredentialSpec(config: ContainerConfig__Output, containerId: string, cleanup: CleanupStack): Promise<string[]>;

  /** StartContainer: the credential spec text the backend starts the container with, if any (`config` is the container's). */
  credentialSpecAtStart(container: ContainerRecord, config: ContainerConfig__Output): Promise<string | undefined>;

  /** A StartContainer failure of the Windows path, as this runtime reports it. */
  startFailed(err: unknown, containerId: string): Error;

  /** RemoveContainer: removing the container's staged credential spec failed. */
  removeFailed(err: unknown, container: ContainerRecord): Error;

  /** Shown by `crictl inspect` under info.platform (the security options are info.securityOptions). */
  handoffView(container: ContainerRecord): Record<string, unknown>;
}
