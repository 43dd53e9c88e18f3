import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dir } from 'tmp-promise';
import type { LinuxContainerSecurityContext__Output } from '../../src/generated/runtime/v1/LinuxContainerSecurityContext.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox, securityContext, type RuntimeFixture } from './helpers.js';

const privilegedSandbox = {
  cgroup_parent: '',
  sysctls: {},
  overhead: null,
  resources: null,
  security_context: {
    namespace_options: null, selinux_options: null, run_as_user: null, run_as_group: null, readonly_rootfs: false,
    supplemental_groups: [], supplemental_groups_policy: 0 as const, privileged: true, seccomp: null, apparmor: null, seccomp_profile_path: '',
  },
};

describe('runtime: create-time validation', () => {
  let fx: RuntimeFixture;
  beforeEach(async () => {
    fx = await openRuntime();
    await pull(fx.runtime, BUSYBOX);
  });
  afterEach(async () => fx.close());

  const create = async (sc: Partial<LinuxContainerSecurityContext__Output>) => {
    const sb = await runSandbox(fx.runtime, sc.privileged ? { linux: privilegedSandbox } : {});
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

  for (const path of ['', 'unconfined', 'runtime/default', 'docker/default']) {
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

  it('loads a localhost seccomp profile at create and applies it: blocked calls fail, others work', async () => {
    const profiles = await dir({ unsafeCleanup: true });
    try {
      const block = join(profiles.path, 'block-host-name.json');
      await writeFile(block, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['sethostname', 'chmod', 'fchmodat'], action: 'SCMP_ACT_ERRNO' }] }));
      const exec = async (id: string, cmd: string[]) => fx.runtime.execSync({ container_id: id, cmd, timeout: '5' });
      const start = async (sc: Partial<LinuxContainerSecurityContext__Output>) => {
        const id = await create(sc);
        await fx.runtime.startContainer({ container_id: id });
        return id;
      };
      const blocked = await start({ seccomp: { profile_type: 2, localhost_ref: block }, capabilities: { add_capabilities: ['SYS_ADMIN'], drop_capabilities: [], add_ambient_capabilities: [] } });
      const hostname = await exec(blocked, ['hostname', 'ANewHostName']);
      expect(hostname.exit_code).to.equal(1);
      expect(String(hostname.stderr)).to.equal('hostname: sethostname: Operation not permitted\n');
      expect(String((await exec(blocked, ['chmod', '400', '/'])).stderr)).to.contain('Operation not permitted');
      expect(String((await exec(blocked, ['grep', 'Seccomp:', '/proc/self/status'])).stdout)).to.equal('Seccomp:\t2\n');
      const viaPath = await start({ seccomp_profile_path: `localhost/${block}` });
      expect((await exec(viaPath, ['chmod', '400', '/'])).exit_code).to.equal(1);
      const unconfined = await start({ seccomp: { profile_type: 1, localhost_ref: '' }, capabilities: { add_capabilities: ['SYS_ADMIN'], drop_capabilities: [], add_ambient_capabilities: [] } });
      expect((await exec(unconfined, ['hostname', 'ANewHostName'])).exit_code).to.equal(0);
      expect(String((await exec(unconfined, ['grep', 'Seccomp:', '/proc/self/status'])).stdout)).to.equal('Seccomp:\t0\n');
      const noCap = await start({ seccomp: { profile_type: 1, localhost_ref: '' } });
      expect((await exec(noCap, ['hostname', 'ANewHostName'])).exit_code).to.equal(1);
      const privileged = await start({ privileged: true, seccomp: { profile_type: 2, localhost_ref: block } });
      expect((await exec(privileged, ['hostname', 'ANewHostName'])).exit_code).to.equal(0);
      const runtimeDefault = await start({ seccomp: { profile_type: 0, localhost_ref: '' } });
      expect(String((await exec(runtimeDefault, ['grep', 'Seccomp:', '/proc/self/status'])).stdout)).to.equal('Seccomp:\t2\n');
    } finally {
      await profiles.cleanup();
    }
  });

  it('refuses a localhost seccomp profile that does not exist, naming the field and the file', async () => {
    const err = await rejection(create({ seccomp: { profile_type: 2, localhost_ref: '/nonexistent/profile.json' } }));
    expect(err.code).to.equal('InvalidArgument');
    expect(err.message).to.equal('config.linux.security_context.seccomp: cannot load seccomp profile "/nonexistent/profile.json": no such file');
    expect((await fx.runtime.listContainers({ filter: null })).containers).to.deep.equal([]);
  });

  it('refuses a privileged container in a sandbox that is not privileged', async () => {
    const sb = await runSandbox(fx.runtime);
    const err = await rejection(createContainer(fx.runtime, sb, { command: ['top'], linux: { resources: null, security_context: securityContext({ privileged: true }) } }));
    expect(err.code).to.equal('InvalidArgument');
    expect(err.message).to.contain('no privileged container allowed in sandbox');
  });

  it('applies added and dropped capabilities: masks in /proc/self/status, brctl needs NET_ADMIN, ping needs NET_RAW', async () => {
    const caps = (add: string[], drop: string[]) => ({ capabilities: { add_capabilities: add, drop_capabilities: drop, add_ambient_capabilities: [] } });
    const started = async (sc: Partial<LinuxContainerSecurityContext__Output>) => {
      const id = await create(sc);
      await fx.runtime.startContainer({ container_id: id });
      return id;
    };
    const exec = (id: string, cmd: string[]) => fx.runtime.execSync({ container_id: id, cmd, timeout: '5' });
    const netAdmin = await started(caps(['NET_ADMIN'], []));
    expect((await exec(netAdmin, ['brctl', 'addbr', 'foobar'])).exit_code).to.equal(0);
    const plain = await started({});
    const denied = await exec(plain, ['brctl', 'addbr', 'foobar']);
    expect(denied.exit_code).to.equal(1);
    expect(String(denied.stderr)).to.equal('brctl: bridge foobar: Operation not permitted\n');
    expect(String((await exec(plain, ['grep', 'CapBnd', '/proc/self/status'])).stdout)).to.equal('CapBnd:\t00000000a80425fb\n');
    const noRaw = await started(caps([], ['NET_RAW']));
    const ping = await exec(noRaw, ['ping', '127.0.0.1']);
    expect(ping.exit_code).to.equal(1);
    expect(String(ping.stdout)).to.not.equal('');
    expect(String(ping.stderr)).to.contain('permission denied');
    const none = await started(caps([], ['ALL']));
    expect(String((await exec(none, ['grep', 'CapBnd', '/proc/self/status'])).stdout)).to.equal('CapBnd:\t0000000000000000\n');
    const all = await started(caps(['ALL'], []));
    expect(String((await exec(all, ['grep', 'CapBnd', '/proc/self/status'])).stdout)).to.equal('CapBnd:\t000001ffffffffff\n');
  });

  it('refuses a Localhost seccomp profile without a localhost_ref', async () => {
    const err = await rejection(create({ seccomp: { profile_type: 2, localhost_ref: '' } }));
    expect(err.message).to.contain('config.linux.security_context.seccomp.localhost_ref must be set');
  });

  it('refuses an empty image name, naming the field', async () => {
    const sb = await runSandbox(fx.runtime);
    const noName = await rejection(createContainer(fx.runtime, sb, { command: ['top'] }, ''));
    expect(noName.code).to.equal('InvalidArgument');
    expect(noName.message).to.equal('config.image.image is required'); // our own wording (src/runtime/validation/request.ts)
  });
});
