import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { NodeRuntime } from '../../src/runtime/node-runtime.js';
import { join } from 'node:path';
import { file } from 'tmp-promise';
import { ImageWorld } from '../../src/runtime/images/image-world.js';
import { loadImagesFile, validateImagesSection, type ImagesSection } from '../../src/runtime/images/images-file.js';
import { credentialsFor, type PullAuth } from '../../src/runtime/images/registry-auth.js';
import { hypervIsolationCompatible, processIsolationCompatible } from '../../src/runtime/images/windows-compat.js';
import { RuntimeError } from '../../src/runtime/errors.js';
import { parseNodeFile } from '../../src/runtime/windows/node-directory.js';
import { CallConditions } from '../../src/runtime/call-conditions/call-conditions.js';
import { createContainer, imageSpec, openRuntime, pull, rejection, runSandbox, sandboxConfig, type RuntimeFixture } from './helpers.js';

const WS2019 = '10.0.17763';
const WS2022 = '10.0.20348';
const WS2025 = '10.0.26100';

describe('Windows container version compatibility', () => {
  // github.com/containerd/platforms platform_windows_compat.go checkWindowsHostAndContainerCompat
  // (the pull match and process isolation) and Microsoft's version compatibility matrix
  // (learn.microsoft.com/virtualization/windowscontainers/deploy-containers/version-compatibility):
  // Hyper-V isolation runs the host's build and older ones.
  const table: [host: string, image: string, process: boolean, hyperv: boolean][] = [
    [WS2019, '10.0.17763.6054', true, true],
    [WS2019, '10.0.17763.1', true, true],
    [WS2019, '10.0.20348.2849', false, false],
    [WS2019, '10.0.14393.7000', false, true],
    [WS2022, '10.0.20348.2849', true, true],
    [WS2022, '10.0.17763.6054', false, true],
    [WS2022, '10.0.26100.2605', false, false],
    [WS2025, '10.0.26100.2605', true, true],
    [WS2025, '10.0.20348.2849', true, true],
    [WS2025, '10.0.17763.6054', false, true],
    [WS2022, '6.3.9600.1', false, true],
  ];
  for (const [host, image, process, hyperv] of table) {
    it(`host ${host}, image ${image}: process ${process ? 'runs' : 'refused'}, Hyper-V ${hyperv ? 'runs' : 'refused'}`, () => {
      expect(processIsolationCompatible(host, image)).to.equal(process);
      expect(hypervIsolationCompatible(host, image)).to.equal(hyperv);
    });
  }
});

describe('image world: resolution in layers', () => {
  const world = (sections: ImagesSection[] = [], unknownImages?: 'windows' | 'linux' | 'not-found') =>
    new ImageWorld({ sections, hostBuild: WS2022, ...(unknownImages === undefined ? {} : { unknownImages }) });
  const windowsPull = { windows: true, hostBuild: WS2022 };
  const anyPull = { windows: false, hostBuild: WS2022 };

  it('takes the images file first, then the catalogue, then the unknown-image rule', () => {
    const w = world([{ images: [{ reference: 'mcr.microsoft.com/windows/nanoserver:ltsc2022', user: 'Someone' }] }]);
    expect(w.lookup('mcr.microsoft.com/windows/nanoserver:ltsc2022')?.layer).to.equal('images file');
    expect(w.lookup('mcr.microsoft.com/windows/servercore:ltsc2022')?.layer).to.equal('catalogue');
    expect(w.lookup('contoso.azurecr.io/webapp:1.0')?.layer).to.equal('unknown-image rule');
    expect(world([], 'not-found').lookup('contoso.azurecr.io/webapp:1.0')).to.equal(undefined);
  });

  it('an unknown reference is a Windows image of the node\'s build with the default program and no exposed ports', () => {
    const w = world();
    const found = w.lookup('contoso.azurecr.io/webapp:1.0');
    const image = w.select(found!.index, windowsPull, 'contoso.azurecr.io/webapp:1.0');
    expect(image.config.os).to.equal('windows');
    expect(image.config.osVersion).to.equal(`${WS2022}.1`);
    expect(image.config.program).to.deep.equal({});
    expect(image.config.exposedPorts).to.deep.equal([]);
    expect(image.config.entrypoint).to.deep.equal(['C:\\app\\webapp.exe']);
  });

  it('digests and ids are stable per reference and differ between references', () => {
    const a = world().lookup('contoso.azurecr.io/webapp:1.0')!.index;
    const b = world().lookup('contoso.azurecr.io/webapp:1.0')!.index;
    const c = world().lookup('contoso.azurecr.io/webapp:2.0')!.index;
    expect(a.digest).to.equal(b.digest);
    expect(a.manifests[0]!.id).to.equal(b.manifests[0]!.id);
    expect(c.manifests[0]!.id).to.not.equal(a.manifests[0]!.id);
    expect(a.digest).to.match(/^sha256:[0-9a-f]{64}$/);
  });

  it('a declared image gets its exposed ports, program and platforms', () => {
    const w = world([{ images: [{ reference: 'contoso.azurecr.io/legacy:1', platforms: [{ os: 'windows', osVersion: '10.0.17763.6054' }], exposedPorts: [8080], program: { exitAfterSeconds: 5, exitCode: 3 } }] }]);
    const image = w.select(w.lookup('contoso.azurecr.io/legacy:1')!.index, windowsPull, 'x');
    expect(image.config.exposedPorts).to.deep.equal([8080]);
    expect(image.config.program).to.deep.equal({ exitAfterSeconds: 5, exitCode: 3 });
    // One platform is one manifest: containerd does not match its platform at pull.
    expect(image.config.osVersion).to.equal('10.0.17763.6054');
  });

  it('a Windows pull takes the list entry the host runs, the highest os.version first', () => {
    const w = new ImageWorld({ hostBuild: WS2025 });
    const iis = w.select(w.lookup('mcr.microsoft.com/windows/servercore/iis:latest')!.index, { windows: true, hostBuild: WS2025 }, 'x');
    expect(iis.config.osVersion).to.equal('10.0.26100.2605');
    const w22 = world();
    expect(w22.select(w22.lookup('mcr.microsoft.com/windows/servercore/iis:latest')!.index, windowsPull, 'x').config.osVersion).to.equal('10.0.20348.2849');
  });

  it('a Windows pull of a list without an entry the host runs fails with containerd\'s text', () => {
    const w = world();
    for (const ref of ['docker.io/library/nginx:latest', 'mcr.microsoft.com/windows/nanoserver:ltsc2025', 'registry.k8s.io/e2e-test-images/perl:5.26']) {
      let caught: unknown;
      try {
        w.select(w.lookup(ref)!.index, windowsPull, ref);
      } catch (err) {
        caught = err;
      }
      // containerd core/images/handlers.go LimitManifests (`no match for platform in manifest: %w`,
      // errdefs.ErrNotFound), wrapped by internal/cri/server/images/image_pull.go.
      expect((caught as RuntimeError).code, ref).to.equal('NotFound');
      expect((caught as RuntimeError).message).to.equal(`failed to pull and unpack image "${ref}": no match for platform in manifest: not found`);
    }
  });

  it('any other pull takes the Linux entry of a multi-platform list, else a Windows one', () => {
    const w = world();
    expect(w.select(w.lookup('registry.k8s.io/e2e-test-images/busybox:1.36.1-1')!.index, anyPull, 'x').config.os).to.equal('linux');
    expect(w.select(w.lookup('registry.k8s.io/e2e-test-images/busybox:1.36.1-1')!.index, windowsPull, 'x').config.osVersion).to.equal('10.0.20348.2849');
    expect(w.select(w.lookup('mcr.microsoft.com/windows/nanoserver:ltsc2025')!.index, anyPull, 'x').config.osVersion).to.equal('10.0.26100.2605');
  });
});

describe('images file', () => {
  const bad: [string, unknown, string][] = [
    ['an unknown field', { images: [{ reference: 'a/b:1', colour: 'red' }] }, 'f.yaml: images[0].colour: is not a known field'],
    ['a bad rule', { unknownImages: 'maybe' }, 'f.yaml: unknownImages: must be one of windows, linux, not-found (got "maybe")'],
    ['a bad osVersion', { images: [{ reference: 'a/b:1', platforms: [{ os: 'windows', osVersion: 'ltsc2022' }] }] },
      'f.yaml: images[0].platforms[0].osVersion: must be a Windows version major.minor.build[.revision] (10.0.17763.6054) (got "ltsc2022")'],
    ['a bad port', { images: [{ reference: 'a/b:1', exposedPorts: [70000] }] }, 'f.yaml: images[0].exposedPorts[0]: must be <= 65535'],
    ['a reference twice', { images: [{ reference: 'a/b:1' }, { reference: 'docker.io/a/b:1' }] }, 'f.yaml: images[1].reference: "docker.io/a/b:1" is already described by images[0]'],
    ['a registry without credentials', { registries: [{ host: 'contoso.azurecr.io' }] }, 'f.yaml: registries[0]: needs credentials: username and password, auth, or identityToken'],
    ['a username without password', { registries: [{ host: 'contoso.azurecr.io', username: 'u' }] }, 'f.yaml: registries[0]: username and password go together'],
  ];
  for (const [what, data, message] of bad) {
    it(`refuses ${what}, naming the file and field`, () => {
      expect(() => validateImagesSection(data, 'f.yaml')).to.throw(RuntimeError, message);
    });
  }

  it('names the section\'s path in a node file', () => {
    expect(() => validateImagesSection({ images: [{}] }, 'node.yaml', 'images')).to.throw('node.yaml: images.images[0].reference: is required');
  });

  it('loads YAML and says which file could not be read', async () => {
    const fx = await openRuntime();
    try {
      const path = join(fx.stateDir.path, 'images.yaml');
      await writeFile(path, 'images:\n  - reference: contoso.azurecr.io/webapp:1.0\n    exposedPorts: [8080]\n');
      expect((await loadImagesFile(path)).images?.[0]?.exposedPorts).to.deep.equal([8080]);
      await rejection(loadImagesFile(join(fx.stateDir.path, 'none.yaml'))).then((err) => expect(err.message).to.equal(`${join(fx.stateDir.path, 'none.yaml')}: cannot read images file: no such file`));
    } finally {
      await fx.close();
    }
  });
});

describe('registry credentials (containerd ParseAuth)', () => {
  const auth = (over: Partial<PullAuth>): PullAuth => ({ username: '', password: '', auth: '', server_address: '', identity_token: '', registry_token: '', ...over });
  it('takes username/password, then identity_token, then auth decoded', () => {
    expect(credentialsFor(auth({ username: 'u', password: 'p' }), 'h')).to.deep.equal({ username: 'u', secret: 'p' });
    expect(credentialsFor(auth({ identity_token: 't' }), 'h')).to.deep.equal({ username: '', secret: 't' });
    expect(credentialsFor(auth({ auth: Buffer.from('u:p').toString('base64') }), 'h')).to.deep.equal({ username: 'u', secret: 'p' });
    expect(credentialsFor(auth({}), 'h')).to.equal(undefined);
  });
  it('gives nothing when server_address names another host', () => {
    expect(credentialsFor(auth({ username: 'u', password: 'p', server_address: 'https://other.io' }), 'h.io')).to.equal(undefined);
    expect(credentialsFor(auth({ username: 'u', password: 'p', server_address: 'https://h.io' }), 'h.io')).to.deep.equal({ username: 'u', secret: 'p' });
  });
});

describe('runtime: pulls on a Windows node', () => {
  let fx: RuntimeFixture;
  const section: ImagesSection = { registries: [{ host: 'contoso.azurecr.io', username: 'ci', password: 's3cret' }] };
  beforeEach(async () => {
    fx = await openRuntime({ defaultSandboxOs: 'windows' });
  });
  afterEach(async () => fx.close());

  const pullWith = (ref: string, auth: Partial<PullAuth> | null, sandbox = null as ReturnType<typeof sandboxConfig> | null) =>
    fx.runtime.pullImage({ image: imageSpec(ref), auth: auth === null ? null : { username: '', password: '', auth: '', server_address: '', identity_token: '', registry_token: '', ...auth }, sandbox_config: sandbox });

  it('pulls an image nobody described as a Windows image of the node\'s build', async () => {
    const id = await pull(fx.runtime, 'contoso.azurecr.io/webapp:1.0');
    const status = await fx.runtime.imageStatus({ image: imageSpec(id), verbose: true });
    expect(JSON.parse(status.info?.info ?? '{}').imageSpec).to.include({ os: 'windows', 'os.version': '10.0.20348.1' });
  });

  it('refuses a Linux-only image with containerd\'s text; on a Linux-default runtime only a Windows sandbox config does', async () => {
    const err = await rejection(pull(fx.runtime, 'nginx'));
    expect(err.code).to.equal('NotFound');
    expect(err.message).to.equal('failed to pull and unpack image "docker.io/library/nginx:latest": no match for platform in manifest: not found');
    await fx.close();
    fx = await openRuntime();
    expect((await pullWith('nginx', null)).image_ref).to.match(/^sha256:/);
    const windows = sandboxConfig({ windows: { security_context: null } as never });
    expect((await rejection(pullWith('docker.io/library/httpd:2.4', null, windows))).message).to.contain('no match for platform in manifest: not found');
  });

  it('a private registry refuses a pull without credentials (401) and accepts the right ones', async () => {
    const images = await file({ postfix: '.yaml' });
    await writeFile(images.path, JSON.stringify(section));
    await fx.close();
    try {
      fx = await openRuntime({ defaultSandboxOs: 'windows', images: { file: images.path } });
    } finally {
      await images.cleanup();
    }
    // containerd 2.x core/remotes/docker/authorizer.go (anonymous token GET, then the POST/GET
    // fallback with credentials), wrapped by the resolver and PullImage; gRPC Unknown.
    const realm = 'https://contoso.azurecr.io/oauth2/token?scope=repository%3Awebapp%3Apull&service=contoso.azurecr.io';
    const anonymous = await rejection(pullWith('contoso.azurecr.io/webapp:1.0', null));
    expect(anonymous.code).to.equal('Unknown');
    expect(anonymous.message).to.equal(`failed to pull and unpack image "contoso.azurecr.io/webapp:1.0": failed to resolve reference "contoso.azurecr.io/webapp:1.0": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to ${realm}: 401 Unauthorized`);
    const wrong = await rejection(pullWith('contoso.azurecr.io/webapp:1.0', { username: 'ci', password: 'nope' }));
    expect(wrong.message).to.equal(`failed to pull and unpack image "contoso.azurecr.io/webapp:1.0": failed to resolve reference "contoso.azurecr.io/webapp:1.0": failed to authorize: unexpected status from GET request to ${realm}: 401 Unauthorized`);
    expect(wrong.message).to.not.contain('nope');
    expect((await pullWith('contoso.azurecr.io/webapp:1.0', { username: 'ci', password: 's3cret' })).image_ref).to.match(/^sha256:/);
    expect((await pullWith('contoso.azurecr.io/other:2', { auth: Buffer.from('ci:s3cret').toString('base64') })).image_ref).to.match(/^sha256:/);
  });

  it('refuses a pull for a runtime handler the node does not have, as containerd does', async () => {
    const err = await rejection(fx.runtime.pullImage({ image: { ...imageSpec('busybox'), runtime_handler: 'kata' }, auth: null, sandbox_config: null }));
    // containerd 2.x internal/cri/server/images/image_pull.go: `unknown runtime handler %q: %w` (errdefs.ErrInvalidArgument).
    expect(err.code).to.equal('InvalidArgument');
    expect(err.message).to.equal('unknown runtime handler "kata": invalid argument');
  });
});

describe('image world: tags of known repositories', () => {
  it('a tag a described repository does not have is not found, not the unknown-image rule', () => {
    const w = new ImageWorld({ hostBuild: WS2022, sections: [{ images: [{ reference: 'contoso.azurecr.io/webapp:1.0' }] }] });
    expect(w.lookup('mcr.microsoft.com/windows/nanoserver:no-such-tag')).to.equal(undefined);
    expect(w.lookup('contoso.azurecr.io/webapp:9.9')).to.equal(undefined);
    expect(w.lookup('contoso.azurecr.io/other:9.9')?.layer).to.equal('unknown-image rule');
  });
});

describe('latency of Hyper-V isolation', () => {
  it('a Hyper-V isolated pod\'s RunPodSandbox takes the profile\'s utility VM boot on top (same seed, same first draw)', () => {
    const plan = (handler: string) => new CallConditions({ latencyProfile: 'windows-server-2022', seed: 11 }, 'WINNODE1').plan('RunPodSandbox', { runtime_handler: handler }).delayMs;
    const process = plan('runhcs-wcow-process');
    expect(plan('')).to.equal(process);
    // The sandbox's own draw is the same; the boot is drawn after it (median 4 s on this profile).
    expect(plan('runhcs-wcow-hypervisor')).to.be.greaterThan(process + 500);
    expect(new CallConditions({ latencyProfile: 'linux-containerd', seed: 11 }, 'n').plan('RunPodSandbox', { runtime_handler: 'runhcs-wcow-hypervisor' }).delayMs)
      .to.equal(new CallConditions({ latencyProfile: 'linux-containerd', seed: 11 }, 'n').plan('RunPodSandbox', { runtime_handler: '' }).delayMs);
  });
});

describe('node file: isolation and images', () => {
  const node = (extra: Record<string, unknown>, images?: unknown) => ({
    node: { name: 'N1', hostname: 'n1', ...extra },
    domains: [],
    ...(images === undefined ? {} : { images }),
  });
  it('takes isolation and an images section, checked with the images schema under images.', () => {
    expect(parseNodeFile(JSON.stringify(node({ osBuild: '10.0.17763', isolation: ['process'] }, { images: [{ reference: 'a/b:1' }] })), 'n.yaml').isolation).to.deep.equal(['process']);
    expect(() => parseNodeFile(JSON.stringify(node({ isolation: ['vm'] })), 'n.yaml')).to.throw('n.yaml: node.isolation[0]: must be process or hyperv (got "vm")');
    expect(() => parseNodeFile(JSON.stringify(node({}, { images: [{ reference: 'a/b:1', size: 0 }] })), 'n.yaml')).to.throw('n.yaml: images.images[0].size: must be >= 1');
  });
  it('a node without osBuild is a Windows Server 2022 host offering both isolations', () => {
    const d = parseNodeFile(JSON.stringify(node({})), 'n.yaml');
    expect([d.osBuild, d.isolation]).to.deep.equal(['10.0.20348', ['process', 'hyperv']]);
  });
  it('a node offering process isolation only has no Hyper-V handler', async () => {
    const dir = await openRuntime();
    const path = join(dir.stateDir.path, 'node.yaml');
    await writeFile(path, JSON.stringify(node({ isolation: ['process'] })));
    const fx = await openRuntime({ windows: { nodeFile: path } });
    try {
      expect(fx.runtime.context.settings.runtimeHandlers).to.deep.equal(['', 'runc', 'runhcs-wcow-process']);
    } finally {
      await fx.close();
      await dir.close();
    }
  });
});

describe('runtime: a bad images file', () => {
  it('stops the runtime before it creates anything, naming the file and field', async () => {
    const fx = await openRuntime();
    try {
      const path = join(fx.stateDir.path, 'images.yaml');
      await writeFile(path, 'images:\n  - reference: contoso.azurecr.io/webapp:1.0\n    exposedPorts: [http]\n');
      const stateDir = join(fx.stateDir.path, 'never-created');
      const err = await rejection(NodeRuntime.open({ stateDir, images: { file: path } }));
      expect(err.code).to.equal('InvalidArgument');
      expect(err.message).to.equal(`${path}: images[0].exposedPorts[0]: must be an integer, not a string`);
      expect(existsSync(stateDir)).to.equal(false);
      const rule = await rejection(NodeRuntime.open({ stateDir, images: { unknownImages: 'sometimes' } }));
      expect(rule.message).to.equal('--unknown-images: must be one of windows, linux, not-found, not "sometimes"');
      expect(existsSync(stateDir)).to.equal(false);
    } finally {
      await fx.close();
    }
  });
});

describe('runtime: the version rule at StartContainer, per flavor', () => {
  // hcsshim HCS_E_IMAGE_MISMATCH (0xC0370101); containerd's shim error carries `: unknown`
  // (ttrpc) inside `failed to create containerd task: failed to create shim task: `
  // (container_start.go); Docker's daemon error is `hcsshim::CreateComputeSystem <id>: …`,
  // which cri-dockerd wraps as `failed to start container %q: Error response from daemon: …`.
  const text = 'The container operating system does not match the host operating system.';
  const expected: Record<string, (id: string) => string> = {
    'containerd': (id) => `failed to create containerd task: failed to create shim task: hcs::CreateComputeSystem ${id}: ${text}: unknown`,
    'dockershim-kep': (id) => `hcsshim::CreateComputeSystem ${id}: ${text}`,
    'cri-dockerd': (id) => `failed to start container "${id}": Error response from daemon: hcsshim::CreateComputeSystem ${id}: ${text}`,
  };
  for (const [flavor, message] of Object.entries(expected)) {
    it(`${flavor}: an ltsc2019 image on the 2022 node fails to start (Unknown) and runs with the Hyper-V handler`, async () => {
      const fx = await openRuntime({ windows: { runtimeFlavor: flavor } });
      try {
        const windows = { windows: { security_context: null } as never };
        await pull(fx.runtime, 'mcr.microsoft.com/windows/nanoserver:ltsc2019');
        const sandbox = await runSandbox(fx.runtime, windows);
        const id = await createContainer(fx.runtime, sandbox, { command: ['ping', '-t', 'localhost'] }, 'mcr.microsoft.com/windows/nanoserver:ltsc2019');
        const err = await rejection(fx.runtime.startContainer({ container_id: id }));
        expect([err.code, err.message]).to.deep.equal(['Unknown', message(id)]);
        const config = sandboxConfig(windows);
        const hyperv = (await fx.runtime.runPodSandbox({ config, runtime_handler: 'runhcs-wcow-hypervisor' })).pod_sandbox_id ?? '';
        const runs = await createContainer(fx.runtime, { id: hyperv, config }, { command: ['ping', '-t', 'localhost'] }, 'mcr.microsoft.com/windows/nanoserver:ltsc2019');
        await fx.runtime.startContainer({ container_id: runs });
      } finally {
        await fx.close();
      }
    });
  }
});
