import { createSocket } from 'node:dgram';
import { expect } from 'chai';
import { ContainerFiles } from '../../../src/emulator/container-files.js';
import { run, start, testTarget } from '../emulator-harness.js';
import { waitUntil } from '../../support/wait.js';

/**
 * agnhost's subcommands as kubernetes v1.34 test/images/agnhost serves them, run in the command
 * emulator on a loopback pod IP of their own (the runtime-level tests are in image-program.test.ts).
 */
describe('agnhost in the command emulator', () => {
  const started: Array<ReturnType<typeof start>> = [];
  const launch = (...args: Parameters<typeof start>): ReturnType<typeof start> => {
    const s = start(...args);
    started.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of started.splice(0)) {
      s.process.kill('SIGKILL');
      await s.process.exited;
    }
  });
  const ipOf = (target: ReturnType<typeof testTarget>): string => String(target.platform['podIp']);
  const get = async (url: string): Promise<{ status: number; text: string }> => {
    const res = await fetch(url, { headers: { Connection: 'close' } });
    return { status: res.status, text: await res.text() };
  };
  const answering = (url: string) => waitUntil(`${url} answers`, async () => (await fetch(url, { headers: { Connection: 'close' } }).then(() => true, () => false)));

  it('entrypoint-tester prints every argument as Go prints a slice (entrypoint-tester/ep.go)', async () => {
    expect(await run(['/agnhost-2', 'entrypoint-tester', 'a', 'b c'])).to.deep.include({ stdout: '[/agnhost-2 entrypoint-tester a b c]\n', exitCode: 0 });
  });

  it('flag and argument errors use cobra/pflag texts; unsimulated subcommands say so', async () => {
    expect(await run(['agnhost', 'netexec', '--http-port=eighty'])).to.deep.include({
      stderr: 'Error: invalid argument "eighty" for "--http-port" flag: strconv.ParseInt: parsing "eighty": invalid syntax\n',
      exitCode: 1,
    });
    expect(await run(['agnhost', 'pause', 'extra'])).to.deep.include({ stderr: 'Error: accepts at most 0 arg(s), received 1\n', exitCode: 1 });
    // Our own text for a subcommand upstream has and the emulator does not.
    expect(await run(['agnhost', 'guestbook'])).to.deep.include({ stderr: 'agnhost guestbook: not simulated by cri-winsim\n', exitCode: 1 });
    const help = await run(['agnhost']);
    expect(help.exitCode).to.equal(0);
    expect(help.stdout).to.match(/^Usage:\n {2}app \[command\]\n\nAvailable Commands:\n/);
    expect(help.stdout).to.contain('  netexec                Creates HTTP(S), UDP, and (optionally) SCTP servers with various endpoints\n');
  });

  it('netexec answers UDP hostname, echo and clientip on --udp-port', async () => {
    const target = testTarget();
    const ip = ipOf(target);
    launch(['agnhost', 'netexec', '--http-port=8080', '--udp-port=8081'], { target });
    await answering(`http://${ip}:8080/healthz`);
    const ask = (text: string): Promise<string> => new Promise((resolve, reject) => {
      const socket = createSocket('udp4');
      const timer = setTimeout(() => { socket.close(); reject(new Error(`no UDP answer to ${text}`)); }, 5000);
      socket.on('message', (msg) => { clearTimeout(timer); socket.close(); resolve(msg.toString()); });
      socket.send(text, 8081, ip);
    });
    expect(await ask('hostname')).to.equal('web-0');
    expect(await ask('echo Hello')).to.equal('hello');
    expect(await ask('clientip')).to.match(/^127\.\d+\.\d+\.\d+:\d+$/);
  });

  it('netexec /dial reaches another pod over HTTP and refuses addresses off loopback', async () => {
    const a = testTarget();
    const b = testTarget();
    launch(['agnhost', 'netexec', '--udp-port=-1'], { target: a });
    launch(['agnhost', 'serve-hostname', '--port=9376'], { target: b });
    await answering(`http://${ipOf(a)}:8080/`);
    await answering(`http://${ipOf(b)}:9376/`);
    const dialled = await get(`http://${ipOf(a)}:8080/dial?request=hostname&protocol=http&host=${ipOf(b)}&port=9376&tries=2`);
    expect(JSON.parse(dialled.text)).to.deep.equal({ responses: ['web-0', 'web-0'] });
    const refused = await get(`http://${ipOf(a)}:8080/dial?request=hostname&host=10.0.0.9&port=80`);
    expect(JSON.parse(refused.text)).to.deep.equal({ errors: ['dial 10.0.0.9: cri-winsim pods reach loopback addresses only'] });
    expect(await get(`http://${ipOf(a)}:8080/dial?host=${ipOf(b)}&port=9376`)).to.deep.equal({ status: 400, text: 'request parameter not specified. <nil>\n' });
  });

  it('serve-hostname logs SIGTERM, keeps waiting for the pod\'s deletion, and ends on SIGKILL with its port closed', async () => {
    const target = testTarget();
    const ip = ipOf(target);
    const { process, out } = launch(['agnhost', 'serve-hostname'], { target, init: true });
    await answering(`http://${ip}:9376/`);
    process.kill('SIGTERM');
    await waitUntil('the shutdown lines', () => out.stderr.includes('Awaiting pod deletion.'));
    expect(out.stderr).to.match(/\d\d:\d\d:\d\d Serving on port 9376\.\n.*Shutting down after receiving signal: terminated\.\n.*Awaiting pod deletion\.\n$/s);
    expect(process.hasExited).to.equal(false);
    process.kill('SIGKILL');
    expect((await process.exited).exitCode).to.equal(137);
    await fetch(`http://${ip}:9376/`).then(() => expect.fail('still listening'), () => undefined);
  });

  it('porter serves each SERVE_PORT_<n> value on port n, as JSON with --json-response', async () => {
    const target = testTarget();
    const ip = ipOf(target);
    launch(['agnhost', 'porter', '--json-response'], { target, env: { SERVE_PORT_18001: 'foo', SERVE_TCP_PORT_18002: 'bar' } });
    await answering(`http://${ip}:18002/`);
    expect(JSON.parse((await get(`http://${ip}:18001/`)).text)).to.deep.equal({ Method: 'GET', Body: 'foo' });
    expect(JSON.parse((await get(`http://${ip}:18002/x`)).text)).to.deep.equal({ Method: 'GET', Body: 'bar' });
  });

  it('liveness answers /healthz ok while young and /started with its age; test-webserver serves the container\'s files', async () => {
    const target = testTarget();
    target.files = ContainerFiles.of(new Map([['/etc/hostname', 'web-0\n']]));
    const ip = ipOf(target);
    launch(['agnhost', 'liveness'], { target });
    launch(['agnhost', 'test-webserver', '--port=8090'], { target });
    await answering(`http://${ip}:8080/healthz`);
    expect(await get(`http://${ip}:8080/healthz`)).to.deep.equal({ status: 200, text: 'ok' });
    expect((await get(`http://${ip}:8080/started`)).text).to.match(/^\d+(\.\d+)?s$/);
    expect((await get(`http://${ip}:8080/nothing`)).status).to.equal(404);
    await answering(`http://${ip}:8090/`);
    expect(await get(`http://${ip}:8090/etc/hostname`)).to.deep.equal({ status: 200, text: 'web-0\n' });
    expect(await get(`http://${ip}:8090/etc/missing`)).to.deep.equal({ status: 404, text: '404 page not found\n' });
  });
});
