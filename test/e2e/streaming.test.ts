// The real crictl (cri-tools v1.34.0) against the runtime's streaming server and pod network:
// `exec` without -s, `exec -i` with piped stdin, `exec -it` under a pseudo-terminal (script(1)),
// `attach`, `port-forward` with an HTTP request through it, over both transports; HTTP to a pod
// IP and to a host port. Assertions are on what crictl prints, its exit code and HTTP answers.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { crictlConfigFile, crictlJson, runCrictl } from '../support/crictl.js';
import { cliPath, criToolPath, repoRoot, requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { waitUntil } from '../support/wait.js';
import { IIS, KEP_EXAMPLE_CREDENTIAL_SPEC, windowsContainerConfig, windowsPodConfig } from './windows-support.js';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const NGINX = 'registry.k8s.io/e2e-test-images/nginx:1.14-2';
const TRANSPORTS = ['spdy', 'websocket'] as const;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** crictl with stdin fed from `input` (chunks written `gapMs` apart), killed after killAfterMs. */
function crictlWithInput(rt: RuntimeHandle, args: string[], input: string[], opts: { gapMs?: number; pty?: boolean; killAfterMs?: number } = {}): Promise<Run> {
  const bin = criToolPath('crictl') as string;
  const full = ['--config', crictlConfigFile(rt), '-r', rt.endpoint, '-i', rt.endpoint, ...args];
  const env = { ...process.env };
  for (const v of ['CRI_CONFIG_FILE', 'CONTAINER_RUNTIME_ENDPOINT', 'IMAGE_SERVICE_ENDPOINT']) delete env[v];
  // script(1) gives crictl a pseudo-terminal (exec -it refuses a stdin that is not a terminal).
  const quoted = (a: string): string => `'${a.replace(/'/g, `'\\''`)}'`;
  const [program, argv] = opts.pty === true
    ? ['script', ['-q', '-e', '-c', [bin, ...full].map(quoted).join(' '), '/dev/null']] as const
    : [bin, full] as const;
  return new Promise((resolve, reject) => {
    const child = spawn(program, argv, { env, cwd: rt.dir, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.stdin.on('error', () => undefined);
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs ?? 20_000);
    let i = 0;
    const feed = (): void => {
      if (i >= input.length) {
        if (opts.pty !== true) child.stdin.end();
        return;
      }
      child.stdin.write(input[i++] as string);
      setTimeout(feed, opts.gapMs ?? 0);
    };
    setTimeout(feed, opts.gapMs ?? 0);
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('close', (code) => { clearTimeout(timer); child.stdin.destroy(); resolve({ code, stdout, stderr }); });
  });
}

/** A TCP port free on 127.0.0.1 now, for a pod's host port (which must be named in advance). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/**
 * The local port a port-forward given `:80` chose (it prints "Forwarding from 127.0.0.1:PORT ->
 * 80"), waited for up to 20 s. Letting the forwarder choose leaves no gap in which another
 * process could take a port found free beforehand.
 */
async function forwardedPort(output: () => string): Promise<number> {
  let port: number | undefined;
  await waitUntil('the "Forwarding from" line', () => {
    port = Number(/Forwarding from 127\.0\.0\.1:(\d+) -> 80\n/.exec(output())?.[1] ?? NaN);
    return Number.isInteger(port);
  }, 20_000, 50).catch((err: Error) => {
    throw new Error(`${err.message}; the forwarder printed: ${JSON.stringify(output())}`);
  });
  return port!;
}

/** Sockets the runtime process holds open (from /proc). */
function socketsOf(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:');
    } catch {
      return false;
    }
  }).length;
}

/** GET, retried for a few seconds while nothing listens yet (a server binds after its start). */
async function get(url: string): Promise<{ status: number; body: string }> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      return { status: res.status, body: await res.text() };
    } catch (err) {
      if (attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('crictl streaming and pod network against cri-winsim runtime', function () {
  this.timeout(60_000);
  let rt: RuntimeHandle | undefined;
  const ids = { pod: '', box: '', web: '', shell: '', podIp: '' };
  let podRange = '';
  const runtime = (): RuntimeHandle => {
    if (!rt) throw new Error('the runtime is not running (see the before all hook)');
    return rt;
  };
  const crictl = (args: string[], check = true) => runCrictl(runtime(), args, { check });
  const cleanStderr = (s: string): string => s.split('\n').filter((l) => l !== '' && !l.includes('level=warning')).join('\n');

  before(async function () {
    requireCriTool(this, 'crictl');
    // A range of its own: another runtime on this machine may be using the default one.
    podRange = `127.${100 + Math.floor(Math.random() * 100)}.0.0/16`;
    rt = await startRuntime({ name: 'streaming-e2e', args: ['--pod-cidr', podRange] });
    const dir = rt.dir;
    await crictl(['pull', BUSYBOX]);
    await crictl(['pull', NGINX]);
    writeFileSync(join(dir, 'pod.json'), JSON.stringify({
      metadata: { name: 'web', namespace: 'streaming', uid: 'uid-web', attempt: 0 },
      log_directory: join(dir, 'logs'),
      port_mappings: [{ protocol: 0, container_port: 80, host_port: 0, host_ip: '' }],
    }));
    writeFileSync(join(dir, 'box.json'), JSON.stringify({ metadata: { name: 'box' }, image: { image: BUSYBOX }, command: ['sleep', '3600'], log_path: 'box.log' }));
    writeFileSync(join(dir, 'web.json'), JSON.stringify({ metadata: { name: 'nginx' }, image: { image: NGINX }, log_path: 'nginx.log' }));
    writeFileSync(join(dir, 'shell.json'), JSON.stringify({ metadata: { name: 'shell' }, image: { image: BUSYBOX }, command: ['sh'], stdin: true, stdin_once: true, log_path: 'shell.log' }));
    ids.pod = (await crictl(['runp', join(dir, 'pod.json')])).stdout.trim();
    for (const name of ['box', 'web', 'shell'] as const) {
      ids[name] = (await crictl(['create', ids.pod, join(dir, `${name}.json`), join(dir, 'pod.json')])).stdout.trim();
      await crictl(['start', ids[name]]);
    }
    ids.podIp = (await crictlJson(runtime(), ['inspectp', ids.pod])).status.network.ip;
  });

  after(async () => {
    await rt?.stop();
  });

  it('gives the pod the first loopback IP of --pod-cidr, shown by crictl inspectp', () => {
    expect(ids.podIp).to.equal(podRange.replace('.0.0/16', '.0.2'));
  });

  it('serves nginx for real on the pod IP (port 80)', async () => {
    const page = await get(`http://${ids.podIp}/`);
    expect(page.status).to.equal(200);
    expect(page.body).to.contain('<title>Welcome to nginx!</title>');
  });

  for (const transport of TRANSPORTS) {
    describe(`--transport ${transport}`, () => {
      it('exec (no -s) prints the command output and succeeds', async () => {
        const res = await crictl(['exec', '--transport', transport, ids.box, 'sh', '-c', 'echo hello; echo oops >&2']);
        expect(res.stdout).to.equal('hello\n');
        expect(cleanStderr(res.stderr)).to.equal('oops');
      });

      it('exec reports a non-zero exit code as crictl does (exit 1, "command terminated with exit code N")', async () => {
        const res = await crictl(['exec', '--transport', transport, ids.box, 'sh', '-c', 'exit 3'], false);
        expect(res.code).to.equal(1);
        // cri-tools v1.34.0 cmd/crictl/exec.go wraps client-go's exit error.
        expect(res.stderr).to.contain(`execing command in container ${ids.box}: command terminated with exit code 3`);
      });

      it('exec -i passes piped stdin to the command and to an interactive sh', async () => {
        const cat = await crictlWithInput(runtime(), ['exec', '--transport', transport, '-i', ids.box, 'cat'], ['line 1\n', 'line 2\n']);
        expect(cat.code).to.equal(0);
        expect(cat.stdout).to.equal('line 1\nline 2\n');
        const sh = await crictlWithInput(runtime(), ['exec', '--transport', transport, '-i', ids.box, 'sh'], ['whoami\n', 'hostname\n']);
        expect(sh.stdout).to.equal('root\nweb\n');
      });

      it('port-forward carries an HTTP request to the pod\'s nginx', async () => {
        const bin = criToolPath('crictl') as string;
        const child = spawn(bin, ['--config', crictlConfigFile(runtime()), '-r', runtime().endpoint, 'port-forward', '--transport', transport, ids.pod, ':80'], { stdio: ['ignore', 'pipe', 'pipe'] });
        try {
          let out = '';
          child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c; });
          const port = await forwardedPort(() => out);
          for (let i = 0; i < 3; i++) {
            const page = await get(`http://127.0.0.1:${port}/`);
            expect(page.status).to.equal(200);
            expect(page.body).to.contain('Welcome to nginx!');
          }
          expect(out).to.contain(`Handling connection for ${port}`);
          // 100 connections at once: one stream pair each on the same connection.
          const pages = await Promise.all(Array.from({ length: 100 }, () => get(`http://127.0.0.1:${port}/`)));
          expect(pages.filter((p) => p.status === 200 && p.body.includes('Welcome to nginx!'))).to.have.length(100);
        } finally {
          child.kill('SIGKILL');
          await new Promise((r) => child.once('close', r));
        }
      });
    });
  }

  describe('through the fake kubelet (cri-winsim kubelet exec|port-forward)', () => {
    const kubelet = (args: string[], input?: string) => new Promise<Run>((resolve, reject) => {
      const rtm = runtime();
      const child = spawn(process.execPath, [cliPath, 'kubelet', '--container-runtime-endpoint', rtm.endpoint, '--root-dir', join(rtm.dir, 'kubelet'), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
      child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
      child.stdin.end(input ?? '');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('error', reject);
      child.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    });

    before(async () => {
      const file = join(runtime().dir, 'kpod.yaml');
      writeFileSync(file, 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: kweb\nspec:\n  containers:\n  - name: nginx\n    image: registry.k8s.io/e2e-test-images/nginx:1.14-2\n');
      const run = await kubelet(['--cluster', join(repoRoot, 'examples', 'cluster'), 'run', file]);
      expect(run.code, run.stderr).to.equal(0);
    });

    it('kubelet exec prints the output and exits with the command\'s code; -i passes stdin', async () => {
      const res = await kubelet(['exec', 'kweb', '--', 'sh', '-c', 'echo from kubelet; exit 4']);
      expect(res.stdout).to.equal('from kubelet\n');
      expect(res.code).to.equal(4);
      const cat = await kubelet(['exec', '-i', 'kweb', '-c', 'nginx', '--', 'cat'], 'piped\n');
      expect(cat.stdout).to.equal('piped\n');
      const missing = await kubelet(['exec', 'nope', '--', 'true']);
      expect(missing.stderr).to.equal('Error from server (NotFound): pods "nope" not found\n');
      expect(missing.code).to.equal(1);
    });

    it('kubelet port-forward carries HTTP to the pod', async () => {
      const rtm = runtime();
      const child = spawn(process.execPath, [cliPath, 'kubelet', '--container-runtime-endpoint', rtm.endpoint, '--root-dir', join(rtm.dir, 'kubelet'), 'port-forward', 'kweb', ':80'], { stdio: ['ignore', 'pipe', 'pipe'] });
      try {
        let out = '';
        child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c; });
        const port = await forwardedPort(() => out);
        const pages = await Promise.all([1, 2, 3].map(() => get(`http://127.0.0.1:${port}/`)));
        expect(pages.map((p) => p.status)).to.deep.equal([200, 200, 200]);
        expect(out).to.contain(`Handling connection for ${port}`);
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('close', r));
      }
    });
  });

  describe('then', () => {
    it('exec -it under a pseudo-terminal: echo, CRLF, the prompt, and the exit code', async function () {
      const res = await crictlWithInput(runtime(), ['exec', '-it', ids.box, 'sh'], ['', 'echo hi there\r', 'exit 5\r'], { pty: true, gapMs: 400 });
      expect(res.stdout).to.contain('/ # echo hi there\r\nhi there\r\n/ # exit 5\r\n');
      expect(res.code).to.equal(1);
    });

    it('attach: a line typed into the main sh runs there; closing stdin (stdin_once) ends the container', async () => {
      const res = await crictlWithInput(runtime(), ['attach', '-i', ids.shell], ['echo hello from attach\n'], { gapMs: 300 });
      expect(res.stdout).to.equal('hello from attach\n');
      expect(res.code).to.equal(0);
      const status = await crictlJson(runtime(), ['inspect', ids.shell]);
      expect(status.status.state).to.equal('CONTAINER_EXITED');
      expect(status.status.exitCode).to.equal(0);
    });

    it('host ports: bound on 127.0.0.1 and forwarded to the pod; a taken one fails RunPodSandbox; freed at stopp', async () => {
      const dir = runtime().dir;
      const hostPort = await freePort();
      const mapping = { protocol: 0, container_port: 80, host_port: hostPort, host_ip: '' };
      const pod = (n: string) => ({ metadata: { name: n, namespace: 'streaming', uid: `uid-${n}`, attempt: 0 }, log_directory: join(dir, n), port_mappings: [mapping] });
      writeFileSync(join(dir, 'hp1.json'), JSON.stringify(pod('hp1')));
      writeFileSync(join(dir, 'hp2.json'), JSON.stringify(pod('hp2')));
      const first = (await crictl(['runp', join(dir, 'hp1.json')])).stdout.trim();
      const ctr = (await crictl(['create', first, join(dir, 'web.json'), join(dir, 'hp1.json')])).stdout.trim();
      await crictl(['start', ctr]);
      const page = await get(`http://127.0.0.1:${hostPort}/`);
      expect(page.status).to.equal(200);
      const taken = await crictl(['runp', join(dir, 'hp2.json')], false);
      expect(taken.code).to.equal(1);
      expect(taken.stderr).to.contain(`plugin type=\\"portmap\\" failed (add): cannot open hostport ${hostPort} for pod hp2_streaming_uid-hp2_0: listen tcp4 127.0.0.1:${hostPort}: bind: address already in use`);
      expect((await crictl(['pods', '--name', 'hp2', '-q'])).stdout.trim()).to.equal('');
      await crictl(['stopp', first]);
      await crictl(['rmp', first]);
      const again = (await crictl(['runp', join(dir, 'hp2.json')])).stdout.trim();
      await crictl(['rmp', '-f', again]);
    });

    it('a Windows container: exec -i cmd answers from the container identity (runAsUserName, gMSA)', async () => {
      const dir = runtime().dir;
      writeFileSync(join(dir, 'win-pod.json'), JSON.stringify(windowsPodConfig('webapp', join(dir, 'win'), { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC, run_as_username: 'ContainerUser' })));
      writeFileSync(join(dir, 'win-ctr.json'), JSON.stringify(windowsContainerConfig('iis', IIS, { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC, run_as_username: 'ContainerUser' })));
      await crictl(['pull', IIS]);
      const pod = (await crictl(['runp', join(dir, 'win-pod.json')])).stdout.trim();
      const ctr = (await crictl(['create', pod, join(dir, 'win-ctr.json'), join(dir, 'win-pod.json')])).stdout.trim();
      await crictl(['start', ctr]);
      const res = await crictlWithInput(runtime(), ['exec', '-i', ctr, 'cmd'], ['whoami\r\n', 'echo %USERNAME%\r\n', 'nltest /parentdomain\r\n']);
      expect(res.stdout).to.contain('user manager\\containeruser');
      expect(res.stdout).to.contain('ContainerUser\r\n');
      expect(res.stdout).to.contain('contoso.com. (1)');
      // IIS serves its page and one showing the identity requests run under.
      const ip = (await crictlJson(runtime(), ['inspectp', pod])).status.network.ip;
      expect((await get(`http://${ip}/`)).body).to.contain('<title>IIS Windows Server</title>');
      const identity = await get(`http://${ip}/identity`);
      expect(identity.body).to.equal('User: User Manager\\ContainerUser\r\nNetwork identity: DEMO\\WebApplication1$\r\n');
      await crictl(['rmp', '-f', pod]);
    });

    it('after the pod is removed nothing of it is left: no listener on its IP, no extra socket', async () => {
      const before = socketsOf(runtime().pid);
      await crictl(['rmp', '-f', ids.pod]);
      // The runtime closes its end of crictl's connection when it reads crictl's exit, and the
      // pod's server when its process has ended; on a busy machine either can come a little after
      // crictl returns. A leaked listener or socket stays, so waiting for them cannot hide one.
      const refused = async (): Promise<boolean> => fetch(`http://${ids.podIp}/`, { signal: AbortSignal.timeout(5000) }).then(
        () => false,
        (err: Error) => /ECONNREFUSED/.test(String((err.cause as Error | undefined)?.message ?? err.message)),
      );
      await waitUntil('the pod IP to refuse connections', refused, 10_000, 100).catch(async (err: Error) => {
        throw new Error(`${err.message}; the pod IP still answers: ${(await crictl(['pods', '-v'])).stdout}`);
      });
      await waitUntil(`the runtime to hold at most the ${before} sockets it held before`, () => socketsOf(runtime().pid) <= before, 10_000, 100)
        .catch(() => undefined);
      expect(socketsOf(runtime().pid)).to.be.at.most(before);
    });
  });
});
