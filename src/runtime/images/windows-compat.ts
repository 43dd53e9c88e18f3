/**
 * Which Windows container builds a host runs, as containerd and hcsshim decide it.
 *
 * - Pull (containerd 2.x): the platform matcher of the host's default spec
 *   (github.com/containerd/platforms platform_windows_compat.go, checkWindowsHostAndContainerCompat):
 *   major and minor must be equal; a host older than Windows Server 2022 (build 20348) takes its own
 *   build only; from 20348 on, a host takes every build from 20348 up to its own (the stable ABI of
 *   Windows Server 2022 and later). Among matching entries of a manifest list the highest
 *   os.version wins (windowsMatchComparer.Less).
 * - Start (hcsshim, HCS_E_IMAGE_MISMATCH 0xC0370101): process isolation follows the same rule
 *   (Microsoft's Windows container version compatibility matrix: a container's build must equal
 *   the host's, Windows Server 2025 hosts also run Windows Server 2022 images); Hyper-V isolation
 *   runs the host's build and every older one, never a newer one.
 */

/** A Windows version `major.minor.build[.revision]` as numbers; undefined when not of that form. */
export interface WindowsVersion {
  major: number;
  minor: number;
  build: number;
}

/** Windows Server 2022 (ltsc2022): the first build with the stable container ABI. */
export const WINDOWS_SERVER_2022_BUILD = 20348;

/** The LTSC builds and the names their tags and docs use. */
export const LTSC_BUILDS: readonly { readonly tag: string; readonly build: number; readonly osVersion: string; readonly release: string }[] = [
  { tag: 'ltsc2019', build: 17763, osVersion: '10.0.17763.6054', release: 'Windows Server 2019' },
  { tag: 'ltsc2022', build: 20348, osVersion: '10.0.20348.2849', release: 'Windows Server 2022' },
  { tag: 'ltsc2025', build: 26100, osVersion: '10.0.26100.2605', release: 'Windows Server 2025' },
];

export function parseWindowsVersion(text: string): WindowsVersion | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,5})(?:\.\d{1,6})?$/.exec(text);
  if (m === null) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), build: Number(m[3]) };
}

/** `10.0.20348`: the build part of an os.version (what the node file's osBuild holds). */
export function buildOf(osVersion: string): string {
  return osVersion.split('.').slice(0, 3).join('.');
}

/**
 * containerd's pull-time match (and hcsshim's process-isolation rule): may a host of `host` run a
 * container image of `container` process-isolated? An empty or unparsable container version
 * matches (containerd: "HPC containers do not have OS version filled").
 */
export function processIsolationCompatible(host: string, container: string): boolean {
  const h = parseWindowsVersion(host);
  const c = parseWindowsVersion(container);
  if (h === undefined || c === undefined) return true;
  if (h.major !== c.major || h.minor !== c.minor) return false;
  if (h.build < WINDOWS_SERVER_2022_BUILD) return h.build === c.build;
  return c.build >= WINDOWS_SERVER_2022_BUILD && c.build <= h.build;
}

/** Hyper-V isolation: the container's kernel is the image's own; the host runs its build and older ones. */
export function hypervIsolationCompatible(host: string, container: string): boolean {
  const h = parseWindowsVersion(host);
  const c = parseWindowsVersion(container);
  if (h === undefined || c === undefined) return true;
  if (h.major !== c.major || h.minor !== c.minor) return c.major < h.major || (c.major === h.major && c.minor < h.minor);
  return c.build <= h.build;
}

/** The isolation modes a Windows node offers (node file `node.isolation`). */
export type IsolationMode = 'process' | 'hyperv';

/** containerd's runtime handler names for the two modes on a Windows node (its default config for Windows). */
export const PROCESS_HANDLER = 'runhcs-wcow-process';
export const HYPERV_HANDLER = 'runhcs-wcow-hypervisor';

/** The isolation of a Windows sandbox created with `handler` ('' is containerd's default, process isolation). */
export function isolationOfHandler(handler: string): IsolationMode {
  return handler === HYPERV_HANDLER ? 'hyperv' : 'process';
}

/** Whether a host of build `host` runs an image of `container` under `isolation`. */
export function windowsImageRuns(host: string, container: string, isolation: IsolationMode): boolean {
  return isolation === 'hyperv' ? hypervIsolationCompatible(host, container) : processIsolationCompatible(host, container);
}

/**
 * hcsshim's HCS_E_IMAGE_MISMATCH as Windows words it (FormatMessage of 0xC0370101), the text users
 * see in `kubectl describe` for an image whose build the host cannot run.
 */
export const IMAGE_MISMATCH_TEXT = 'The container operating system does not match the host operating system.';
