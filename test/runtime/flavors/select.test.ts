import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { dir } from 'tmp-promise';
import { chooseRuntimeFlavor } from '../../../src/runtime/flavors/select.js';
import { RuntimeError } from '../../../src/runtime/errors.js';
import { NodeRuntime } from '../../../src/runtime/node-runtime.js';
import { testPodCidr } from '../../support/pod-cidr.js';
import { openRuntime } from '../helpers.js';

/**
 * The runtime flavor is chosen once, when the runtime opens: `--runtime-flavor` and
 * `--credspec-transport` are checked together, and the handlers get the one flavor (ctx.flavor).
 * The refusals are cri-winsim's own texts (no upstream runtime has both flags).
 */
describe('runtime flavors: the choice at open', () => {
  const cases: { name: string; options: { runtimeFlavor?: string; credentialSpecTransport?: string }; expected: { name: string; transport: string | undefined } | string }[] = [
    { name: 'no flags: the KEP dockershim with its temporary file', options: {}, expected: { name: 'dockershim-kep', transport: 'file' } },
    { name: 'dockershim-kep takes --credspec-transport registry', options: { runtimeFlavor: 'dockershim-kep', credentialSpecTransport: 'registry' }, expected: { name: 'dockershim-kep', transport: 'registry' } },
    { name: 'cri-dockerd always writes registry values', options: { runtimeFlavor: 'cri-dockerd' }, expected: { name: 'cri-dockerd', transport: 'registry' } },
    { name: 'cri-dockerd accepts the transport it uses anyway', options: { runtimeFlavor: 'cri-dockerd', credentialSpecTransport: 'registry' }, expected: { name: 'cri-dockerd', transport: 'registry' } },
    { name: 'containerd stages nothing', options: { runtimeFlavor: 'containerd' }, expected: { name: 'containerd', transport: undefined } },
    {
      name: 'cri-dockerd refuses a file transport',
      options: { runtimeFlavor: 'cri-dockerd', credentialSpecTransport: 'file' },
      expected: '--credspec-transport file: the cri-dockerd flavor hands the credential spec over in a registry value',
    },
    {
      name: 'containerd refuses any transport',
      options: { runtimeFlavor: 'containerd', credentialSpecTransport: 'file' },
      expected: '--credspec-transport file: the containerd flavor has no credential spec hand-off (the spec string is in the OCI spec)',
    },
    { name: 'an unknown flavor', options: { runtimeFlavor: 'cri-o' }, expected: '--runtime-flavor: must be one of dockershim-kep, cri-dockerd, containerd, not "cri-o"' },
    { name: 'an unknown transport', options: { credentialSpecTransport: 'smb' }, expected: '--credspec-transport: must be "file" or "registry", not "smb"' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      if (typeof c.expected === 'string') {
        let err: unknown;
        try {
          chooseRuntimeFlavor(c.options);
        } catch (e) {
          err = e;
        }
        expect(err).to.be.instanceOf(RuntimeError);
        expect((err as RuntimeError).code).to.equal('InvalidArgument');
        expect((err as Error).message).to.equal(c.expected);
      } else {
        expect(chooseRuntimeFlavor(c.options)).to.deep.equal(c.expected);
      }
    });
  }

  it('gives each runtime value its own flavor, the one the handlers use', async () => {
    const kep = await openRuntime();
    const containerd = await openRuntime({ windows: { runtimeFlavor: 'containerd' } });
    try {
      expect(kep.runtime.context.flavor.name).to.equal('dockershim-kep');
      expect(containerd.runtime.context.flavor.name).to.equal('containerd');
      expect(kep.runtime.context.flavor).to.not.equal(containerd.runtime.context.flavor);
    } finally {
      await containerd.close();
      await kep.close();
    }
  });

  it('refuses a conflicting transport before the state directory is created', async () => {
    const parent = await dir({ unsafeCleanup: true });
    try {
      const stateDir = join(parent.path, 'state');
      const err = await NodeRuntime.open({ stateDir, podCidr: testPodCidr(), windows: { runtimeFlavor: 'containerd', credentialSpecTransport: 'registry' } }).then(
        async (runtime) => {
          await runtime.close();
          return undefined;
        },
        (e: unknown) => e as Error,
      );
      expect(err?.message).to.equal('--credspec-transport registry: the containerd flavor has no credential spec hand-off (the spec string is in the OCI spec)');
      expect(existsSync(stateDir)).to.equal(false);
    } finally {
      await parent.cleanup();
    }
  });
});
