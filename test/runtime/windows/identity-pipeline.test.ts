import { expect } from 'chai';
import {
  CredentialSpecHandoff,
  credentialSpecFromSecurityOptions,
  evaluateContainerIdentity,
  openNodeDirectory,
  parseCredentialSpec,
  parseIdentityMode,
  runIdentityCommandLine,
  withWindowsCredentialSpec,
  withWindowsUsername,
  applyWindowsSpecOpts,
} from '../../../src/runtime/windows/index.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './kep-example.js';
import { tempDirPerTest } from '../../support/temp-dir.js';

describe('Windows identity path, hand-off to command output', () => {
  const stateDir = tempDirPerTest('winsim-pipeline-');

  for (const transport of ['file', 'registry'] as const) {
    it(`${transport}: the KEP example runs on the default node and nltest /parentdomain answers contoso.com`, async () => {
      const node = await openNodeDirectory();
      const handoff = await CredentialSpecHandoff.open(stateDir(), transport);
      const staged = await handoff.stage(KEP_EXAMPLE_CREDENTIAL_SPEC);
      const text = await credentialSpecFromSecurityOptions([staged.securityOption], {
        containerId: 'c1',
        credentialSpecDirectory: handoff.directory,
        registry: handoff.registry,
      });
      const document = parseCredentialSpec(text!);
      const spec = applyWindowsSpecOpts({ process: { user: { uid: 0, gid: 0 } } }, withWindowsCredentialSpec(document), withWindowsUsername('ContainerUser', 'ContainerAdministrator'));
      const decision = evaluateContainerIdentity(node, document, spec.process.user.username, 'ContainerUser', 'iis-0', parseIdentityMode('strict'));
      await handoff.releaseAfterStart([staged.securityOption]);
      expect(decision.startError).to.equal(undefined);
      expect(runIdentityCommandLine('nltest /parentdomain', decision.identity)?.stdout).to.equal('contoso.com. (1)\nThe command completed successfully\n');
      expect(runIdentityCommandLine('echo %USERDOMAIN%\\%USERNAME%', decision.identity)?.stdout).to.equal('User Manager\\ContainerAdministrator\n');
      await handoff.releaseOnRemove([staged.securityOption]);
      expect(await handoff.leftovers()).to.deep.equal([]);
    });
  }

  it('checks the identity mode value', () => {
    expect(parseIdentityMode('realistic')).to.equal('realistic');
    expect(() => parseIdentityMode('lenient')).to.throw('identity mode must be "strict" or "realistic", not "lenient"');
  });
});
