import { expect } from 'chai';
import {
  CredentialSpecHandoff,
  parseCredentialSpecTransport,
  type CredentialSpecTransportKind,
} from '../../../src/runtime/windows/credential-spec-handoff.js';
import { credentialSpecFromSecurityOptions } from '../../../src/runtime/windows/security-options.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './kep-example.js';
import { prng } from '../../support/seeded-random.js';
import { tempDirPerTest } from '../../support/temp-dir.js';

/** A container record as far as the hand-off is concerned. */
interface Container {
  id: string;
  securityOptions: string[];
  started: boolean;
}

/** CreateContainer as the runtime will do it: stage, then everything else that may fail. */
async function createContainer(handoff: CredentialSpecHandoff, id: string, spec: string | undefined, fault: boolean): Promise<Container> {
  return handoff.stageDuring(spec, async (staged) => {
    if (fault) throw new Error(`failed to create container ${id}`);
    return { id, securityOptions: staged === undefined ? [] : [staged.securityOption], started: false };
  });
}

/** StartContainer: the backend reads the spec; the hand-off is released whatever happens. */
async function startContainer(handoff: CredentialSpecHandoff, c: Container, fault: boolean): Promise<void> {
  try {
    const spec = await credentialSpecFromSecurityOptions(c.securityOptions, {
      containerId: c.id,
      credentialSpecDirectory: handoff.directory,
      registry: handoff.registry,
    });
    if (c.securityOptions.length > 0) expect(spec).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
    if (fault) throw new Error(`failed to start container ${c.id}`);
    c.started = true;
  } finally {
    await handoff.releaseAfterStart(c.securityOptions);
  }
}

describe('credential spec lifecycle: cleanup at every point', () => {
  const stateDir = tempDirPerTest('winsim-lifecycle-');

  for (const transport of ['file', 'registry'] as const) {
    describe(`${transport} transport`, () => {
      it('removes the staged spec when CreateContainer fails after staging', async () => {
        const handoff = await CredentialSpecHandoff.open(stateDir(), transport);
        const outcome = await createContainer(handoff, 'c1', KEP_EXAMPLE_CREDENTIAL_SPEC, true).catch((err: Error) => err);
        expect(outcome).to.be.instanceOf(Error);
        expect((outcome as Error).message).to.equal('failed to create container c1');
        expect(await handoff.leftovers()).to.deep.equal([]);
      });

      it(`${transport === 'file' ? 'removes' : 'keeps'} the spec after StartContainer succeeds`, async () => {
        const handoff = await CredentialSpecHandoff.open(stateDir(), transport);
        const c = await createContainer(handoff, 'c1', KEP_EXAMPLE_CREDENTIAL_SPEC, false);
        expect(await handoff.leftovers()).to.have.length(1);
        await startContainer(handoff, c, false);
        expect(await handoff.leftovers()).to.have.length(transport === 'file' ? 0 : 1);
        expect(await handoff.releaseOnRemove(c.securityOptions)).to.equal(transport === 'file' ? 0 : 1);
        expect(await handoff.leftovers()).to.deep.equal([]);
      });

      it(`${transport === 'file' ? 'removes' : 'keeps'} the spec when StartContainer fails`, async () => {
        const handoff = await CredentialSpecHandoff.open(stateDir(), transport);
        const c = await createContainer(handoff, 'c1', KEP_EXAMPLE_CREDENTIAL_SPEC, false);
        await startContainer(handoff, c, true).catch(() => undefined);
        expect(await handoff.leftovers()).to.have.length(transport === 'file' ? 0 : 1);
        await handoff.releaseOnRemove(c.securityOptions);
        expect(await handoff.leftovers()).to.deep.equal([]);
      });

      it('removes it on RemoveContainer of a container that never started', async () => {
        const handoff = await CredentialSpecHandoff.open(stateDir(), transport);
        const c = await createContainer(handoff, 'c1', KEP_EXAMPLE_CREDENTIAL_SPEC, false);
        expect(await handoff.releaseOnRemove(c.securityOptions)).to.equal(1);
        expect(await handoff.leftovers()).to.deep.equal([]);
      });
    });
  }

  it('leaves zero credential specs after a random sequence of operations, faults and restarts', async () => {
    const random = prng(20260521);
    let transport: CredentialSpecTransportKind = 'file';
    let handoff = await CredentialSpecHandoff.open(stateDir(), transport);
    let containers: Container[] = [];
    for (let step = 0; step < 300; step++) {
      const roll = random();
      if (roll < 0.35) {
        const spec = random() < 0.8 ? KEP_EXAMPLE_CREDENTIAL_SPEC : undefined;
        const created = await createContainer(handoff, `c${step}`, spec, random() < 0.25).catch(() => undefined);
        if (created !== undefined) containers.push(created);
      } else if (roll < 0.65) {
        const c = containers.find((x) => !x.started);
        if (c !== undefined) await startContainer(handoff, c, random() < 0.3).catch(() => undefined);
      } else if (roll < 0.95) {
        const c = containers.shift();
        if (c !== undefined) await handoff.releaseOnRemove(c.securityOptions);
      } else {
        // The runtime restarts (maybe with the other transport): containers are gone, the sweep runs.
        transport = random() < 0.5 ? 'file' : 'registry';
        handoff = await CredentialSpecHandoff.open(stateDir(), transport);
        await handoff.sweep();
        containers = [];
        expect(await handoff.leftovers()).to.deep.equal([]);
      }
      // Invariant: only containers that are not removed hold a spec, and a file never outlives the start.
      const live = containers.flatMap((c) => c.securityOptions.filter(() => !(c.started && transport === 'file')));
      expect((await handoff.leftovers()).length).to.be.at.most(live.length);
    }
    for (const c of containers) await handoff.releaseOnRemove(c.securityOptions);
    expect(await handoff.leftovers()).to.deep.equal([]);
  });

  it('checks the --credspec-transport value', () => {
    expect(parseCredentialSpecTransport('registry')).to.equal('registry');
    expect(() => parseCredentialSpecTransport('Registry')).to.throw('--credspec-transport: must be "file" or "registry", not "Registry"');
  });
});
