/**
 * The OCI runtime spec of a simulated container, composed from small option functions as
 * containerd's CRI plugin does (oci.WithProcessArgs, WithEnv, WithUser, …). Each option does one
 * thing and can be tested alone; platform code adds its own (WithWindowsCredentialSpec …).
 */
import { copied, merged } from '../../tuning/merged.js';

export interface OciUser {
  uid?: number;
  gid?: number;
  additionalGids?: number[];
  /** Windows: the user name the process runs as (containerd sets process.user.username). */
  username?: string;
}

export interface OciMount {
  destination: string;
  source: string;
  type?: string;
  options?: string[];
}

/** The spec's `linux.seccomp`: the filter the container's processes run under. */
export interface OciSeccomp {
  defaultAction: string;
  syscalls?: { names: string[]; action: string }[];
  /** Which profile it came from (`runtime/default`, `localhost/<path>`), for `crictl inspect`. */
  profile?: string;
}

export interface OciSpec {
  ociVersion: string;
  process: {
    terminal: boolean;
    user: OciUser;
    args: string[];
    env: string[];
    cwd: string;
    noNewPrivileges?: boolean;
    capabilities?: { bounding?: string[]; effective?: string[]; permitted?: string[] };
  };
  root: { path: string; readonly?: boolean };
  hostname: string;
  mounts: OciMount[];
  annotations: Record<string, string>;
  linux?: {
    resources?: Record<string, unknown>;
    cgroupsPath?: string;
    namespaces?: { type: string; path?: string }[];
    seccomp?: OciSeccomp;
    maskedPaths?: string[];
    readonlyPaths?: string[];
    sysctl?: Record<string, string>;
  };
  windows?: {
    layerFolders?: string[];
    resources?: Record<string, unknown>;
    credentialSpec?: unknown;
    network?: Record<string, unknown>;
    hyperv?: Record<string, unknown>;
    [key: string]: unknown;
  };
}

export type SpecOpt = (spec: OciSpec) => void;

/** A fresh spec for the platform, before any option. */
export function baseSpec(os: 'linux' | 'windows'): OciSpec {
  if (os === 'windows') {
    return {
      ociVersion: '1.1.0',
      process: { terminal: false, user: { username: '' }, args: [], env: [], cwd: 'C:\\' },
      root: { path: '' },
      hostname: '',
      mounts: [],
      annotations: {},
      windows: { layerFolders: [] },
    };
  }
  return {
    ociVersion: '1.1.0',
    process: { terminal: false, user: { uid: 0, gid: 0 }, args: [], env: [], cwd: '/', noNewPrivileges: false },
    root: { path: 'rootfs' },
    hostname: '',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
    ],
    annotations: {},
    linux: { namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }, { type: 'network' }] },
  };
}

/** Applies the options in order to a fresh spec. */
export function composeSpec(os: 'linux' | 'windows', ...opts: SpecOpt[]): OciSpec {
  const spec = baseSpec(os);
  for (const opt of opts) opt(spec);
  return spec;
}

export const withProcessArgs = (args: readonly string[]): SpecOpt => (spec) => {
  spec.process.args = [...args];
};

/**
 * Sets variables (`KEY=value`), replacing an earlier value of the same key and keeping the
 * order of first appearance, as the image env is overridden by the container's envs.
 */
export const withEnv = (env: readonly string[]): SpecOpt => (spec) => {
  const merged = new Map<string, string>();
  for (const entry of [...spec.process.env, ...env]) {
    const eq = entry.indexOf('=');
    const key = eq < 0 ? entry : entry.slice(0, eq);
    merged.set(key, entry);
  }
  spec.process.env = [...merged.values()];
};

export const withCwd = (cwd: string): SpecOpt => (spec) => {
  if (cwd !== '') spec.process.cwd = cwd;
};

export const withHostname = (hostname: string): SpecOpt => (spec) => {
  spec.hostname = hostname;
};

export const withAnnotations = (annotations: Record<string, string>): SpecOpt => (spec) => {
  spec.annotations = merged(spec.annotations, annotations);
};

export const withMounts = (mounts: readonly OciMount[]): SpecOpt => (spec) => {
  const destinations = new Set(mounts.map((m) => m.destination));
  spec.mounts = [...spec.mounts.filter((m) => !destinations.has(m.destination)), ...mounts];
};

export const withReadonlyRootfs = (readonly: boolean): SpecOpt => (spec) => {
  spec.root.readonly = readonly;
};

export const withTerminal = (tty: boolean): SpecOpt => (spec) => {
  spec.process.terminal = tty;
};

/**
 * The image's USER: on Windows a user name (process.user.username); on Linux a uid, `uid:gid`,
 * or a name (resolved in the image's /etc/passwd by a real runtime; kept as the name here).
 */
export const withImageUser = (user: string): SpecOpt => (spec) => {
  if (spec.windows !== undefined) {
    spec.process.user = { username: user };
    return;
  }
  if (user === '') return;
  const [name = '', group] = user.split(':');
  const next: OciUser = copied(spec.process.user);
  if (/^[0-9]+$/.test(name)) next.uid = Number(name);
  else next.username = name;
  if (group !== undefined && /^[0-9]+$/.test(group)) next.gid = Number(group);
  spec.process.user = next;
};

/** Linux run_as_user / run_as_group / supplemental groups from the CRI security context. */
export const withLinuxUser = (uid: number | undefined, gid: number | undefined, groups: readonly number[] = []): SpecOpt => (spec) => {
  const next: OciUser = copied(spec.process.user);
  if (uid !== undefined) {
    next.uid = uid;
    delete next.username;
    if (gid === undefined) next.gid = next.gid ?? 0;
  }
  if (gid !== undefined) next.gid = gid;
  if (groups.length > 0) next.additionalGids = [...groups];
  spec.process.user = next;
};

// Windows run_as_username and the other Windows options: src/runtime/windows/oci-windows.ts.

export const withNoNewPrivileges = (on: boolean): SpecOpt => (spec) => {
  spec.process.noNewPrivileges = on;
};

export const withLinuxResources = (resources: Record<string, unknown> | undefined): SpecOpt => (spec) => {
  if (resources === undefined || spec.linux === undefined) return;
  spec.linux.resources = resources;
};

export const withWindowsResources = (resources: Record<string, unknown> | undefined): SpecOpt => (spec) => {
  if (resources === undefined || spec.windows === undefined) return;
  spec.windows.resources = resources;
};

export const withSysctls = (sysctls: Record<string, string>): SpecOpt => (spec) => {
  if (spec.linux === undefined || Object.keys(sysctls).length === 0) return;
  spec.linux.sysctl = { ...sysctls };
};

export const withCgroupsPath = (path: string): SpecOpt => (spec) => {
  if (spec.linux !== undefined && path !== '') spec.linux.cgroupsPath = path;
};

/** Environment of a spec as a map (what a simulated process sees). */
export function specEnv(spec: OciSpec): Map<string, string> {
  const env = new Map<string, string>();
  for (const entry of spec.process.env) {
    const eq = entry.indexOf('=');
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return env;
}
