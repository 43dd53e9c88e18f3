// The shared-hostname trust loss over time, through a runtime over its CRI socket: on a node
// older than Windows Server 2019 (MicrosoftDocs/Virtualization-Documentation
// virtualization/windowscontainers/manage-containers/gmsa-troubleshooting.md, "Using a gMSA with
// more than one container simultaneously leads to intermittent failures on Windows Server 2016";
// microsoft/Windows-Containers#405), a second container with the same gMSA and hostname logs on
// and the first one's next SMB access or `nltest /sc_verify` fails with the trust failure — also
// in a process that was already running (each command reads the domain when it runs); `nltest
// /sc_reset` takes the channel back. What one container writes to a share, another reads.
import { expect } from 'chai';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { unaryCall } from '../../../src/cri/proto.js';
import { createWindowsContainer, execSync, KEP_EXAMPLE_CREDENTIAL_SPEC, startInProcessRuntime, windowsContainerConfig, windowsPodConfig, type InProcessRuntime } from '../../e2e/windows-support.js';
import { waitUntil } from '../../support/wait.js';
import { SMB_NODE_YAML, smbDirectory } from './smb-fixtures.js';

// An image nobody described: a Windows image of the node's own build (docs/images.md).
const IMAGE = 'contoso.azurecr.io/webapp:1.0';
const TRUST = 'The trust relationship between this workstation and the primary domain failed.\r\n';

describe('SMB and the shared gMSA secure channel over time (WS2016 node)', function () {
  this.timeout(60_000);
  let rt: InProcessRuntime | undefined;
  afterEach(async () => {
    await rt?.close();
    // close() leaves the directory (a restart may open it again): this suite never does.
    if (rt !== undefined) await rm(rt.dir, { recursive: true, force: true });
    rt = undefined;
  });

  it('the later container takes the channel; the earlier one fails until it resets it', async () => {
    rt = await startInProcessRuntime({ node: smbDirectory(`${SMB_NODE_YAML}`.replace('hostname: winnode1,', 'hostname: winnode1, osBuild: 10.0.14393,')), adMode: 'windows-server' });
    expect(rt.runtime.context.windows.node.osBuild).to.equal('10.0.14393');
    const { cri } = rt;
    const security = { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
    // Both pods get the hostname `webapp` (windowsPodConfig uses the name), as two replicas
    // without the webhook's RANDOM_HOSTNAME would.
    const podA = windowsPodConfig('webapp', join(rt.dir, 'a'), security);
    const podB = { ...windowsPodConfig('webapp', join(rt.dir, 'b'), security), metadata: { name: 'webapp-2', namespace: 'e2e-windows', uid: 'uid-webapp-2', attempt: 0 } };
    const loop = ['powershell', '-Command', 'while($true) { nltest /sc_verify:contoso.com; Start-Sleep -Milliseconds 50 }'];
    const a = await createWindowsContainer(cri, podA, windowsContainerConfig('app', IMAGE, security, loop));
    await unaryCall(cri.runtime, 'StartContainer', { container_id: a.containerId });
    const log = join(rt.dir, 'a', 'app.log');
    const logged = async (line: string): Promise<boolean> => (await readFile(log, 'utf8').catch(() => '')).includes(line);
    await waitUntil("A's loop logs a verified channel", () => logged('Trust Verification Status = 0 0x0 NERR_Success'));

    expect(await execSync(cri, a.containerId, ['cmd', '/c', 'echo from a > \\\\files01\\data\\f.txt'])).to.deep.equal({ stdout: '', stderr: '', exitCode: 0 });

    const b = await createWindowsContainer(cri, podB, windowsContainerConfig('app', IMAGE, security, ['ping', '-t', 'localhost']));
    await unaryCall(cri.runtime, 'StartContainer', { container_id: b.containerId });

    expect(await execSync(cri, a.containerId, ['cmd', '/c', 'type \\\\files01\\data\\f.txt'])).to.deep.equal({ stdout: '', stderr: TRUST, exitCode: 1 });
    expect((await execSync(cri, a.containerId, ['nltest', '/sc_verify:contoso.com'])).exitCode).to.equal(1);
    expect(await execSync(cri, b.containerId, ['cmd', '/c', 'type \\\\files01\\data\\f.txt'])).to.deep.equal({ stdout: 'from a \r\n', stderr: '', exitCode: 0 });
    // A's loop, started before B, sees the loss in the same process.
    await waitUntil("A's loop logs the lost channel", () => logged('I_NetLogonControl failed: Status = 5 0x5 ERROR_ACCESS_DENIED'));

    expect((await execSync(cri, a.containerId, ['nltest', '/sc_reset:contoso.com'])).stdout).to.include('Trusted DC Connection Status Status = 0 0x0 NERR_Success');
    expect((await execSync(cri, a.containerId, ['cmd', '/c', 'type \\\\files01\\data\\f.txt'])).exitCode).to.equal(0);
    expect(await execSync(cri, b.containerId, ['powershell', '-Command', 'Test-ComputerSecureChannel'])).to.deep.equal({ stdout: 'False\r\n', stderr: '', exitCode: 0 });
    expect((await execSync(cri, b.containerId, ['cmd', '/c', 'type \\\\files01\\data\\f.txt'])).stderr).to.equal(TRUST);
  });

  it('on Windows Server 2019 both keep working', async () => {
    rt = await startInProcessRuntime({ node: smbDirectory(SMB_NODE_YAML.replace('hostname: winnode1,', 'hostname: winnode1, osBuild: 10.0.17763,')), adMode: 'windows-server' });
    const { cri } = rt;
    const security = { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
    const ids: string[] = [];
    for (const name of ['webapp-1', 'webapp-2']) {
      const pod = { ...windowsPodConfig(name, join(rt.dir, name), security), hostname: 'webapp' };
      const c = await createWindowsContainer(cri, pod, windowsContainerConfig('app', IMAGE, security, ['ping', '-t', 'localhost']));
      await unaryCall(cri.runtime, 'StartContainer', { container_id: c.containerId });
      ids.push(c.containerId);
    }
    for (const id of ids) expect((await execSync(cri, id, ['cmd', '/c', 'echo x > \\\\files01\\data\\f.txt'])).exitCode).to.equal(0);
  });
});
