import { expect } from 'chai';
import type { SpecOpt } from '../../../src/runtime/oci/spec.js';
import { RuntimeError } from '../../../src/runtime/errors.js';
import { parseCredentialSpec } from '../../../src/runtime/windows/credential-spec.js';
import {
  applyWindowsSpecOpts,
  checkHostProcessAgreement,
  HOST_PROCESS_ANNOTATION,
  withHostProcessAnnotation,
  withWindowsCredentialSpec,
  withWindowsUsername,
  type WindowsOciSpec,
} from '../../../src/runtime/windows/oci-windows.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './kep-example.js';

const fresh = (): WindowsOciSpec => ({ process: { user: { uid: 0, gid: 0 } } });

describe('Windows OCI spec options', () => {
  it('windows.credentialSpec carries the parsed document when there is one', () => {
    const doc = parseCredentialSpec(KEP_EXAMPLE_CREDENTIAL_SPEC);
    expect(applyWindowsSpecOpts(fresh(), withWindowsCredentialSpec(doc)).windows?.credentialSpec).to.equal(doc);
    expect(applyWindowsSpecOpts(fresh(), withWindowsCredentialSpec(undefined)).windows).to.equal(undefined);
  });

  it('keeps the other windows fields', () => {
    const spec = { process: { user: { uid: 0, gid: 0 } }, windows: { layerFolders: ['a'] } } as WindowsOciSpec;
    withWindowsCredentialSpec(parseCredentialSpec(KEP_EXAMPLE_CREDENTIAL_SPEC))(spec);
    expect(spec.windows).to.have.property('layerFolders');
  });

  const users: Array<[string | undefined, string | undefined, string]> = [
    ['ContainerUser', undefined, 'ContainerUser'],
    ['ContainerUser', '', 'ContainerUser'],
    ['ContainerUser', 'ContainerAdministrator', 'ContainerAdministrator'],
    [undefined, 'NT AUTHORITY\\SYSTEM', 'NT AUTHORITY\\SYSTEM'],
    [undefined, undefined, ''],
  ];
  for (const [image, runAs, expected] of users) {
    it(`process.user.username: image ${String(image)}, run_as_username ${String(runAs)} -> "${expected}"`, () => {
      const spec = applyWindowsSpecOpts(fresh(), withWindowsUsername(image, runAs));
      expect(spec.process.user).to.deep.equal({ uid: 0, gid: 0, username: expected });
    });
  }

  it('always writes the HostProcess annotation with the sandbox value', () => {
    expect(applyWindowsSpecOpts(fresh(), withHostProcessAnnotation(true)).annotations).to.deep.equal({ [HOST_PROCESS_ANNOTATION]: 'true' });
    expect(applyWindowsSpecOpts(fresh(), withHostProcessAnnotation(false)).annotations).to.deep.equal({
      'microsoft.com/hostprocess-container': 'false',
    });
  });

  const agreement: Array<[boolean, boolean, boolean]> = [
    [false, false, true],
    [true, true, true],
    [true, false, false],
    [false, true, false],
  ];
  for (const [sandbox, container, ok] of agreement) {
    it(`sandbox host_process ${sandbox}, container ${container}: ${ok ? 'accepted' : 'refused with containerd\'s text'}`, () => {
      if (ok) {
        expect(() => checkHostProcessAgreement(sandbox, container)).to.not.throw();
        return;
      }
      try {
        checkHostProcessAgreement(sandbox, container);
        expect.fail('expected a refusal');
      } catch (err) {
        expect(err).to.be.instanceOf(RuntimeError);
        expect((err as RuntimeError).code).to.equal('InvalidArgument');
        expect((err as Error).message).to.equal('pod spec and all containers inside must have the HostProcess field set to be valid');
      }
    });
  }

  it("are usable as the runtime's SpecOpts", () => {
    // Compile-time check: the runtime's OCI spec type is assignable to WindowsOciSpec.
    const opts: SpecOpt[] = [withHostProcessAnnotation(false), withWindowsUsername('ContainerUser', undefined)];
    expect(opts).to.have.length(2);
  });
});
