import { expect } from 'chai';
import { normaliseImageReference, parseImageReference } from '../../src/runtime/images/reference.js';
import { RuntimeError } from '../../src/runtime/errors.js';
import { imageSpec, openRuntime, pull, rejection, type RuntimeFixture } from './helpers.js';

const STAGING = 'gcr.io/k8s-staging-cri-tools';

describe('image references', () => {
  const cases: [string, string][] = [
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['library/busybox', 'docker.io/library/busybox:latest'],
    ['someone/app:v2', 'docker.io/someone/app:v2'],
    ['localhost:5000/app', 'localhost:5000/app:latest'],
    ['mcr.microsoft.com/windows/nanoserver:ltsc2022', 'mcr.microsoft.com/windows/nanoserver:ltsc2022'],
    [`${STAGING}/test-image-digest@sha256:${'a'.repeat(64)}`, `${STAGING}/test-image-digest@sha256:${'a'.repeat(64)}`],
    [`nginx:1.2@sha256:${'b'.repeat(64)}`, `docker.io/library/nginx@sha256:${'b'.repeat(64)}`],
  ];
  for (const [input, expected] of cases) {
    it(`normalises ${input} to ${expected}`, () => expect(normaliseImageReference(input)).to.equal(expected));
  }

  for (const bad of ['', 'Busybox', 'a b', 'busybox:', 'busybox@sha256:short', 'busybox:tag!']) {
    it(`refuses ${JSON.stringify(bad)} as InvalidArgument naming it`, () => {
      let caught: unknown;
      try {
        parseImageReference(bad);
      } catch (err) {
        caught = err;
      }
      expect(caught).to.be.instanceOf(RuntimeError);
      expect((caught as RuntimeError).code).to.equal('InvalidArgument');
      expect((caught as RuntimeError).message).to.contain(`"${bad}"`);
    });
  }
});

describe('runtime: image service', () => {
  let fx: RuntimeFixture;
  beforeEach(async () => (fx = await openRuntime()));
  afterEach(async () => fx.close());

  const status = async (ref: string) => (await fx.runtime.imageStatus({ image: imageSpec(ref), verbose: false })).image;

  it('pulls a tagged image and reports it by tag, id and repo digest alike', async () => {
    const ref = `${STAGING}/test-image-tag:all`;
    const id = await pull(fx.runtime, ref);
    expect(id).to.match(/^sha256:[0-9a-f]{64}$/);
    const byTag = await status(ref);
    expect(byTag?.id).to.equal(id);
    expect(byTag?.repo_tags).to.deep.equal([ref]);
    expect(Number(byTag?.size)).to.be.greaterThan(0);
    expect(await status(id)).to.deep.equal(byTag);
    expect(await status(id.slice(7))).to.deep.equal(byTag);
    for (const digest of byTag?.repo_digests ?? []) expect(await status(digest)).to.deep.equal(byTag);
    expect(byTag?.repo_digests).to.have.length(1);
  });

  it('normalises an untagged reference to :latest and finds it by the short name', async () => {
    await pull(fx.runtime, 'busybox');
    const img = await status('docker.io/library/busybox:latest');
    expect(img?.repo_tags).to.deep.equal(['docker.io/library/busybox:latest']);
    expect((await status('busybox'))?.id).to.equal(img?.id);
  });

  it('pulls by digest with no tags and the digest as repo digest', async () => {
    const ref = `${STAGING}/test-image-digest@sha256:9700f9a2f5bf2c45f2f605a0bd3bce7cf37420ec9d3ed50ac2758413308766bf`;
    await pull(fx.runtime, ref);
    const img = await status(ref);
    expect(img?.repo_tags).to.deep.equal([]);
    expect(img?.repo_digests).to.deep.equal([ref]);
  });

  it('with --unknown-images not-found, fails a pull of an image nobody described, as a registry would', async () => {
    await fx.close();
    fx = await openRuntime({ images: { unknownImages: 'not-found' } });
    // containerd 2.x: PullImage's `failed to pull and unpack image %q: %w` around the resolver's error.
    const err = await rejection(pull(fx.runtime, 'gcr.io/nowhere/nothing:1'));
    expect(err.code).to.equal('NotFound');
    expect(err.message).to.equal('failed to pull and unpack image "gcr.io/nowhere/nothing:1": failed to resolve reference "gcr.io/nowhere/nothing:1": gcr.io/nowhere/nothing:1: not found');
    const hub = await rejection(pull(fx.runtime, 'nosuchimage'));
    expect(hub.message).to.contain('pull access denied, repository does not exist');
    expect((await fx.runtime.listImages({ filter: null })).images).to.deep.equal([]);
  });

  it('keeps one image for several tags and removes every tag when removed by id', async () => {
    const ids = [];
    for (const t of ['1', '2', '3']) ids.push(await pull(fx.runtime, `${STAGING}/test-image-tags:${t}`));
    expect(new Set(ids).size).to.equal(1);
    const listed = (await fx.runtime.listImages({ filter: null })).images ?? [];
    expect(listed).to.have.length(1);
    expect([...(listed[0]?.repo_tags ?? [])].sort()).to.deep.equal([1, 2, 3].map((t) => `${STAGING}/test-image-tags:${t}`));
    await fx.runtime.removeImage({ image: imageSpec(ids[0] as string) });
    for (const t of ['1', '2', '3']) expect(await status(`${STAGING}/test-image-tags:${t}`)).to.equal(undefined);
    await fx.runtime.removeImage({ image: imageSpec(ids[0] as string) });
  });

  it('gives different images different ids', async () => {
    const ids = await Promise.all(['1', '2', '3'].map((n) => pull(fx.runtime, `${STAGING}/test-image-${n}:latest`)));
    expect(new Set(ids).size).to.equal(3);
  });

  it('reports image users: uid for numeric users, username otherwise', async () => {
    const cases: [string, string | undefined, string][] = [
      ['test-image-user-uid', '1002', ''],
      ['test-image-user-username', undefined, 'www-data'],
      ['test-image-user-uid-group', '1003', ''],
      ['test-image-user-username-group', undefined, 'www-data'],
    ];
    for (const [name, uid, username] of cases) {
      await pull(fx.runtime, `${STAGING}/${name}`);
      const img = await status(`${STAGING}/${name}`);
      expect(img?.uid?.value, name).to.equal(uid);
      expect(img?.username, name).to.equal(username);
    }
    await pull(fx.runtime, 'mcr.microsoft.com/windows/nanoserver:ltsc2022');
    expect((await status('mcr.microsoft.com/windows/nanoserver:ltsc2022'))?.username).to.equal('ContainerUser');
    await pull(fx.runtime, 'mcr.microsoft.com/windows/servercore:ltsc2019');
    expect((await status('mcr.microsoft.com/windows/servercore:ltsc2019'))?.username).to.equal('ContainerAdministrator');
  });

  it('filters ListImages by reference and reports the image filesystem', async () => {
    await pull(fx.runtime, 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022');
    await pull(fx.runtime, 'registry.k8s.io/pause:3.10');
    const filtered = await fx.runtime.listImages({ filter: { image: imageSpec('registry.k8s.io/pause:3.10') } });
    expect(filtered.images?.map((i) => i.repo_tags)).to.deep.equal([['registry.k8s.io/pause:3.10']]);
    expect(filtered.images?.[0]?.pinned).to.equal(true);
    expect((await fx.runtime.listImages({ filter: { image: imageSpec('') } })).images).to.have.length(2);
    const fs = await fx.runtime.imageFsInfo({});
    expect(Number(fs.image_filesystems?.[0]?.used_bytes?.value)).to.be.greaterThan(2_000_000_000);
    expect(fs.image_filesystems?.[0]?.fs_id?.mountpoint).to.equal(`${fx.runtime.context.settings.stateDir}/images`);
  });

  it('refuses an empty image reference, naming the field', async () => {
    const err = await rejection(fx.runtime.imageStatus({ image: imageSpec(''), verbose: false }));
    expect(err.code).to.equal('InvalidArgument');
    expect(err.message).to.contain('image.image');
  });
});
