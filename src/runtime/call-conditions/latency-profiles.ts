/**
 * How long the RPCs of a real node take: per-RPC delay distributions for `--latency-profile`.
 * The figures and where each comes from are in docs/latency-and-faults.md; a figure that is our
 * own estimate (most per-RPC splits are: nobody publishes per-RPC CRI timings of a Windows node)
 * is marked so there. These tables are immutable and shared by every runtime of a process.
 */

/** A log-normal distribution given by its median and 95th percentile (both > 0, p95 ≥ median). */
export interface LogNormal {
  readonly median: number;
  readonly p95: number;
}

/** z of the standard normal's 95th percentile: p95 = median · e^(σ·z). */
const Z95 = 1.6448536269514722;

/** σ of the underlying normal (0 when p95 equals the median: a fixed delay). */
export function logNormalSigma(d: LogNormal): number {
  return Math.log(d.p95 / d.median) / Z95;
}

/** The value of `d` at the standard normal variate `z` (z = 0: the median). */
export function logNormalAt(d: LogNormal, z: number): number {
  return d.median * Math.exp(logNormalSigma(d) * z);
}

/**
 * One profile: a delay in milliseconds per RPC (the RPCs not named take no added time), and for
 * PullImage a fixed part plus a part per MiB of the image's size, both drawn per pull.
 */
export interface LatencyProfile {
  readonly name: LatencyProfileName;
  /** One line: the node it reproduces. */
  readonly describes: string;
  readonly rpcs: Readonly<Partial<Record<string, LogNormal>>>;
  readonly pull?: {
    /** Manifest, auth and registry round trips, milliseconds. */
    readonly fixedMs: LogNormal;
    /** Download and extraction (on Windows, the layer expansion dominates), milliseconds per MiB. */
    readonly perMiBMs: LogNormal;
  };
  /**
   * What a Hyper-V isolated pod adds to RunPodSandbox (runtime handler runhcs-wcow-hypervisor):
   * the utility VM boots before the pause container starts in it.
   */
  readonly hypervSandbox?: LogNormal;
}

export const LATENCY_PROFILE_NAMES = ['none', 'windows-server-2019', 'windows-server-2022', 'linux-containerd'] as const;
export type LatencyProfileName = (typeof LATENCY_PROFILE_NAMES)[number];

const ms = (median: number, p95: number): LogNormal => Object.freeze({ median, p95 });

/**
 * Windows Server 2019 (build 17763), process isolation, containerd or dockershim: container start
 * 1–2 s and more with Server Core images, sandbox creation adding an HNS endpoint, teardown
 * removing it. The kubelet's Windows density e2e allows a pod start-up p50 of 30 s and p99 of 59 s
 * (kubernetes v1.34 test/e2e/windows/density.go).
 */
const WINDOWS_SERVER_2019: LatencyProfile = Object.freeze({
  name: 'windows-server-2019',
  describes: 'Windows Server 2019 (10.0.17763), process isolation',
  rpcs: Object.freeze({
    RunPodSandbox: ms(3000, 8000),
    CreateContainer: ms(500, 2000),
    StartContainer: ms(2500, 7000),
    StopContainer: ms(1000, 4000),
    RemoveContainer: ms(400, 1500),
    StopPodSandbox: ms(1500, 5000),
    RemovePodSandbox: ms(500, 2000),
  }),
  pull: Object.freeze({ fixedMs: ms(1500, 5000), perMiBMs: ms(60, 200) }),
  hypervSandbox: ms(5000, 12000),
});

/**
 * Windows Server 2022 (build 20348): the same shape, container start-up 30–45 % faster than the
 * 1903 generation (Microsoft's .NET blog on the smaller Server Core images, which 2022 ships); we
 * take 35 % off the sandbox and container start medians and p95s.
 */
const WINDOWS_SERVER_2022: LatencyProfile = Object.freeze({
  name: 'windows-server-2022',
  describes: 'Windows Server 2022 (10.0.20348), process isolation',
  rpcs: Object.freeze({
    RunPodSandbox: ms(1950, 5200),
    CreateContainer: ms(450, 1800),
    StartContainer: ms(1600, 4500),
    StopContainer: ms(900, 3500),
    RemoveContainer: ms(350, 1300),
    StopPodSandbox: ms(1300, 4500),
    RemovePodSandbox: ms(450, 1800),
  }),
  pull: Object.freeze({ fixedMs: ms(1200, 4000), perMiBMs: ms(50, 170) }),
  hypervSandbox: ms(4000, 10000),
});

/**
 * containerd on Linux: `ctr run -d` of nginx in 0.07 s (norma.dev's containerd/dockerd
 * benchmark); a whole `docker run` 568 ms on a cloud SSD, of which namespace creation is 8–10 ms
 * (Khan 2026, arXiv:2602.15214); the pod start-up SLO is p99 ≤ 5 s without the pull
 * (kubernetes/community sig-scalability/slos/pod_startup_latency.md).
 */
const LINUX_CONTAINERD: LatencyProfile = Object.freeze({
  name: 'linux-containerd',
  describes: 'containerd on Linux (runc, overlayfs, a CNI plugin)',
  rpcs: Object.freeze({
    RunPodSandbox: ms(150, 500),
    CreateContainer: ms(40, 150),
    StartContainer: ms(70, 250),
    StopContainer: ms(20, 100),
    RemoveContainer: ms(20, 80),
    StopPodSandbox: ms(50, 200),
    RemovePodSandbox: ms(30, 120),
  }),
  pull: Object.freeze({ fixedMs: ms(300, 1000), perMiBMs: ms(25, 80) }),
});

const NONE: LatencyProfile = Object.freeze({ name: 'none', describes: 'no added latency', rpcs: Object.freeze({}) });

export const LATENCY_PROFILES: Readonly<Record<LatencyProfileName, LatencyProfile>> = Object.freeze({
  'none': NONE,
  'windows-server-2019': WINDOWS_SERVER_2019,
  'windows-server-2022': WINDOWS_SERVER_2022,
  'linux-containerd': LINUX_CONTAINERD,
});

export function isLatencyProfileName(name: string): name is LatencyProfileName {
  return (LATENCY_PROFILE_NAMES as readonly string[]).includes(name);
}
