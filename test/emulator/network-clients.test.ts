import { expect } from 'chai';
import { run, start, testTarget } from './emulator-harness.js';
import { waitUntil } from '../support/wait.js';

/**
 * curl and nc as the Windows e2e tests run them in containers (kubernetes v1.34
 * test/e2e/windows/hybrid_network.go: `cmd /c curl.exe <address> --connect-timeout 10 --fail`,
 * `/bin/sh -c "nc -vz <address> <port> -w 10"`), against a server in another simulated pod.
 */
describe('network clients in the command emulator (curl, nc)', () => {
  const server = testTarget();
  const ip = String(server.platform['podIp']);
  let served: ReturnType<typeof start>;
  before(async () => {
    served = start(['agnhost', 'netexec', '--http-port=8080', '--udp-port=-1'], { target: server });
    await waitUntil('netexec listens', async () => fetch(`http://${ip}:8080/hostname`, { headers: { Connection: 'close' } }).then(() => true, () => false));
  });
  after(async () => {
    served.process.kill('SIGKILL');
    await served.process.exited;
  });

  it('curl.exe through cmd /c prints the body; --fail turns an HTTP error into exit 22', async () => {
    const client = testTarget('windows');
    expect(await run(['cmd', '/c', `curl.exe ${ip}:8080/hostname --connect-timeout 10 --fail`], { target: client })).to.deep.include({ stdout: 'web-0', exitCode: 0 });
    expect(await run(['cmd', '/c', `curl.exe http://${ip}:8080/echo?code=404 --connect-timeout 10 --fail`], { target: client })).to.deep.include({
      stderr: 'curl: (22) The requested URL returned error: 404\n',
      exitCode: 22,
    });
    expect(await run(['curl', '-s', '-o', '/dev/null', `${ip}:8080/`], { target: client })).to.deep.include({ stdout: '', exitCode: 0 });
  });

  it('curl fails as curl does on a closed port and an unresolvable name; addresses off loopback are refused', async () => {
    expect(await run(['curl', `http://${ip}:8099/`])).to.deep.include({ exitCode: 7 });
    expect((await run(['curl', `http://${ip}:8099/`])).stderr).to.match(new RegExp(`^curl: \\(7\\) Failed to connect to ${ip.replace(/\./g, '\\.')} port 8099 after \\d+ ms: Couldn't connect to server\\n$`));
    expect(await run(['curl', 'www.google.com'])).to.deep.include({ stderr: 'curl: (6) Could not resolve host: www.google.com\n', exitCode: 6 });
    // Our own reason: a simulated pod sends nothing off the loopback range.
    expect(await run(['curl', '-sS', 'http://8.8.8.8/'])).to.deep.include({ stderr: 'curl: (7) Failed to connect to 8.8.8.8 port 80 after 0 ms: cri-winsim pods reach loopback addresses only\n', exitCode: 7 });
    expect(await run(['curl', '-s', 'http://8.8.8.8/'])).to.deep.include({ stderr: '', exitCode: 7 });
  });

  it('nc -vz reports an open and a closed port as OpenBSD netcat does', async () => {
    expect(await run(['/bin/sh', '-c', `nc -vz ${ip} 8080 -w 10`])).to.deep.include({ stderr: `Connection to ${ip} 8080 port [tcp/http-alt] succeeded!\n`, exitCode: 0 });
    expect(await run(['/bin/sh', '-c', `nc -vz ${ip} 8099 -w 10`])).to.deep.include({ stderr: `nc: connect to ${ip} port 8099 (tcp) failed: Connection refused\n`, exitCode: 1 });
  });
});
