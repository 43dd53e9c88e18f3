import { expect } from 'chai';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CREDENTIAL_SPEC_REGISTRY_KEY,
  CredentialSpecHandoff,
  RECYCLED_CREDENTIAL_SPEC_DIRECTORY,
  stagedFromSecurityOption,
} from '../../../src/runtime/windows/credential-spec-handoff.js';
import { credentialSpecFromSecurityOptions } from '../../../src/runtime/windows/security-options.js';
import { SimulatedRegistry } from '../../../src/runtime/windows/simulated-registry.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './kep-example.js';
import { tempDirPerTest } from '../../support/temp-dir.js';

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe('credential spec hand-off (dockershim layer)', () => {
  const stateDir = tempDirPerTest('winsim-handoff-');

  describe('file transport (the GMSA KEP temporary file)', () => {
    it('writes the spec to a 0600 file in a 0700 directory under the state dir and names it in the security option', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir());
      const staged = await handoff.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      expect(handoff.directory).to.equal(join(stateDir(), 'CredentialSpecs'));
      expect(await mode(handoff.directory)).to.equal(0o700);
      const path = join(handoff.directory, staged.name);
      expect(await mode(path)).to.equal(0o600);
      expect(await readFile(path, 'utf8')).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
      expect(staged.securityOption).to.equal(`credentialspec=file://${staged.name}`);
      expect(staged.name).to.match(/^k8s-cred-spec-[0-9a-f]{80}\.json$/);
      expect(handoff.removeAfterStart).to.equal(true);
    });

    it('tightens an existing state directory to 0700', async () => {
      const { mkdir, chmod } = await import('node:fs/promises');
      await mkdir(join(stateDir(), 'CredentialSpecs'), { mode: 0o755 });
      await chmod(join(stateDir(), 'CredentialSpecs'), 0o755);
      const handoff = await CredentialSpecHandoff.open(stateDir());
      expect(await mode(handoff.directory)).to.equal(0o700);
    });

    it('gives every container an unguessable, distinct name (320 random bits)', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir());
      const names = new Set<string>();
      for (let i = 0; i < 50; i++) names.add((await handoff.stage('{}')).name);
      expect(names.size).to.equal(50);
      // No structure to guess from: no pid, no counter, no container id.
      const suffixes = [...names].map((n) => n.slice('k8s-cred-spec-'.length, -'.json'.length));
      const common = suffixes.reduce((prefix, s) => {
        let i = 0;
        while (i < prefix.length && prefix[i] === s[i]) i++;
        return prefix.slice(0, i);
      });
      expect(common.length).to.be.lessThan(4);
    });

    it('the backend reads it back through the file:// security option', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir());
      const staged = await handoff.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      const spec = await credentialSpecFromSecurityOptions([staged.securityOption], {
        containerId: 'c1',
        credentialSpecDirectory: handoff.directory,
        registry: handoff.registry,
      });
      expect(spec).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
    });

    it('remove deletes the file and is idempotent', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir());
      const staged = await handoff.stage('{}');
      expect(await handoff.remove(staged)).to.equal(true);
      expect(await handoff.remove(staged)).to.equal(false);
      expect(await readdir(handoff.directory)).to.deep.equal([]);
    });

    it('a removed spec leaves no file and no content; the next one reuses its inode, and shutdown leaves no spare', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir());
      const first = await handoff.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      const inode = (await stat(join(handoff.directory, first.name))).ino;
      expect(await handoff.releaseAfterStart([first.securityOption])).to.equal(1);
      expect(await readdir(handoff.directory)).to.deep.equal([]);
      const spareDir = join(stateDir(), RECYCLED_CREDENTIAL_SPEC_DIRECTORY);
      const spares = await readdir(spareDir);
      expect(spares).to.have.length(1);
      expect(await readFile(join(spareDir, spares[0]!), 'utf8')).to.equal('');

      const second = await handoff.stage('{"second":true}');
      const path = join(handoff.directory, second.name);
      expect((await stat(path)).ino).to.equal(inode);
      expect(await mode(path)).to.equal(0o600);
      expect(await readFile(path, 'utf8')).to.equal('{"second":true}');
      expect(await readdir(spareDir)).to.deep.equal([]);

      await handoff.releaseAfterStart([second.securityOption]);
      await handoff.close();
      expect(await readdir(spareDir)).to.deep.equal([]);
      expect(await readdir(handoff.directory)).to.deep.equal([]);
    });

    it('removeReferenced deletes only what this layer staged, never a user file:// reference', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir());
      const staged = await handoff.stage('{}');
      await writeFile(join(handoff.directory, 'WebApplication1.json'), '{}');
      const removed = await handoff.removeReferenced([staged.securityOption, 'credentialspec=file://WebApplication1.json', 'credentialspec=raw://{}']);
      expect(removed).to.equal(1);
      expect(await readdir(handoff.directory)).to.deep.equal(['WebApplication1.json']);
    });

    it('RemoveContainer retries a file whose removal after StartContainer failed, and only that', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir());
      const failed = await handoff.stage('{}');
      const released = await handoff.stage('{}');
      const failedPath = join(handoff.directory, failed.name);
      // A directory in the file's place (with an entry) makes the unlink after the start fail.
      await rm(failedPath);
      await mkdir(join(failedPath, 'busy'), { recursive: true });
      const afterStart = await handoff.releaseAfterStart([failed.securityOption]).catch((err: NodeJS.ErrnoException) => err);
      expect(afterStart).to.be.instanceOf(Error);
      expect(await handoff.releaseAfterStart([released.securityOption])).to.equal(1);
      await rm(failedPath, { recursive: true });
      await writeFile(failedPath, '{}');
      // Nor does it go back to the disk for a spec already removed: a file put under that name since stays.
      await writeFile(join(handoff.directory, released.name), '{}');
      expect(await handoff.releaseOnRemove([failed.securityOption, released.securityOption])).to.equal(1);
      expect(await readdir(handoff.directory)).to.deep.equal([released.name]);
    });

    it('refuses to remove a name it did not stage', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir());
      try {
        await handoff.remove({ transport: 'file', name: '../registry/registry.json', securityOption: '' });
        expect.fail('expected a refusal');
      } catch (err) {
        expect((err as Error).message).to.contain('not a staged credential spec name');
      }
    });
  });

  describe('registry transport (cri-dockerd)', () => {
    it('writes a value named k8s-cred-spec-<80 hex> under the CredentialSpecs key', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir(), 'registry');
      const staged = await handoff.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      expect(staged.name).to.match(/^k8s-cred-spec-[0-9a-f]{80}$/);
      expect(staged.securityOption).to.equal(`credentialspec=registry://${staged.name}`);
      expect(handoff.registry.getStringValue(CREDENTIAL_SPEC_REGISTRY_KEY, staged.name)).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
      expect(CREDENTIAL_SPEC_REGISTRY_KEY).to.equal(
        'HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Virtualization\\Containers\\CredentialSpecs',
      );
      // Kept until RemoveContainer, as cri-dockerd does.
      expect(handoff.removeAfterStart).to.equal(false);
      // Nothing on disk in the credential spec directory.
      expect(await readdir(handoff.directory)).to.deep.equal([]);
    });

    it('persists the simulated registry (0600 file, 0700 directory) so a restart sees the value', async () => {
      const first = await CredentialSpecHandoff.open(stateDir(), 'registry');
      const staged = await first.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      expect(await mode(first.registry.path)).to.equal(0o600);
      expect(await mode(join(stateDir(), 'registry'))).to.equal(0o700);
      const reopened = await SimulatedRegistry.open(stateDir());
      expect(reopened.getStringValue(CREDENTIAL_SPEC_REGISTRY_KEY.toLowerCase(), staged.name.toUpperCase())).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
    });

    it('the backend reads it through registry:// and reports a missing value with moby\'s text', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir(), 'registry');
      const staged = await handoff.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      const context = { containerId: 'c1', credentialSpecDirectory: handoff.directory, registry: handoff.registry };
      expect(await credentialSpecFromSecurityOptions([staged.securityOption], context)).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
      await handoff.remove(staged);
      try {
        await credentialSpecFromSecurityOptions([staged.securityOption], context);
        expect.fail('expected an error');
      } catch (err) {
        expect((err as Error).message).to.equal(`registry credential spec "${staged.name}" for container c1 was not found`);
      }
    });

    it('concurrent stages and removes all land on disk', async () => {
      const handoff = await CredentialSpecHandoff.open(stateDir(), 'registry');
      const staged = await Promise.all(Array.from({ length: 20 }, (_, i) => handoff.stage(`{"n":${i}}`)));
      await Promise.all(staged.slice(0, 10).map((s) => handoff.remove(s)));
      const reopened = await SimulatedRegistry.open(stateDir());
      expect(reopened.valueNames(CREDENTIAL_SPEC_REGISTRY_KEY).sort()).to.deep.equal(staged.slice(10).map((s) => s.name).sort());
    });

    it('refuses a corrupt registry file, naming it', async () => {
      await CredentialSpecHandoff.open(stateDir(), 'registry');
      await writeFile(join(stateDir(), 'registry', 'registry.json'), '{not json');
      try {
        await SimulatedRegistry.open(stateDir());
        expect.fail('expected an error');
      } catch (err) {
        expect((err as Error).message).to.match(/registry[/\\]registry\.json: simulated registry is not valid JSON: /);
      }
    });
  });

  describe('start-up sweep', () => {
    it('removes leftovers of both transports from a previous run and leaves nothing behind', async () => {
      const fileRun = await CredentialSpecHandoff.open(stateDir(), 'file');
      await fileRun.stage('{"a":1}');
      await fileRun.stage('{"a":2}');
      const registryRun = await CredentialSpecHandoff.open(stateDir(), 'registry');
      await registryRun.stage('{"b":1}');
      await writeFile(join(fileRun.directory, 'WebApplication1.json'), '{}');
      await registryRun.registry.setStringValue(CREDENTIAL_SPEC_REGISTRY_KEY, 'my-own-spec', '{}');

      // A restart: a new handoff over the same state dir.
      const restarted = await CredentialSpecHandoff.open(stateDir(), 'file');
      expect((await restarted.leftovers()).map((s) => s.transport).sort()).to.deep.equal(['file', 'file', 'registry']);
      const swept = await restarted.sweep();
      expect(swept).to.have.length(3);
      expect(await restarted.leftovers()).to.deep.equal([]);
      // Only what the hand-off staged: the user's own specs stay.
      expect(await readdir(restarted.directory)).to.deep.equal(['WebApplication1.json']);
      const registry = await SimulatedRegistry.open(stateDir());
      expect(registry.valueNames(CREDENTIAL_SPEC_REGISTRY_KEY)).to.deep.equal(['my-own-spec']);
    });

    it('removes temporary files of an interrupted registry write', async () => {
      await CredentialSpecHandoff.open(stateDir(), 'registry');
      await writeFile(join(stateDir(), 'registry', 'registry.json.0123456789abcdef.tmp'), '{}');
      await SimulatedRegistry.open(stateDir());
      expect(await readdir(join(stateDir(), 'registry'))).to.deep.equal([]);
    });
  });

  for (const transport of ['file', 'registry'] as const) {
    it(`${transport}: tells the observer about every write and every actual removal (metrics)`, async () => {
      const seen: string[] = [];
      const handoff = await CredentialSpecHandoff.open(stateDir(), transport, undefined, {
        onWritten: (s) => seen.push(`written ${s.transport}`),
        onRemoved: (s) => seen.push(`removed ${s.transport}`),
      });
      const first = await handoff.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      await handoff.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      await handoff.remove(first);
      await handoff.remove(first);
      await handoff.sweep();
      expect(seen).to.deep.equal([`written ${transport}`, `written ${transport}`, `removed ${transport}`, `removed ${transport}`]);
    });
  }

  it('recognises only its own security options', () => {
    const name = `k8s-cred-spec-${'a'.repeat(80)}`;
    expect(stagedFromSecurityOption(`credentialspec=file://${name}.json`)).to.deep.include({ transport: 'file' });
    expect(stagedFromSecurityOption(`CredentialSpec=registry://${name}`)).to.deep.include({ transport: 'registry' });
    expect(stagedFromSecurityOption(`credentialspec=file://${name}`)).to.equal(undefined);
    expect(stagedFromSecurityOption('credentialspec=file://WebApplication1.json')).to.equal(undefined);
    expect(stagedFromSecurityOption(`credentialspec=raw://${name}`)).to.equal(undefined);
  });
});
