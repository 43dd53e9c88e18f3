// nslookup and nltest /sc_reset answered from a container's session (the domain at the moment
// they run). Layouts: Windows nslookup.exe (Server/Address header, `Name:    `, `Addresses:  `
// with further ones after a tab and two blanks, "*** <server> can't find <name>: Non-existent
// domain", "DNS request timed out."); nltest /sc_reset as the Kubernetes gMSA page's
// troubleshooting shows it (kubernetes/website content/en/docs/tasks/configure-pod-container/
// configure-gmsa.md), run by the upstream e2e test (kubernetes test/e2e/windows/gmsa_full.go)
// when `nltest /QUERY` fails.
import { expect } from 'chai';
import { nltestScReset, nslookup } from '../../../src/runtime/windows/domain-commands.js';
import { domainControllerAddress, fileServerAddress } from '../../../src/runtime/windows/file-shares.js';
import { channelTakenIdentity, failedIdentity, gmsaIdentity, noGmsaIdentity, SMB_NODE_YAML, smbDirectory, TestSession } from './smb-fixtures.js';

describe('nslookup in a Windows container', () => {
  const contoso = smbDirectory().findDomain('contoso.com')!;
  const dc1 = domainControllerAddress(contoso, 0);

  it('answers the domain name with its DCs, from the first DC that answers', () => {
    expect(nslookup(['nslookup', 'contoso.com'], new TestSession(gmsaIdentity('WebApplication1')))).to.deep.equal({
      stdout: `Server:  dc1.contoso.com\nAddress:  ${dc1}\n\nName:    contoso.com\nAddresses:  ${dc1}\n\t  127.0.53.2\n\n`,
      stderr: '',
      exitCode: 0,
    });
  });

  it('finds a file server by its short name through the domain suffix, and a DC by name', () => {
    const session = new TestSession(noGmsaIdentity());
    expect(nslookup(['nslookup.exe', 'files01'], session).stdout).to.equal(
      `Server:  dc1.contoso.com\nAddress:  ${dc1}\n\nName:    FILES01.contoso.com\nAddress:  ${fileServerAddress(contoso, 0)}\n\n`,
    );
    expect(nslookup(['nslookup', 'dc2.contoso.com.'], session).stdout).to.match(/Name: {4}dc2\.contoso\.com\nAddress: {2}127\.0\.53\.2\n\n$/);
  });

  it('says a name does not exist', () => {
    expect(nslookup(['nslookup', 'nosuch.example'], new TestSession(noGmsaIdentity()))).to.deep.equal({
      stdout: `Server:  dc1.contoso.com\nAddress:  ${dc1}\n\n`,
      stderr: "*** dc1.contoso.com can't find nosuch.example: Non-existent domain\n",
      exitCode: 1,
    });
  });

  it('asks the next DC when the first is down, and times out when none answers (read at each run)', () => {
    const session = new TestSession(gmsaIdentity('WebApplication1'));
    session.domain = smbDirectory(SMB_NODE_YAML.replace('- { name: dc1.contoso.com }', '- { name: dc1.contoso.com, reachable: false }'));
    expect(nslookup(['nslookup', 'contoso.com'], session).stdout).to.match(/^Server: {2}dc2\.contoso\.com\nAddress: {2}127\.0\.53\.2\n/);
    session.domain = smbDirectory(SMB_NODE_YAML.replace('- { name: dc1.contoso.com }', '- { name: dc1.contoso.com, reachable: false }').replace('address: 127.0.53.2 }', 'address: 127.0.53.2, reachable: false }'));
    const timeout = 'DNS request timed out.\n    timeout was 2 seconds.\n';
    expect(nslookup(['nslookup', 'contoso.com'], session)).to.deep.equal({
      stdout: `${timeout}Server:  UnKnown\nAddress:  ${dc1}\n\n${timeout}${timeout}`,
      stderr: '*** Request to UnKnown timed-out\n',
      exitCode: 1,
    });
  });
});

describe('nltest /sc_reset in a Windows container', () => {
  const done = 'Flags: 30 HAS_IP  HAS_TIMESERV\nTrusted DC Name \\\\dc1.contoso.com\nTrusted DC Connection Status Status = 0 0x0 NERR_Success\nThe command completed successfully\n';

  it('resets a working channel and names the DC', () => {
    const session = new TestSession(gmsaIdentity('WebApplication1'));
    expect(nltestScReset('contoso.com', session)).to.deep.equal({ stdout: done, stderr: '', exitCode: 0 });
    expect(nltestScReset('DEMO', session).exitCode).to.equal(0);
    expect(session.resets).to.equal(2);
  });

  it('takes back a secure channel another container with the same gMSA and hostname took', () => {
    const session = new TestSession(channelTakenIdentity());
    session.afterReset = gmsaIdentity('WebApplication1');
    expect(nltestScReset('contoso.com', session).stdout).to.equal(done);
    expect(session.resets).to.equal(1);
  });

  it('fails with the channel status when the gMSA cannot log on, without a gMSA, or for another domain', () => {
    const lsa = new TestSession(failedIdentity('node-not-allowed'));
    expect(nltestScReset('contoso.com', lsa)).to.deep.equal({ stdout: 'I_NetLogonControl failed: Status = 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET\n', stderr: '', exitCode: 1 });
    expect(lsa.resets).to.equal(0);
    expect(nltestScReset('contoso.com', new TestSession(noGmsaIdentity())).stdout).to.equal('I_NetLogonControl failed: Status = 1722 0x6ba RPC_S_SERVER_UNAVAILABLE\n');
    expect(nltestScReset('fabrikam.com', new TestSession(gmsaIdentity('WebApplication1'))).stdout).to.equal('I_NetLogonControl failed: Status = 1355 0x54b ERROR_NO_SUCH_DOMAIN\n');
  });
});
