// SMB file shares of the simulated domain: which UNC paths reach which share, the share
// permissions by principal (New-SmbShare -ReadAccess/-ChangeAccess/-FullAccess, groups nested),
// the Win32 errors a refused access gets (winerror.h codes; their en-US system messages are the
// texts cmd prints), the contents the runtime keeps, and the node file's rules for file servers.
import { expect } from 'chai';
import type { ContainerIdentity } from '../../../src/runtime/windows/container-identity.js';
import {
  domainControllerAddress,
  fileServerAddress,
  FileShareContents,
  openShare,
  parseUncPath,
  type ShareAccessMode,
} from '../../../src/runtime/windows/file-shares.js';
import { parseNodeFile } from '../../../src/runtime/windows/node-directory.js';
import { channelTakenIdentity, dcDownIdentity, failedIdentity, gmsaIdentity, noGmsaIdentity, SMB_NODE_YAML, smbDirectory } from './smb-fixtures.js';

describe('file shares: UNC paths and addresses', () => {
  it('parses \\\\server\\share\\path with either slash, and nothing else', () => {
    expect(parseUncPath('\\\\files01\\data\\logs\\a.txt')).to.deep.equal({ server: 'files01', share: 'data', parts: ['logs', 'a.txt'] });
    expect(parseUncPath('//files01/data/')).to.deep.equal({ server: 'files01', share: 'data', parts: [] });
    expect(parseUncPath('\\\\files01')).to.equal(undefined);
    expect(parseUncPath('C:\\data\\f.txt')).to.equal(undefined);
  });

  it('gives DCs and file servers fixed loopback addresses unless the node file names one', () => {
    const contoso = smbDirectory().findDomain('contoso.com')!;
    const dc1 = domainControllerAddress(contoso, 0);
    expect(dc1).to.match(/^127\.(6[4-9]|[7-9]\d|1[0-8]\d|19[01])\.\d{1,3}\.1$/);
    expect(domainControllerAddress(smbDirectory().findDomain('DEMO')!, 0)).to.equal(dc1);
    expect(domainControllerAddress(contoso, 1)).to.equal('127.0.53.2');
    expect(fileServerAddress(contoso, 0)).to.equal(dc1.replace(/\.1$/, '.101'));
    expect(fileServerAddress(contoso, 1)).to.equal('127.0.54.1');
  });
});

describe('file shares: who may open what', () => {
  const directory = smbDirectory();
  const files01 = fileServerAddress(directory.findDomain('contoso.com')!, 0);
  const cases: Array<[string, string, ContainerIdentity, ShareAccessMode, number]> = [
    ['a gMSA in a nested group of changeAccess writes', '\\\\files01\\data\\f.txt', gmsaIdentity('WebApplication1'), 'write', 0],
    ['... by FQDN, any case', '\\\\FILES01.Contoso.COM\\DATA\\f.txt', gmsaIdentity('WebApplication1'), 'write', 0],
    ['... by address', `\\\\${files01}\\data\\f.txt`, gmsaIdentity('WebApplication1'), 'write', 0],
    ['a gMSA with readAccess reads', '\\\\files01\\data\\f.txt', gmsaIdentity('EventLogger'), 'read', 0],
    ['... and may not write: Access is denied', '\\\\files01\\data\\f.txt', gmsaIdentity('EventLogger'), 'write', 5],
    ['Everyone admits any domain account', '\\\\files01\\public\\readme.txt', gmsaIdentity('EventLogger'), 'read', 0],
    ['no gMSA: an anonymous logon, which Everyone does not include', '\\\\files01\\public\\readme.txt', noGmsaIdentity(), 'read', 5],
    ['an unknown server: The network path was not found', '\\\\files09\\data\\f.txt', gmsaIdentity('WebApplication1'), 'read', 53],
    ['a server that does not answer', '\\\\files02\\data\\f.txt', gmsaIdentity('WebApplication1'), 'read', 53],
    ['an unknown share: The network name cannot be found', '\\\\files01\\nope\\f.txt', gmsaIdentity('WebApplication1'), 'read', 67],
    ['the secure channel taken by another container: the trust relationship failed', '\\\\files01\\data\\f.txt', channelTakenIdentity(), 'read', 1789],
    ['a gMSA whose password the node may not retrieve: the trust relationship failed', '\\\\files01\\data\\f.txt', failedIdentity('node-not-allowed'), 'read', 1789],
    ['no DC for the gMSA: no logon servers', '\\\\files01\\data\\f.txt', dcDownIdentity(), 'read', 1311],
  ];
  for (const [name, path, identity, mode, code] of cases) {
    it(name, () => {
      const opened = openShare(directory, identity, parseUncPath(path)!, mode);
      expect(opened.ok ? 0 : opened.error.code).to.equal(code);
    });
  }

  it('reads the domain it is handed: every DC down, a server name no longer resolves; its address meets no logon server', () => {
    const down = smbDirectory(SMB_NODE_YAML.replace('- { name: dc1.contoso.com }', '- { name: dc1.contoso.com, reachable: false }').replace('address: 127.0.53.2 }', 'address: 127.0.53.2, reachable: false }'));
    const byName = openShare(down, gmsaIdentity('WebApplication1'), parseUncPath('\\\\files01\\data\\f.txt')!, 'read');
    const byAddress = openShare(down, gmsaIdentity('WebApplication1'), parseUncPath(`\\\\${files01}\\data\\f.txt`)!, 'read');
    expect(byName.ok ? undefined : byName.error.text).to.equal('The network path was not found.');
    expect(byAddress.ok ? undefined : byAddress.error.text).to.equal('There are currently no logon servers available to service the logon request.');
  });

  it('names the errors with their system messages', () => {
    const text = (path: string, identity: ContainerIdentity, mode: ShareAccessMode): string => {
      const opened = openShare(directory, identity, parseUncPath(path)!, mode);
      return opened.ok ? '' : `${opened.error.name}: ${opened.error.text}`;
    };
    expect(text('\\\\files01\\data\\f.txt', noGmsaIdentity(), 'read')).to.equal('ERROR_ACCESS_DENIED: Access is denied.');
    expect(text('\\\\nope\\data\\f.txt', noGmsaIdentity(), 'read')).to.equal('ERROR_BAD_NETPATH: The network path was not found.');
    expect(text('\\\\files01\\nope', noGmsaIdentity(), 'read')).to.equal('ERROR_BAD_NET_NAME: The network name cannot be found.');
    expect(text('\\\\files01\\data\\f.txt', channelTakenIdentity(), 'read')).to.equal(
      'ERROR_TRUSTED_RELATIONSHIP_FAILURE: The trust relationship between this workstation and the primary domain failed.',
    );
  });
});

describe('file shares: contents', () => {
  const directory = smbDirectory();
  const writer = gmsaIdentity('WebApplication1');
  const at = (path: string, mode: ShareAccessMode = 'write') => {
    const opened = openShare(directory, writer, parseUncPath(path)!, mode);
    if (!opened.ok) throw new Error(opened.error.text);
    return opened.location;
  };

  it('keeps what one container writes for the next to read, by share, without case', () => {
    let now = 1000;
    const contents = new FileShareContents(() => now);
    expect(contents.write(at('\\\\files01\\data\\Hello.txt'), 'hi\r\n', false)).to.deep.equal({ ok: true, value: undefined });
    now = 2000;
    contents.write(at('\\\\files01\\data\\hello.TXT'), 'again\r\n', true);
    expect(contents.read(at('\\\\FILES01\\DATA\\HELLO.txt', 'read'))).to.deep.equal({ ok: true, value: 'hi\r\nagain\r\n' });
    expect(contents.list(at('\\\\files01\\data', 'read'))).to.deep.equal({ ok: true, value: [{ name: 'Hello.txt', directory: false, size: 11, writtenAtMs: 2000 }] });
    expect(new FileShareContents().read(at('\\\\files01\\data\\hello.txt', 'read')).ok).to.equal(false);
  });

  it('seeds a share from the node file; folders exist through their files', () => {
    const contents = new FileShareContents(() => 5);
    expect(contents.read(at('\\\\files01\\public\\readme.txt', 'read'))).to.deep.equal({ ok: true, value: 'Welcome\r\n' });
    expect(contents.list(at('\\\\files01\\public', 'read'))).to.deep.equal({
      ok: true,
      value: [
        { name: 'docs', directory: true, size: 0, writtenAtMs: 5 },
        { name: 'readme.txt', directory: false, size: 9, writtenAtMs: 5 },
      ],
    });
    expect(contents.kind(at('\\\\files01\\public\\docs', 'read'))).to.equal('directory');
    expect(contents.kind(at('\\\\files01\\public\\docs\\guide.txt', 'read'))).to.equal('file');
    expect(contents.kind(at('\\\\files01\\public\\nope.txt', 'read'))).to.equal(undefined);
  });

  it('refuses what CreateFile refuses: a missing file, a missing folder, a folder opened as a file', () => {
    const contents = new FileShareContents();
    const error = (r: { ok: boolean; error?: { name: string } }): string | undefined => r.error?.name;
    expect(error(contents.read(at('\\\\files01\\data\\none.txt', 'read')))).to.equal('ERROR_FILE_NOT_FOUND');
    expect(error(contents.read(at('\\\\files01\\data\\no\\none.txt', 'read')))).to.equal('ERROR_PATH_NOT_FOUND');
    expect(error(contents.write(at('\\\\files01\\data\\no\\f.txt'), 'x', false))).to.equal('ERROR_PATH_NOT_FOUND');
    expect(error(contents.write(at('\\\\files01\\data'), 'x', false))).to.equal('ERROR_ACCESS_DENIED');
    expect(error(contents.read(at('\\\\files01\\public\\docs', 'read')))).to.equal('ERROR_ACCESS_DENIED');
  });
});

describe('file shares in the node file', () => {
  const rejects = (yaml: string): string => {
    try {
      parseNodeFile(yaml, 'node.yaml');
    } catch (err) {
      return (err as Error).message;
    }
    return 'accepted';
  };

  it('accepts the fixture', () => {
    expect(rejects(SMB_NODE_YAML)).to.equal('accepted');
  });

  it('refuses an address beyond loopback, naming the field', () => {
    expect(rejects(SMB_NODE_YAML.replace('address: 127.0.54.1', 'address: 10.0.0.5'))).to.equal(
      'node.yaml: domains[0].fileServers[1].address: must be a loopback IPv4 address (127.0.0.0/8): simulated servers never answer beyond this machine (got "10.0.0.5")',
    );
  });

  it('refuses a second server or share of one name, and an address two hosts would share', () => {
    expect(rejects(SMB_NODE_YAML.replace('name: FILES02', 'name: files01'))).to.equal('node.yaml: domains[0].fileServers[1].name: "files01" is already defined by domains[0].fileServers[0]');
    expect(rejects(SMB_NODE_YAML.replace('{ name: public,', '{ name: DATA,'))).to.equal('node.yaml: domains[0].fileServers[0].shares[1].name: "DATA" is already defined by domains[0].fileServers[0].shares[0]');
    expect(rejects(SMB_NODE_YAML.replace('address: 127.0.54.1', 'address: 127.0.53.2'))).to.equal('node.yaml: domains[0].fileServers[1].address: 127.0.53.2 is already the address of domains[0].domainControllers[1]');
  });
});

describe('file shares of a node derived from a template (node mode)', () => {
  it('gives the share permissions of the template computer account to the new one', async () => {
    const { deriveNodeDirectory } = await import('../../../src/runtime/windows/node-directory.js');
    const yaml = SMB_NODE_YAML.replace("readAccess: ['DEMO\\EventLogger$']", () => "readAccess: ['DEMO\\EventLogger$', 'WINNODE1$']");
    expect(yaml).to.not.equal(SMB_NODE_YAML);
    const template = smbDirectory(yaml);
    const derived = deriveNodeDirectory(template, 'MULTI-2', 'multi-2');
    expect(derived.findDomain('DEMO')!.fileServers![0]!.shares[0]!.readAccess).to.deep.equal(['DEMO\\EventLogger$', 'MULTI-2$']);
    expect(derived.findDomain('DEMO')!.fileServers![0]!.shares[1]!.readAccess).to.deep.equal(['Everyone']);
  });
});
