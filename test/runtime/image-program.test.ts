import { readFile, writeFile } from 'node:fs/promises';
import { expect } from 'chai';
import { join } from 'node:path';
import { dir as tempDir, type DirectoryResult } from 'tmp-promise';
import type { DeclaredImage } from '../../src/runtime/images/images-file.js';
import { imageProgramPorts } from '../../src/emulator/image-program-process.js';
import { ContainerState } from '../../src/runtime/store/container-store.js';
import { waitUntil } from '../support/wait.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './windows/kep-example.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox, type RuntimeFixture } from './helpers.js';

/** Images as a user's images file declares them (docs/images.md), written to a temp file per test. */
function declared(reference: string, os: 'windows' | 'linux', fields: Omit<DeclaredImage, 'reference' | 'platforms'>): DeclaredImage {
  return { reference, platforms: [{ os }], ...fields };
}

const WEBAPP = 'contoso.azurecr.io/webapp:1.0';
const API = 'contoso.azurecr.io/api:2.0';
const CRASHER = 'contoso.azurecr.io/crasher:1';
const WORKER = 'contoso.azurecr.io/worker:1';
const AGNHOST = 'registry.k8s.io/e2e-test-images/agnhost:2.53';

const NO_WINDOWS_SC = { run_as_username: '', credential_spec: '', host_process: false, namespace_options: null };

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { headers: { Connection: 'close' } });
  return { status: res.status, text: await res.text() };
}

describe('runtime: what an image program does', () => {
  let fx: RuntimeFixture;
  let imagesDir: DirectoryResult;
  beforeEach(async () => {
    imagesDir = await tempDir({ unsafeCleanup: true });
    const images: DeclaredImage[] = [
      declared(WEBAPP, 'windows', { user: 'ContainerUser', entrypoint: ['C:\\app\\webapp.exe'], exposedPorts: [8080], program: {} }),
      declared(API, 'linux', { entrypoint: ['/app/api'], program: {} }),
      declared(CRASHER, 'linux', { entrypoint: ['/app/crash'], program: { output: ['booting', 'no database: giving up'], exitAfterSeconds: 0.2, exitCode: 3 } }),
      declared(WORKER, 'linux', { entrypoint: ['/app/worker'], exposedPorts: [8080], program: { ports: false } }),
      // agnhost as its Dockerfile builds it (ENTRYPOINT ["/agnhost"], CMD ["pause"], EXPOSE 80 8080 8081 9376).
      declared(AGNHOST, 'linux', { entrypoint: ['/agnhost'], cmd: ['pause'], exposedPorts: [80, 8080, 8081, 9376] }),
    ];
    const file = join(imagesDir.path, 'images.json');
    await writeFile(file, JSON.stringify({ images }));
    fx = await openRuntime({ images: { file } });
  });
  afterEach(async () => {
    await fx.close();
    await imagesDir.cleanup();
  });

  const podIp = async (sandboxId: string): Promise<string> =>
    (await fx.runtime.podSandboxStatus({ pod_sandbox_id: sandboxId, verbose: false })).status?.network?.ip ?? '';
  const log = async (containerId: string): Promise<string> =>
    readFile((await fx.runtime.containerStatus({ container_id: containerId, verbose: false })).status?.log_path ?? '', 'utf8').catch(() => '');
  const state = async (containerId: string) => (await fx.runtime.containerStatus({ container_id: containerId, verbose: false })).status;

  it('runs a declared Windows image: start line, identity page with the gMSA on a declared containerPort and the exposed port, /healthz, clean stop', async () => {
    await pull(fx.runtime, WEBAPP);
    const sb = await runSandbox(fx.runtime, { hostname: 'webapp-0', windows: { security_context: NO_WINDOWS_SC } });
    const id = await createContainer(fx.runtime, sb, {
      // The kubelet's annotation of the container's ports (pkg/kubelet/kuberuntime/labels.go, v1.34).
      annotations: { 'io.kubernetes.container.ports': JSON.stringify([{ name: 'http', containerPort: 9000, protocol: 'TCP' }, { containerPort: 9001, protocol: 'UDP' }]) },
      windows: { resources: null, security_context: { run_as_username: '', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC, host_process: false } },
    }, WEBAPP);
    await fx.runtime.startContainer({ container_id: id });
    const ip = await podIp(sb.id);
    // Our own start line (image-program-process.ts).
    await waitUntil('the start line', async () => (await log(id)).includes('serving HTTP'));
    expect(await log(id)).to.contain(`stdout F C:\\app\\webapp.exe: the image program of ${WEBAPP} started (simulated by cri-winsim); serving HTTP on ${ip}:8080, ${ip}:9000`);

    const page = await get(`http://${ip}:9000/orders?id=1`);
    expect(page.status).to.equal(200);
    expect(JSON.parse(page.text)).to.deep.include({
      program: 'C:\\app\\webapp.exe',
      image: WEBAPP,
      hostname: 'webapp-0',
      podIP: ip,
      port: 9000,
      user: 'ContainerUser',
      domain: 'User Manager',
      networkIdentity: 'DEMO\\WebApplication1$',
      gmsa: { account: 'WebApplication1', domain: 'contoso.com', netbiosName: 'DEMO' },
      request: { method: 'GET', path: '/orders' },
    });
    expect(await get(`http://${ip}:8080/healthz`)).to.deep.equal({ status: 200, text: 'ok\n' });
    // A UDP containerPort gets no HTTP server.
    await fetch(`http://${ip}:9001/`).then(() => expect.fail('port 9001 answered'), (err: Error) => expect(String((err.cause as Error | undefined)?.message)).to.contain('ECONNREFUSED'));

    await fx.runtime.stopContainer({ container_id: id, timeout: '10' });
    const stopped = await state(id);
    expect(stopped?.state).to.equal(ContainerState.EXITED);
    expect(stopped?.exit_code).to.equal(0);
    await fetch(`http://${ip}:9000/`).then(() => expect.fail('still listening after the stop'), () => undefined);
  });

  it('a declared program writes its output lines and exits with its code after exitAfterSeconds', async () => {
    await pull(fx.runtime, CRASHER);
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, {}, CRASHER);
    await fx.runtime.startContainer({ container_id: id });
    await waitUntil('the program exits', async () => (await state(id))?.state === ContainerState.EXITED);
    const exited = await state(id);
    expect(exited?.exit_code).to.equal(3);
    expect(exited?.reason).to.equal('Error');
    const lines = (await log(id)).trimEnd().split('\n').map((l) => l.split(' ').slice(3).join(' '));
    expect(lines).to.deep.equal(['booting', 'no database: giving up']);
  });

  it('ports: false serves nothing, even on exposed ports; SIGKILL ends it with 137', async () => {
    await pull(fx.runtime, WORKER);
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, {}, WORKER);
    await fx.runtime.startContainer({ container_id: id });
    await waitUntil('the start line', async () => (await log(id)).includes('serving no ports'));
    const ip = await podIp(sb.id);
    await fetch(`http://${ip}:8080/`).then(() => expect.fail('port 8080 answered'), () => undefined);
    await fx.runtime.stopContainer({ container_id: id, timeout: '0' });
    expect((await state(id))?.exit_code).to.equal(137);
  });

  it('only the main process falls back to the image program: an exec of an unknown command fails as runc does', async () => {
    await pull(fx.runtime, API);
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, {}, API);
    await fx.runtime.startContainer({ container_id: id });
    const err = await rejection(fx.runtime.execSync({ container_id: id, cmd: ['/app/api'], timeout: '5' }));
    expect(err.message).to.contain('OCI runtime exec failed: unable to start container process: exec: "/app/api": executable file not found in $PATH');
    // The program is in the container's process table under its own name.
    const ps = await fx.runtime.execSync({ container_id: id, cmd: ['pgrep', 'api'], timeout: '5' });
    expect(String(ps.stdout).trim()).to.match(/^\d+$/);
  });

  it('sh -c with one command execs the image program as the main process; a child of a shell is not found', async () => {
    await pull(fx.runtime, API);
    const sb = await runSandbox(fx.runtime);
    const execd = await createContainer(fx.runtime, sb, { command: ['sh', '-c', '/app/api --port 8086'] }, API);
    await fx.runtime.startContainer({ container_id: execd });
    await waitUntil('the start line', async () => (await log(execd)).includes(`/app/api --port 8086: the image program of ${API} started`));
    expect(String((await fx.runtime.execSync({ container_id: execd, cmd: ['pgrep', 'api'], timeout: '5' })).stdout).trim()).to.match(/^\d+$/);
    const child = await createContainer(fx.runtime, sb, { command: ['sh', '-c', '/app/api; echo after'] }, API);
    await fx.runtime.startContainer({ container_id: child });
    await waitUntil('the shell exits', async () => (await state(child))?.state === ContainerState.EXITED);
    expect(await log(child)).to.contain('stderr F sh: /app/api: not found');
  });

  it('an image without a program (catalogue busybox) keeps runc\'s "executable file not found"', async () => {
    await pull(fx.runtime, BUSYBOX);
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['webapp'] });
    const err = await rejection(fx.runtime.startContainer({ container_id: id }));
    expect(err.message).to.equal('failed to create containerd task: failed to create shim task: OCI runtime create failed: unable to start container process: exec: "webapp": executable file not found in $PATH: unknown');
  });

  describe('agnhost (kubernetes v1.34 test/images/agnhost)', () => {
    beforeEach(async () => pull(fx.runtime, AGNHOST));

    it('the image default runs `/agnhost pause`, which prints "Paused" and exits 2 on SIGTERM', async () => {
      const sb = await runSandbox(fx.runtime);
      const id = await createContainer(fx.runtime, sb, {}, AGNHOST);
      await fx.runtime.startContainer({ container_id: id });
      await waitUntil('Paused', async () => (await log(id)).includes('stdout F Paused'));
      await fx.runtime.stopContainer({ container_id: id, timeout: '10' });
      expect((await state(id))?.exit_code).to.equal(2);
    });

    it('netexec answers /hostname, /hostName, /echo, /healthz, /clientip and /shell on --http-port; /exit ends it with the code', async () => {
      const sb = await runSandbox(fx.runtime, { hostname: 'netexec-0' });
      const id = await createContainer(fx.runtime, sb, { args: ['netexec', '--http-port=8083', '--udp-port=8084'] }, AGNHOST);
      await fx.runtime.startContainer({ container_id: id });
      const ip = await podIp(sb.id);
      await waitUntil('the HTTP server', async () => (await log(id)).includes('Started HTTP server on port 8083'));
      expect(await log(id)).to.contain('Started UDP server on port  8084');
      expect(await get(`http://${ip}:8083/hostname`)).to.deep.equal({ status: 200, text: 'netexec-0' });
      expect(await get(`http://${ip}:8083/hostName`)).to.deep.equal({ status: 200, text: 'netexec-0' });
      expect(await get(`http://${ip}:8083/echo?msg=hello%20there`)).to.deep.equal({ status: 200, text: 'hello there' });
      expect(await get(`http://${ip}:8083/echo?msg=gone&code=410`)).to.deep.equal({ status: 410, text: 'gone' });
      expect((await get(`http://${ip}:8083/healthz`)).status).to.equal(200);
      expect((await get(`http://${ip}:8083/clientip`)).text).to.match(/^127\.\d+\.\d+\.\d+:\d+$/);
      expect(JSON.parse((await get(`http://${ip}:8083/shell?cmd=echo%20hi%3B%20exit%203`)).text)).to.deep.equal({ output: 'hi\n', error: 'exit status 3' });
      expect(await log(id)).to.match(/^\S+ stderr F \d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d GET \/hostname$/m);
      await get(`http://${ip}:8083/exit?code=7&timeout=1s`);
      await waitUntil('netexec exits', async () => (await state(id))?.state === ContainerState.EXITED);
      expect((await state(id))?.exit_code).to.equal(7);
    });

    it('netexec with --udp-port=-1 reports /healthz 412 (no UDP server is ready)', async () => {
      const sb = await runSandbox(fx.runtime);
      const id = await createContainer(fx.runtime, sb, { command: ['/agnhost', 'netexec', '--http-port', '8085', '--udp-port=-1'] }, AGNHOST);
      await fx.runtime.startContainer({ container_id: id });
      const ip = await podIp(sb.id);
      await waitUntil('the HTTP server', async () => (await log(id)).includes('Started HTTP server on port 8085'));
      await waitUntil('listening', async () => (await get(`http://${ip}:8085/healthz`).catch(() => ({ status: 0 }))).status !== 0);
      expect((await get(`http://${ip}:8085/healthz`)).status).to.equal(412);
      await fx.runtime.stopContainer({ container_id: id, timeout: '0' });
    });

    it('serve-hostname answers its hostname on 9376', async () => {
      const sb = await runSandbox(fx.runtime, { hostname: 'backend-1' });
      const id = await createContainer(fx.runtime, sb, { args: ['serve-hostname'] }, AGNHOST);
      await fx.runtime.startContainer({ container_id: id });
      const ip = await podIp(sb.id);
      await waitUntil('serving', async () => (await log(id)).includes('Serving on port 9376.'));
      expect(await get(`http://${ip}:9376/`)).to.deep.equal({ status: 200, text: 'backend-1' });
      await fx.runtime.stopContainer({ container_id: id, timeout: '0' });
      expect((await state(id))?.exit_code).to.equal(137);
    });

    it('an unknown subcommand fails as cobra does', async () => {
      const sb = await runSandbox(fx.runtime);
      const id = await createContainer(fx.runtime, sb, { args: ['test-webserver-with-selinux'] }, AGNHOST);
      await fx.runtime.startContainer({ container_id: id });
      await waitUntil('exit', async () => (await state(id))?.state === ContainerState.EXITED);
      expect((await state(id))?.exit_code).to.equal(1);
      expect(await log(id)).to.contain('stderr F Error: unknown command "test-webserver-with-selinux" for "app"');
    });
  });
});

describe('image program ports', () => {
  // name, program, exposed, annotation, expected
  const cases: Array<[string, Parameters<typeof imageProgramPorts>, number[]]> = [
    ['exposed, own and declared TCP ports, sorted, each once', [{ ports: [9000, 80] }, [8080, 80], JSON.stringify([{ containerPort: 8080 }, { containerPort: 7000, protocol: 'TCP' }])], [80, 7000, 8080, 9000]],
    ['UDP and SCTP containerPorts get no HTTP server', [{}, undefined, JSON.stringify([{ containerPort: 53, protocol: 'UDP' }, { containerPort: 9, protocol: 'SCTP' }])], []],
    ['ports: false serves nothing', [{ ports: false }, [8080], JSON.stringify([{ containerPort: 9000 }])], []],
    ['a malformed annotation adds nothing', [{}, [8080], '{not json'], [8080]],
    ['out-of-range ports are dropped', [{ ports: [0, 70000, 443] }, undefined, undefined], [443]],
  ];
  for (const [name, args, expected] of cases) {
    it(name, () => expect(imageProgramPorts(...args)).to.deep.equal(expected));
  }
});
