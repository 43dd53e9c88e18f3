import { expect } from 'chai';
import type { LinuxContainerSecurityContext__Output } from '../../src/generated/runtime/v1/LinuxContainerSecurityContext.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox, securityContext, type RuntimeFixture } from './helpers.js';

describe('runtime: create-time validation', () => {
  let fx: RuntimeFixture;
  beforeEach(async () => {
    fx = await openRuntime();
    await pull(fx.runtime, BUSYBOX);
  });
  afterEach(async () => fx.close());

  const create = async (sc: Partial<LinuxContainerSecurityContext__Output>) => {
    const sb = await runSandbox(fx.runtime);
    return createContainer(fx.runtime, sb, { command: ['top'], linux: { resources: null, security_context: securityContext(sc) } });
  };

  it('refuses run_as_group without run_as_user, naming the field, and creates nothing', async () => {
    const err = await rejection(create({ run_as_group: { value: '1002' } }));
    expect(err.code).to.equal('InvalidArgument');
    expect(err.message).to.contain('config.linux.security_context.run_as_group 1002 is set without run_as_user');
    expect((await fx.runtime.listContainers({ filter: null })).containers).to.deep.equal([]);
  });

  it('accepts run_as_group with run_as_user and puts both in the OCI spec and the status', async () => {
    const id = await create({ run_as_user: { value: '1000' }, run_as_group: { value: '1002' }, supplemental_groups: ['1234'] });
    const res = await fx.runtime.containerStatus({ container_id: id, verbose: true });
    expect(JSON.parse(res.info?.['info'] ?? '{}').runtimeSpec.process.user).to.deep.equal({ uid: 1000, gid: 1002, additionalGids: [1234] });
    expect(res.status?.user?.linux).to.deep.equal({ uid: '1000', gid: '1002', supplemental_groups: ['1002', '1234'] });
  });

  for (const path of ['', 'unconfined', 'runtime/default', 'docker/default', 'localhost/profiles/block.json']) {
    it(`accepts seccomp_profile_path ${JSON.stringify(path)}`, async () => {
      expect(await create({ seccomp_profile_path: path })).to.match(/^[0-9a-f]{64}$/);
    });
  }

  for (const path of ['runtime/other', '/abs/profile.json', 'localhost/', 'Unconfined']) {
    it(`refuses seccomp_profile_path ${JSON.stringify(path)} naming the field and the value`, async () => {
      const err = await rejection(create({ seccomp_profile_path: path }));
      expect(err.code).to.equal('InvalidArgument');
      expect(err.message).to.contain(`config.linux.security_context.seccomp_profile_path "${path}" is not supported`);
    });
  }

  it('refuses a Localhost seccomp profile without a localhost_ref', async () => {
    const err = await rejection(create({ seccomp: { profile_type: 2, localhost_ref: '' } }));
    expect(err.message).to.contain('config.linux.security_context.seccomp.localhost_ref must be set');
  });

  it('refuses an empty image name, naming the field', async () => {
    const sb = await runSandbox(fx.runtime);
    const noName = await rejection(createContainer(fx.runtime, sb, { command: ['top'] }, ''));
    expect(noName.code).to.equal('InvalidArgument');
    expect(noName.message).to.equal('config.image.image must not be empty');
  });
});
