import { expect } from 'chai';
import { RuntimeError } from '../../../src/runtime/errors.js';
import { CredentialSpecParser, parseCredentialSpec, MAX_CREDENTIAL_SPEC_BYTES, OWN_CHECK_MARK } from '../../../src/runtime/windows/credential-spec.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC, kepExampleWith } from './kep-example.js';

function rejection(text: string): RuntimeError {
  try {
    parseCredentialSpec(text);
  } catch (err) {
    expect(err).to.be.instanceOf(RuntimeError);
    return err as RuntimeError;
  }
  throw new Error('expected the credential spec to be rejected');
}

describe('credential spec validation', () => {
  it('accepts the GMSA KEP example unchanged', () => {
    const doc = parseCredentialSpec(KEP_EXAMPLE_CREDENTIAL_SPEC);
    expect(doc.DomainJoinConfig.MachineAccountName).to.equal('WebApplication1');
    expect(doc.ActiveDirectoryConfig.GroupManagedServiceAccounts).to.have.length(2);
  });

  it('accepts a Container Credential Guard HostAccountConfig', () => {
    const text = kepExampleWith((d) => {
      d.ActiveDirectoryConfig.HostAccountConfig = {
        PortableCcgVersion: '1',
        PluginGUID: '{859E1386-BDB4-49E8-85C7-3070B13920E1}',
        PluginInput: 'contoso.com:gmsaccg:<password>',
      };
    });
    expect(parseCredentialSpec(text).ActiveDirectoryConfig.HostAccountConfig?.PortableCcgVersion).to.equal('1');
  });

  it("gives one frozen document per accepted text, shared by every container of a runtime started with it", () => {
    const parser = new CredentialSpecParser();
    const doc = parser.parse(KEP_EXAMPLE_CREDENTIAL_SPEC);
    expect(parser.parse(KEP_EXAMPLE_CREDENTIAL_SPEC.slice())).to.equal(doc);
    // Another runtime's parser keeps its own documents.
    expect(new CredentialSpecParser().parse(KEP_EXAMPLE_CREDENTIAL_SPEC)).to.not.equal(doc);
    expect(Object.isFrozen(doc.DomainJoinConfig) && Object.isFrozen(doc.ActiveDirectoryConfig.GroupManagedServiceAccounts[0])).to.equal(true);
    expect(() => {
      (doc.DomainJoinConfig as { Sid: string }).Sid = 'S-1-5-21-1-2-3';
    }).to.throw(TypeError);
    // Another text is another document, even when it parses to equal JSON.
    const spaced = parser.parse(`${KEP_EXAMPLE_CREDENTIAL_SPEC} `);
    expect(spaced).to.not.equal(doc);
    expect(spaced).to.deep.equal(doc);
  });

  it('checks a rejected text again each time, with the same message', () => {
    const text = kepExampleWith((d) => (d.DomainJoinConfig.Sid = 'S-1-5-21-x'));
    expect(rejection(text).message).to.equal(rejection(text).message);
  });

  const cases: Array<{ name: string; text: string; message: string }> = [
    { name: 'not JSON', text: '{"CmsPlugins": [', message: 'invalid credential spec: not valid JSON: ' },
    { name: 'empty', text: '  ', message: 'invalid credential spec: the document is empty' },
    { name: 'not an object', text: '["ActiveDirectory"]', message: 'invalid credential spec: the document must be an object, not an array' },
    {
      name: 'a bad SID',
      text: kepExampleWith((d) => (d.DomainJoinConfig.Sid = 'S-1-5-21-x')),
      message: 'invalid credential spec: DomainJoinConfig.Sid "S-1-5-21-x" is not a domain SID (S-1-5-21-a-b-c)',
    },
    {
      name: 'a user SID instead of a domain SID',
      text: kepExampleWith((d) => (d.DomainJoinConfig.Sid = 'S-1-5-21-2126729477-2524075714-3094792973-1105')),
      message: 'invalid credential spec: DomainJoinConfig.Sid "S-1-5-21-2126729477-2524075714-3094792973-1105" is not a domain SID (S-1-5-21-a-b-c)',
    },
    {
      name: 'a GUID with braces',
      text: kepExampleWith((d) => (d.DomainJoinConfig.Guid = '{244818ae-87ca-4fcd-92ec-e79e5252348a}')),
      message:
        'invalid credential spec: DomainJoinConfig.Guid "{244818ae-87ca-4fcd-92ec-e79e5252348a}" is not a domain GUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, no braces)',
    },
    {
      name: 'a missing field',
      text: kepExampleWith((d) => delete d.DomainJoinConfig.MachineAccountName),
      message: 'invalid credential spec: DomainJoinConfig.MachineAccountName is required',
    },
    {
      name: 'a missing section',
      text: kepExampleWith((d) => delete d.ActiveDirectoryConfig),
      message: 'invalid credential spec: ActiveDirectoryConfig is required',
    },
    {
      name: 'a wrong type',
      text: kepExampleWith((d) => (d.DomainJoinConfig.DnsName = 42)),
      message: 'invalid credential spec: DomainJoinConfig.DnsName must be a string, not a number',
    },
    {
      name: 'an account name with a domain',
      text: kepExampleWith((d) => (d.DomainJoinConfig.MachineAccountName = 'DEMO\\WebApplication1')),
      message:
        'invalid credential spec: DomainJoinConfig.MachineAccountName "DEMO\\\\WebApplication1" is not a gMSA account name (1-15 characters, no domain, no trailing $)',
    },
    {
      name: 'an account name with a trailing $',
      text: kepExampleWith((d) => (d.DomainJoinConfig.MachineAccountName = 'WebApp1$')),
      message: 'invalid credential spec: DomainJoinConfig.MachineAccountName "WebApp1$" is not a gMSA account name (1-15 characters, no domain, no trailing $)',
    },
    {
      name: 'an unsupported plugin',
      text: kepExampleWith((d) => (d.CmsPlugins = ['Kerberos'])),
      message: 'invalid credential spec: CmsPlugins[0] "Kerberos" is not a supported plugin (ActiveDirectory)',
    },
    {
      name: 'no gMSA entries',
      text: kepExampleWith((d) => (d.ActiveDirectoryConfig.GroupManagedServiceAccounts = [])),
      message: 'invalid credential spec: ActiveDirectoryConfig.GroupManagedServiceAccounts must not be empty',
    },
    {
      name: 'a gMSA entry without a scope',
      text: kepExampleWith((d) => delete d.ActiveDirectoryConfig.GroupManagedServiceAccounts[1].Scope),
      message: 'invalid credential spec: ActiveDirectoryConfig.GroupManagedServiceAccounts[1].Scope is required',
    },
    {
      name: 'a plugin GUID without braces',
      text: kepExampleWith((d) => {
        d.ActiveDirectoryConfig.HostAccountConfig = { PortableCcgVersion: '1', PluginGUID: '859E1386-BDB4-49E8-85C7-3070B13920E1', PluginInput: '' };
      }),
      message:
        'invalid credential spec: ActiveDirectoryConfig.HostAccountConfig.PluginGUID "859E1386-BDB4-49E8-85C7-3070B13920E1" is not a plugin CLSID ({xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}, with braces)',
    },
  ];
  for (const c of cases) {
    it(`rejects ${c.name}, naming the field`, () => {
      const err = rejection(c.text);
      expect(err.code).to.equal('InvalidArgument');
      // Every schema-check message says it is cri-winsim's own check.
      expect(err.message.endsWith(OWN_CHECK_MARK)).to.equal(true, err.message);
      if (c.message.endsWith(': ')) expect(err.message.startsWith(c.message)).to.equal(true, err.message);
      else expect(err.message).to.equal(c.message + OWN_CHECK_MARK);
    });
  }

  it('rejects a document over 64 KiB before parsing it', () => {
    const padding = 'x'.repeat(MAX_CREDENTIAL_SPEC_BYTES);
    const err = rejection(kepExampleWith((d) => (d.Padding = padding)));
    expect(err.message).to.match(/^invalid credential spec: size must be under 64 KiB \(got \d+ bytes\) \(cri-winsim schema check\)$/);
  });

  it('counts the size in bytes, not characters', () => {
    // 30,000 three-byte characters: under 64 Ki characters, over 64 KiB.
    const err = rejection(kepExampleWith((d) => (d.Note = '€'.repeat(30_000))));
    expect(err.message).to.contain('size must be under 64 KiB');
  });
});
