import type { ImageConfig } from './image-config.js';

/** One repository of the built-in catalogue: its tags, size, config and Windows builds. */
export interface CatalogueEntry {
  repository: string;
  tags: string[];
  digest?: string;
  size: number;
  config: Partial<ImageConfig> & Pick<ImageConfig, 'os'>;
  /** Files of the image that its simulated programs read (an nginx configuration). */
  files?: Readonly<Record<string, string>>;
  /**
   * The Windows manifests of the list, one per build (`config.os` windows: the entry's only ones;
   * linux: besides the linux/amd64 one), with the Windows config when it differs.
   */
  windows?: { builds: readonly number[]; config?: Partial<ImageConfig> };
}

/**
 * The real Windows image families the built-in catalogue knows, and the upstream e2e images, as
 * multi-platform manifest lists. Sizes are the order of the real compressed sizes; configs follow
 * the images' Dockerfiles (nanoserver runs as ContainerUser, servercore and the images built on it
 * as ContainerAdministrator; IIS and ASP.NET start `ServiceMonitor.exe w3svc`).
 */

const LTSC2019 = 17763;
const LTSC2022 = 20348;
const LTSC2025 = 26100;
const ALL_LTSC = [LTSC2019, LTSC2022, LTSC2025] as const;
const BY_TAG: Readonly<Record<string, number>> = { ltsc2019: LTSC2019, '1809': LTSC2019, ltsc2022: LTSC2022, ltsc2025: LTSC2025 };

const CMD = ['c:\\windows\\system32\\cmd.exe'];
const SERVICE_MONITOR = ['C:\\ServiceMonitor.exe', 'w3svc'];
const E2E = 'registry.k8s.io/e2e-test-images';

/** One list per LTSC tag (`nanoserver:ltsc2022` is a list with the one Windows 2022 entry). */
function perLtsc(repository: string, prefix: string, size: number, config: CatalogueEntry['config'], tags: readonly string[] = ['ltsc2019', 'ltsc2022', 'ltsc2025']): CatalogueEntry[] {
  return tags.map((tag) => {
    const names = tag === 'ltsc2019' && prefix === '' ? ['ltsc2019', '1809'] : [`${prefix}${tag}`];
    return { repository, tags: names, size, config, windows: { builds: [BY_TAG[tag] ?? LTSC2022] } };
  });
}

const nanoserver: CatalogueEntry['config'] = { os: 'windows', user: 'ContainerUser', cmd: CMD, workingDir: 'C:\\' };
const servercore: CatalogueEntry['config'] = { os: 'windows', user: 'ContainerAdministrator', cmd: CMD, workingDir: 'C:\\' };
const iis: CatalogueEntry['config'] = { os: 'windows', user: 'ContainerAdministrator', entrypoint: SERVICE_MONITOR, workingDir: 'C:\\', exposedPorts: [80] };
const dotnet = (entrypoint: string[] | undefined, exposedPorts?: number[]): CatalogueEntry['config'] => ({
  os: 'windows', user: 'ContainerAdministrator', ...(entrypoint === undefined ? { cmd: CMD } : { entrypoint }), workingDir: 'C:\\',
  ...(exposedPorts === undefined ? {} : { exposedPorts }),
  env: ['PATH=C:\\Windows\\system32;C:\\Windows;C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\', 'COMPLUS_NGenProtectedProcess_FeatureEnabled=0'],
});

function dotnetFramework(kind: 'runtime' | 'aspnet' | 'sdk', size: number): CatalogueEntry[] {
  const repository = `mcr.microsoft.com/dotnet/framework/${kind}`;
  const config = kind === 'aspnet' ? dotnet(SERVICE_MONITOR, [80]) : dotnet(undefined);
  return [
    ...perLtsc(repository, '4.8-windowsservercore-', size, config, ['ltsc2019', 'ltsc2022']),
    ...perLtsc(repository, '4.8.1-windowsservercore-', size, config, ['ltsc2022', 'ltsc2025']),
    { repository, tags: ['4.8'], size, config, windows: { builds: [LTSC2019, LTSC2022] } },
    { repository, tags: ['4.8.1', 'latest'], size, config, windows: { builds: [LTSC2022, LTSC2025] } },
  ];
}

/** The Windows families (mcr.microsoft.com) and the Windows pause images. */
export const WINDOWS_FAMILIES: readonly CatalogueEntry[] = [
  ...perLtsc('mcr.microsoft.com/windows/nanoserver', '', 121_634_816, nanoserver),
  ...perLtsc('mcr.microsoft.com/windows/servercore', '', 2_362_232_012, servercore),
  ...perLtsc('mcr.microsoft.com/windows/server', '', 5_153_960_755, servercore, ['ltsc2022', 'ltsc2025']),
  ...perLtsc('mcr.microsoft.com/windows/servercore/iis', 'windowsservercore-', 2_523_922_432, iis),
  { repository: 'mcr.microsoft.com/windows/servercore/iis', tags: ['latest'], size: 2_523_922_432, config: iis, windows: { builds: ALL_LTSC } },
  ...dotnetFramework('runtime', 2_852_126_720),
  ...dotnetFramework('aspnet', 3_003_121_664),
  ...dotnetFramework('sdk', 4_617_089_843),
  ...['lts-nanoserver-', 'lts-windowsservercore-'].flatMap((prefix) =>
    perLtsc('mcr.microsoft.com/powershell', prefix, prefix.includes('nano') ? 303_038_464 : 2_469_606_195,
      { os: 'windows', user: prefix.includes('nano') ? 'ContainerUser' : 'ContainerAdministrator', cmd: ['pwsh.exe'], workingDir: 'C:\\' },
      ['ltsc2019', 'ltsc2022'])),
  { repository: 'mcr.microsoft.com/oss/kubernetes/pause', tags: ['3.9', '3.10', '3.10.1'], size: 126_877_696,
    config: { os: 'windows', user: 'ContainerUser', entrypoint: ['/pause.exe'] }, windows: { builds: ALL_LTSC } },
];

/**
 * The upstream e2e images (kubernetes test/utils/image/manifest.go, `initImageConfigs`) with the
 * Windows entries their lists carry; the linux-only ones (apparmor-loader, cuda-vector-add,
 * ipc-utils, node-perf, volume servers) have none. Tags are those of manifest.go as read; every
 * other reference still pulls through the unknown-image rule.
 */
export const E2E_IMAGES: readonly CatalogueEntry[] = [
  { repository: `${E2E}/agnhost`, tags: ['2.52'], size: 51_380_224, config: { os: 'linux', entrypoint: ['/agnhost'] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', entrypoint: ['/agnhost'] } } },
  { repository: `${E2E}/busybox`, tags: ['1.36.1-1'], size: 2_231_050, config: { os: 'linux', cmd: ['sh'] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', cmd: ['cmd.exe'] } } },
  { repository: `${E2E}/nginx`, tags: ['1.14-4', '1.15-4'], size: 7_012_300, config: { os: 'linux', cmd: ['nginx', '-g', 'daemon off;'], exposedPorts: [80] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', cmd: ['nginx.exe', '-g', 'daemon off;'] } } },
  { repository: `${E2E}/jessie-dnsutils`, tags: ['1.7'], size: 108_003_328, config: { os: 'linux', cmd: ['sh'] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', cmd: ['cmd.exe'] } } },
  ...['kitten', 'nautilus'].map((name): CatalogueEntry => ({ repository: `${E2E}/${name}`, tags: ['1.7'], size: 6_291_456,
    config: { os: 'linux', entrypoint: ['/test-webserver'], exposedPorts: [80] }, windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', entrypoint: ['/test-webserver'] } } })),
  { repository: `${E2E}/nonroot`, tags: ['1.4'], size: 2_300_000, config: { os: 'linux', user: '1234', cmd: ['sh'] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerUser', cmd: ['cmd.exe'] } } },
  { repository: `${E2E}/redis`, tags: ['5.0.5-3'], size: 32_505_856, config: { os: 'linux', cmd: ['redis-server'], exposedPorts: [6379] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', cmd: ['redis-server.exe'] } } },
  { repository: `${E2E}/resource-consumer`, tags: ['1.13'], size: 24_117_248, config: { os: 'linux', entrypoint: ['/consumer'], exposedPorts: [8080] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', entrypoint: ['/consumer'] } } },
  { repository: `${E2E}/sample-apiserver`, tags: ['1.29.2'], size: 41_943_040, config: { os: 'linux', entrypoint: ['/apiserver'] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', entrypoint: ['/apiserver'] } } },
  { repository: `${E2E}/regression-issue-74839`, tags: ['1.2'], size: 4_194_304, config: { os: 'linux', entrypoint: ['/regression-issue-74839'] },
    windows: { builds: ALL_LTSC, config: { user: 'ContainerAdministrator', entrypoint: ['/regression-issue-74839'] } } },
  { repository: `${E2E}/perl`, tags: ['5.26'], size: 327_155_712, config: { os: 'linux', cmd: ['perl'] } },
  { repository: `${E2E}/apparmor-loader`, tags: ['1.4'], size: 36_700_160, config: { os: 'linux', entrypoint: ['/usr/bin/loader'] } },
  { repository: `${E2E}/ipc-utils`, tags: ['1.3'], size: 2_306_867, config: { os: 'linux', cmd: ['sh'] } },
  ...['1.0', '2.3'].map((tag): CatalogueEntry => ({ repository: `${E2E}/cuda-vector-add`, tags: [tag], size: 1_048_576_000, config: { os: 'linux', cmd: ['/usr/local/cuda/samples/0_Simple/vectorAdd/vectorAdd'] } })),
  { repository: `${E2E}/volume/nfs`, tags: ['1.4'], size: 83_886_080, config: { os: 'linux', entrypoint: ['/usr/local/bin/run_nfs.sh'] } },
];

/** The LTSC builds an upstream multi-platform list carries Windows entries for. */
export const E2E_WINDOWS_BUILDS: readonly number[] = ALL_LTSC;
