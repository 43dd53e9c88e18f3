// Several containers, one gMSA, one hostname, on a node older than Windows Server 2019: the last
// one to start holds the secure channel, the others fail `nltest /sc_verify` (Microsoft,
// MicrosoftDocs/Virtualization-Documentation virtualization/windowscontainers/manage-containers/
// gmsa-troubleshooting.md, "Using a gMSA with more than one container simultaneously leads to
// intermittent failures on Windows Server 2016 and Windows 10, versions 1709 and 1803"; fixed in
// Windows Server 2019, build 17763). Plus the same through the kubelet with the windows-gmsa
// webhook's RANDOM_HOSTNAME, which gives each pod its own hostname.
import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCriClient, unaryCall, type CriClient } from '../../../src/cri/proto.js';
import { DirectoryClusterSource } from '../../../src/apiserver/cluster.js';
import { requestingUser } from '../../../src/apiserver/rbac.js';
import { runPods } from '../../../src/kubelet/run-pods.js';
import type { ContainerIdentity } from '../../../src/runtime/windows/container-identity.js';
import { sharesSecureChannel, withSharedChannel, type ChannelHolder } from '../../../src/runtime/windows/shared-gmsa-trust.js';
import { startRuntime, type RuntimeHandle } from '../../support/runtime.js';
import { tempDirPerTest } from '../../support/temp-dir.js';
import { CONTOSO, identityWith } from './smb-fixtures.js';

const examples = fileURLToPath(new URL('../../../../examples/', import.meta.url));

const identity = (account: string, hostname: string): ContainerIdentity =>
  identityWith({ kind: 'ok', domain: CONTOSO, account, domainController: 'dc1.contoso.com' }, hostname);
const holder = (id: string, startedAtNanos: bigint, i: ContainerIdentity): ChannelHolder => ({ id, startedAtNanos, identity: i });

describe('shared gMSA secure channel before Windows Server 2019', () => {
  it('applies to builds before 17763 (WS2016 14393, 1709 16299, 1803 17134), not to 17763 and later', () => {
    expect(['10.0.14393', '10.0.16299', '10.0.17134'].map(sharesSecureChannel)).to.deep.equal([true, true, true]);
    expect(['10.0.17763', '10.0.20348', '10.0.26100'].map(sharesSecureChannel)).to.deep.equal([false, false, false]);
  });

  const first = holder('a', 1n, identity('DEMO\\WebApplication1$', 'webapp1'));
  const second = holder('b', 2n, identity('DEMO\\WebApplication1$', 'WEBAPP1'));

  it('WS2016: the earlier container loses the channel to the later one; the later one keeps it', () => {
    const lost = withSharedChannel('10.0.14393', first, [first, second]);
    expect(lost.domainAccess.kind).to.equal('failed');
    if (lost.domainAccess.kind !== 'failed') return;
    expect(lost.domainAccess.failure.reason).to.equal('secure-channel-taken');
    expect(lost.domainAccess.failure.netlogonStatus).to.deep.equal({ code: 5, name: 'ERROR_ACCESS_DENIED', text: 'Access is denied.' });
    expect(withSharedChannel('10.0.14393', second, [first, second])).to.equal(second.identity);
  });

  it('WS2019: both keep it', () => {
    expect(withSharedChannel('10.0.17763', first, [first, second])).to.equal(first.identity);
  });

  it('WS2016: another hostname or another gMSA shares nothing', () => {
    expect(withSharedChannel('10.0.14393', first, [holder('c', 3n, identity('DEMO\\WebApplication1$', 'webapp2'))])).to.equal(first.identity);
    expect(withSharedChannel('10.0.14393', first, [holder('d', 3n, identity('DEMO\\EventLogger$', 'webapp1'))])).to.equal(first.identity);
  });
});

describe('shared gMSA secure channel through the kubelet and the runtime', function () {
  this.timeout(60_000);
  const dir = tempDirPerTest('winsim-shared-gmsa-');
  let runtime: RuntimeHandle | undefined;
  let cri: CriClient | undefined;
  afterEach(async () => {
    cri?.close();
    await runtime?.stop();
    cri = undefined;
    runtime = undefined;
  });

  const pod = (name: string, hostname: string | undefined) => `apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: contoso-apps }
spec:
  serviceAccountName: webapp
${hostname === undefined ? '' : `  hostname: ${hostname}\n`}  securityContext:
    windowsOptions:
      gmsaCredentialSpecName: webapplication1
      runAsUserName: "NT AUTHORITY\\\\NETWORK SERVICE"
  containers:
    - name: main
      # An image nobody described: a Windows image of the node's own build (docs/images.md), so a
      # WS2016 or WS2019 node runs it process-isolated.
      image: contoso.azurecr.io/webapp:1.0
      command: ["ping", "-t", "localhost"]
`;

  /** Runs two pods one after the other on a node of `osBuild`; `nltest /sc_verify` in each, by pod name. */
  async function scVerify(osBuild: string, hostnames: [string | undefined, string | undefined], randomHostname = false): Promise<Record<string, string>> {
    const nodeFile = join(dir(), 'node.yaml');
    const node = (await readFile(join(examples, 'nodes', 'winnode1.yaml'), 'utf8')).replace(/osBuild: 10\.0\.\d+/, `osBuild: ${osBuild}`);
    expect(node).to.include(`osBuild: ${osBuild}`);
    await writeFile(nodeFile, node);
    runtime = await startRuntime({ args: ['--node', nodeFile] });
    cri = createCriClient(runtime.endpoint);
    const outputs: Record<string, string> = {};
    for (const [i, name] of ['first', 'second'].entries()) {
      const file = join(dir(), `${name}.yaml`);
      await writeFile(file, pod(name, hostnames[i]));
      const [result] = await runPods(cri, [file], { cluster: new DirectoryClusterSource(join(examples, 'cluster')), user: requestingUser('alice'), podLogsRoot: join(dir(), 'pods'), randomHostname });
      if (result?.stage !== 'runtime' || result.outcome.containers[0]?.state !== 'started') throw new Error(`${name} did not start`);
    }
    for (const c of (await unaryCall(cri.runtime, 'ListContainers', {})).containers) {
      const r = await unaryCall(cri.runtime, 'ExecSync', { container_id: c.id, cmd: ['nltest', '/sc_verify:contoso.com'], timeout: '5' });
      outputs[c.labels['io.kubernetes.pod.name']!] = `${r.exit_code}: ${Buffer.from(r.stdout).toString()}${Buffer.from(r.stderr).toString()}`.replace(/\r\n/g, '\n');
    }
    return outputs;
  }

  it('WS2016 (10.0.14393), same hostname: the first pod fails /sc_verify, the second passes', async () => {
    const out = await scVerify('10.0.14393', ['webapp1', 'webapp1']);
    expect(out['first']).to.equal('1: I_NetLogonControl failed: Status = 5 0x5 ERROR_ACCESS_DENIED\n');
    expect(out['second']).to.match(/^0: Flags: b0 HAS_IP {2}HAS_TIMESERV\nTrusted DC Name /);
  });

  it('WS2019 (10.0.17763), same hostname: both pass', async () => {
    const out = await scVerify('10.0.17763', ['webapp1', 'webapp1']);
    expect(out['first']).to.match(/^0: /);
    expect(out['second']).to.match(/^0: /);
  });

  it("WS2016 with the webhook's RANDOM_HOSTNAME: each pod gets its own hostname, both pass", async () => {
    const out = await scVerify('10.0.14393', [undefined, undefined], true);
    expect(out['first']).to.match(/^0: /);
    expect(out['second']).to.match(/^0: /);
  });
});
