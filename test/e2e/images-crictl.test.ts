// The image world through the real crictl (docs/images.md): references nobody described, the
// catalogue's families and e2e images, the platform check of a Windows pull (containerd 2.x), the
// version rule at start (hcsshim HCS_E_IMAGE_MISMATCH) with process and Hyper-V isolation, the
// runtime handlers of a containerd Windows node, and a private registry.
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dir, type DirectoryResult } from 'tmp-promise';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC, windowsContainerConfig, windowsPodConfig } from './windows-support.js';

const IMAGES_FILE = `# A team's images: a legacy app built on a Windows Server 2019 build machine (one platform,
# one manifest), and a private registry.
images:
  - reference: contoso.azurecr.io/legacy:2019
    platforms: [{ os: windows, osVersion: 10.0.17763.6054 }]
    exposedPorts: [8080]
registries:
  - host: fabrikam.azurecr.io
    username: ci
    password: s3cret
`;

const HCS_MISMATCH = 'The container operating system does not match the host operating system.';

describe('images through the real crictl (default node: Windows Server 2022)', function () {
  this.timeout(90_000);
  let rt: RuntimeHandle | undefined;
  let imagesDir: DirectoryResult | undefined;
  const files = { windowsPod: '', hypervPod: '', gmsaPod: '', images: '' };
  const runtime = (): RuntimeHandle => {
    if (rt === undefined) throw new Error('the runtime is not running (see the before all hook)');
    return rt;
  };
  /** crictl's result, its stderr with the `\"` of its log lines unescaped. */
  const crictl = async (args: string[], check = true) => {
    const res = await runCrictl(runtime(), args, { check });
    return { ...res, stderr: res.stderr.replace(/\\"/g, '"') };
  };
  /** The image's program is the process emulator's (not part of this suite): run a command it knows. */
  const PING = ['ping', '-t', 'localhost'];
  /** A container config of `image` with a command the emulator knows (or none: the image's program). */
  const container = (name: string, image: string, command?: string[]): string => {
    const path = join(runtime().dir, `${name}.json`);
    writeFileSync(path, JSON.stringify(windowsContainerConfig(name, image, {}, command)));
    return path;
  };

  before(async function () {
    requireCriTool(this, 'crictl');
    imagesDir = await dir({ unsafeCleanup: true });
    files.images = join(imagesDir.path, 'images.yaml');
    writeFileSync(files.images, IMAGES_FILE);
    rt = await startRuntime({ name: 'images-crictl', args: ['--images', files.images] });
    const logs = join(rt.dir, 'pod-logs');
    mkdirSync(logs, { recursive: true });
    files.windowsPod = join(rt.dir, 'pod.json');
    writeFileSync(files.windowsPod, JSON.stringify(windowsPodConfig('web', logs)));
    files.hypervPod = join(rt.dir, 'pod-hyperv.json');
    writeFileSync(files.hypervPod, JSON.stringify(windowsPodConfig('web-hyperv', logs)));
    files.gmsaPod = join(rt.dir, 'pod-gmsa.json');
    writeFileSync(files.gmsaPod, JSON.stringify(windowsPodConfig('gmsa-hyperv', logs, { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC })));
  });

  after(async () => {
    await rt?.stop();
    await imagesDir?.cleanup();
  });

  it('pulls a team\'s own image, an upstream e2e image, a .NET Framework image and an ltsc2025 image', async () => {
    for (const ref of [
      'contoso.azurecr.io/webapp:1.0',
      'registry.k8s.io/e2e-test-images/busybox:1.36.1-1',
      'mcr.microsoft.com/dotnet/framework/aspnet:4.8-windowsservercore-ltsc2022',
      'mcr.microsoft.com/windows/nanoserver:ltsc2025',
    ]) {
      const res = await crictl(['pull', ref]);
      expect(res.stdout, ref).to.match(/^Image is up to date for sha256:[0-9a-f]{64}$/m);
    }
    const webapp = await crictlJson(runtime(), ['inspecti', 'contoso.azurecr.io/webapp:1.0']);
    // The unknown-image rule: a Windows image of the node's build.
    expect(webapp.info.imageSpec).to.include({ os: 'windows', 'os.version': '10.0.20348.1' });
    // The same reference, the same digest and id.
    const again = await crictlJson(runtime(), ['inspecti', 'contoso.azurecr.io/webapp:1.0']);
    expect(again.status.id).to.equal(webapp.status.id);
  });

  it('a Windows pull of an upstream e2e image takes its Windows entry for the host\'s build', async () => {
    for (const ref of ['registry.k8s.io/e2e-test-images/agnhost:2.52', 'registry.k8s.io/e2e-test-images/busybox:1.36.1-1']) {
      await crictl(['rmi', ref], false);
      await crictl(['pull', '--pod-config', files.windowsPod, ref]);
      const image = await crictlJson(runtime(), ['inspecti', ref]);
      expect(image.info.imageSpec, ref).to.include({ os: 'windows', 'os.version': '10.0.20348.2849' });
    }
  });

  it('a Windows pull of a Linux-only image fails with containerd\'s text', async () => {
    const res = await crictl(['pull', '--pod-config', files.windowsPod, 'docker.io/library/nginx:latest'], false);
    expect(res.code).to.not.equal(0);
    // containerd 2.x: core/images/handlers.go LimitManifests, wrapped by CRI PullImage; NotFound.
    expect(res.stderr).to.contain('code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:latest": no match for platform in manifest: not found');
  });

  it('lists runhcs-wcow-process and runhcs-wcow-hypervisor in crictl info, and refuses an unknown handler as containerd', async () => {
    const info = await crictlJson(runtime(), ['info']);
    expect(info.runtimeHandlers.map((h: { name?: string }) => h.name ?? '')).to.include.members(['runhcs-wcow-process', 'runhcs-wcow-hypervisor']);
    const res = await crictl(['runp', '--runtime', 'kata', files.windowsPod], false);
    // containerd 2.x internal/cri/server/sandbox_run.go + internal/cri/config/config.go.
    expect(res.stderr).to.match(/code = Unknown desc = unable to get OCI runtime for sandbox "[0-9a-f]{64}": no runtime for "kata" is configured/);
  });

  it('an ltsc2025 image pulls on the 2022 host but cannot start, under process or Hyper-V isolation', async () => {
    const podId = (await crictl(['runp', files.windowsPod])).stdout.trim();
    const id = (await crictl(['create', podId, container('nano2025', 'mcr.microsoft.com/windows/nanoserver:ltsc2025', ['cmd', '/c', 'ping', '-t', 'localhost']), files.windowsPod])).stdout.trim();
    const res = await crictl(['start', id], false);
    // hcsshim HCS_E_IMAGE_MISMATCH (0xC0370101) through Docker's CreateComputeSystem (the default flavor).
    expect(res.stderr).to.contain(`hcsshim::CreateComputeSystem ${id}: ${HCS_MISMATCH}`);
    const hyperv = (await crictl(['runp', '--runtime', 'runhcs-wcow-hypervisor', files.hypervPod])).stdout.trim();
    const newer = (await crictl(['create', hyperv, container('nano2025-hv', 'mcr.microsoft.com/windows/nanoserver:ltsc2025', ['cmd', '/c', 'ping', '-t', 'localhost']), files.hypervPod])).stdout.trim();
    expect((await crictl(['start', newer], false)).stderr).to.contain(HCS_MISMATCH);
    await crictl(['rmp', '-f', podId, hyperv]);
  });

  it('an ltsc2019 image fails under process isolation and runs under runhcs-wcow-hypervisor, shown in inspect', async () => {
    await crictl(['pull', 'contoso.azurecr.io/legacy:2019']);
    const podId = (await crictl(['runp', files.windowsPod])).stdout.trim();
    const refused = (await crictl(['create', podId, container('legacy', 'contoso.azurecr.io/legacy:2019', PING), files.windowsPod])).stdout.trim();
    expect((await crictl(['start', refused], false)).stderr).to.contain(`hcsshim::CreateComputeSystem ${refused}: ${HCS_MISMATCH}`);
    const inspected = await crictlJson(runtime(), ['inspect', refused]);
    expect([inspected.status.state, inspected.status.reason]).to.deep.equal(['CONTAINER_EXITED', 'StartError']);

    const hyperv = (await crictl(['runp', '--runtime', 'runhcs-wcow-hypervisor', files.hypervPod])).stdout.trim();
    const runs = (await crictl(['create', hyperv, container('legacy-hv', 'contoso.azurecr.io/legacy:2019', PING), files.hypervPod])).stdout.trim();
    await crictl(['start', runs]);
    const started = await crictlJson(runtime(), ['inspect', runs]);
    expect(started.status.state).to.equal('CONTAINER_RUNNING');
    expect(started.info.platform).to.include({ isolation: 'hyperv', imageOsVersion: '10.0.17763.6054', hostOsBuild: '10.0.20348' });
    const pod = await crictlJson(runtime(), ['inspectp', hyperv]);
    expect(pod.info.runtimeHandler).to.equal('runhcs-wcow-hypervisor');
    expect(pod.info.runtimeOptions).to.deep.equal({ SandboxIsolation: 1 });
    await crictl(['rmp', '-f', podId, hyperv]);
  });

  it('a gMSA works in a Hyper-V isolated container (supported from Windows Server 2019 on)', async () => {
    await crictl(['pull', 'mcr.microsoft.com/windows/servercore:ltsc2022']);
    const podId = (await crictl(['runp', '--runtime', 'runhcs-wcow-hypervisor', files.gmsaPod])).stdout.trim();
    const security = { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
    const path = join(runtime().dir, 'gmsa-app.json');
    writeFileSync(path, JSON.stringify(windowsContainerConfig('gmsa-app', 'mcr.microsoft.com/windows/servercore:ltsc2022', security, ['ping', '-t', 'localhost'])));
    const id = (await crictl(['create', podId, path, files.gmsaPod])).stdout.trim();
    await crictl(['start', id]);
    const out = await crictl(['exec', '-s', id, 'cmd', '/c', 'nltest /parentdomain']);
    expect(out.stdout.replace(/\r\n/g, '\n')).to.contain('contoso.com. (1)');
    await crictl(['rmp', '-f', podId]);
  });

  it('a private registry refuses a pull without credentials (401) and accepts crictl pull --creds', async () => {
    const refused = await crictl(['pull', 'fabrikam.azurecr.io/app:1'], false);
    // containerd 2.x core/remotes/docker/authorizer.go, through the resolver and CRI PullImage.
    expect(refused.stderr).to.contain('failed to pull and unpack image "fabrikam.azurecr.io/app:1": failed to resolve reference "fabrikam.azurecr.io/app:1": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://fabrikam.azurecr.io/oauth2/token?scope=repository%3Aapp%3Apull&service=fabrikam.azurecr.io: 401 Unauthorized');
    const wrong = await crictl(['pull', '--creds', 'ci:wrong', 'fabrikam.azurecr.io/app:1'], false);
    expect(wrong.stderr).to.contain('401 Unauthorized');
    expect(wrong.stderr).to.not.contain('wrong');
    expect((await crictl(['pull', '--creds', 'ci:s3cret', 'fabrikam.azurecr.io/app:1'])).stdout).to.match(/^Image is up to date for sha256:/m);
  });
});
