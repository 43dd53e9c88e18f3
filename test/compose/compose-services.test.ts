// The compose topology as local processes: each service's argv is taken from docker-compose.yml
// (entrypoint from the Dockerfile stage it builds, unless the service sets one), only the socket
// path and the state/volume directories are replaced by temporary ones, and the services run in
// compose order — runtime (until its ready line), its healthcheck, kubelet, crictl, tests — so the
// compose file and what the suite proves cannot drift apart. At the end the runtime is stopped
// and nothing may be left: no process, no socket, no temp dir.
import { expect } from 'chai';
import { processRunning, runProcess, type ProcessResult } from '../support/process.js';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { runCrictl } from '../support/crictl.js';
import { repoRoot, requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import {
  flagValue,
  loadComposeFile,
  serviceArgv,
  startOrder,
  volumeMounts,
  withoutFlags,
  type ComposeFile,
} from './compose-file.js';
import { oneWorkerAtATime } from '../support/one-worker-at-a-time.js';

/** How long one client service (kubelet, crictl) may run. */
const SERVICE_TIMEOUT_MS = 60_000;
/** The tests service runs critest's selected specs (about 10 s here). */
const CRITEST_TIMEOUT_MS = 6 * 60_000;

/** Runs argv to completion (killed after timeoutMs), collecting its output. */
function runArgv(argv: readonly string[], cwd: string, timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<ProcessResult> {
  const [program, ...args] = argv;
  return runProcess(program!, args, { cwd, env: { ...process.env, ...env }, killAfterMs: timeoutMs });
}

function describeResult(r: ProcessResult): string {
  const how = r.timedOut ? 'was killed (time limit)' : `exited ${r.code ?? r.signal}`;
  const tail = (t: string) => t.trim().split('\n').slice(-60).join('\n') || '(empty)';
  return `\`${r.command}\` ${how}\nstdout: ${tail(r.stdout)}\nstderr: ${tail(r.stderr)}`;
}

/**
 * Where the compose paths live locally: each named volume of a service becomes a directory
 * (the socket volume is the runtime's temp dir, which holds `cri.sock`), and the image's
 * working directory is the repository.
 */
class LocalTopology {
  constructor(
    private readonly file: ComposeFile,
    private readonly rt: RuntimeHandle,
    private readonly socketVolume: string,
  ) {}

  volumeDir(volume: string): string {
    if (volume === this.socketVolume) return this.rt.dir;
    const dir = join(this.rt.dir, 'volumes', volume);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** A service's argv with its volume paths (and so the socket) moved to the local directories. */
  rewrite(service: string): { argv: string[]; rewritten: string[] } {
    const { argv } = serviceArgv(this.file, service);
    const mounts = volumeMounts(this.file.services[service]!).filter((m) => m.volume !== undefined);
    const rewritten: string[] = [];
    const out = argv.map((arg) => {
      for (const m of mounts) {
        const prefix = m.target.endsWith('/') ? m.target : `${m.target}/`;
        for (const lead of ['unix://', '']) {
          if (arg === `${lead}${m.target}` || arg.startsWith(`${lead}${prefix}`)) {
            const local = `${lead}${this.volumeDir(m.volume!)}${arg.slice(lead.length + m.target.length)}`;
            rewritten.push(`${arg} -> ${local}`);
            return local;
          }
        }
      }
      return arg;
    });
    return { argv: out, rewritten };
  }

  /** The service's `environment`, with values on its volumes moved like the argv. */
  environment(service: string): NodeJS.ProcessEnv {
    const declared = this.file.services[service]!.environment ?? {};
    const pairs = Array.isArray(declared)
      ? declared.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] as const)
      : Object.entries(declared);
    const mounts = volumeMounts(this.file.services[service]!).filter((m) => m.volume !== undefined);
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of pairs) {
      const mount = mounts.find((m) => value === m.target || value.startsWith(`${m.target}/`));
      env[key] = mount === undefined ? value : `${this.volumeDir(mount.volume!)}${value.slice(mount.target.length)}`;
    }
    return env;
  }

  /** `node` is this Node; relative paths are relative to the image's WORKDIR, i.e. the repository. */
  localProgram(argv: string[]): string[] {
    const [program, ...rest] = argv;
    return [program === 'node' ? process.execPath : program!, ...rest];
  }
}

/** The container and pod names in the pod files a kubelet argv names. */
function podFileNames(argv: readonly string[]): { pods: string[]; containers: string[] } {
  const files = argv.filter((a) => /\.ya?ml$/.test(a));
  const pods: string[] = [];
  const containers: string[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8'))) {
      const pod = doc.toJS() as { metadata?: { name?: string }; spec?: { containers?: Array<{ name: string }> } } | null;
      if (pod?.metadata?.name) pods.push(pod.metadata.name);
      for (const c of pod?.spec?.containers ?? []) containers.push(c.name);
    }
  }
  return { pods, containers };
}

/**
 * Every absolute path a client service names must be on one of its volumes (so, rewritten into
 * the runtime's temp dir here): a path elsewhere would not be shared between the containers, and
 * run locally it would touch this machine.
 */
function expectOnlyLocalPaths(argv: readonly string[], dir: string): void {
  for (const arg of argv.slice(1)) {
    const path = arg.startsWith('unix://') ? arg.slice('unix://'.length) : arg;
    if (isAbsolute(path)) expect(path.startsWith(`${dir}/`), `${arg} is not on a volume of the service`).to.equal(true);
  }
}

describe('compose services as local processes', function () {
  // The compose file's runtime uses the program's default pod range.
  oneWorkerAtATime('default-addresses');
  this.timeout(CRITEST_TIMEOUT_MS + 60_000);
  const file = loadComposeFile();
  let rt: RuntimeHandle | undefined;
  let topology: LocalTopology | undefined;
  let kubeletRan = false;

  const runtime = (): RuntimeHandle => {
    if (rt === undefined) throw new Error('the runtime service is not running (see the first test)');
    return rt;
  };
  const local = (): LocalTopology => {
    if (topology === undefined) throw new Error('the runtime service is not running (see the first test)');
    return topology;
  };

  after(async () => {
    // Only reached with a runtime still up when a test failed before the stop test.
    await rt?.stop();
  });

  it('runs the services in compose order: runtime, kubelet, crictl, tests', function () {
    expect(startOrder(file)).to.deep.equal(['runtime', 'kubelet', 'crictl', 'tests']);
  });

  it('runtime: starts with the compose command and logs its ready line', async function () {
    const { argv } = serviceArgv(file, 'runtime');
    const listen = flagValue(argv, '--listen');
    expect(listen, 'runtime --listen').to.be.a('string');
    const socketPath = listen!.slice('unix://'.length);
    const socketVolume = volumeMounts(file.services.runtime!).find((m) => m.target === dirname(socketPath))?.volume;
    expect(socketVolume, `a named volume mounted at ${dirname(socketPath)}`).to.be.a('string');
    // startRuntime puts the socket at <temp dir>/cri.sock: the same file name as in compose.
    expect(basename(socketPath)).to.equal('cri.sock');

    // The runtime's own endpoint and state dir are the only things replaced; startRuntime
    // supplies temporary ones. The entrypoint (dist/src/cli.js, node and its flags on its #! line) runs from the
    // repository.
    const runtimeIndex = argv.indexOf('runtime');
    expect(runtimeIndex, 'the runtime subcommand in the argv').to.be.greaterThan(0);
    const fromRepository = (a: string): string => (!a.startsWith('-') && !isAbsolute(a) && existsSync(join(repoRoot, a)) ? join(repoRoot, a) : a);
    const entrypoint = argv.slice(0, runtimeIndex).map((a, i) => (i === 0 && a === 'node' ? process.execPath : fromRepository(a)));
    const args = withoutFlags(argv.slice(runtimeIndex + 1), '--listen', '--state-dir').map(fromRepository);
    rt = await startRuntime({ name: 'compose-runtime', command: entrypoint, args });
    topology = new LocalTopology(file, rt, socketVolume!);
    expect(rt.running()).to.equal(true);
    expect(existsSync(rt.socketPath), rt.socketPath).to.equal(true);
  });

  it('runtime: its healthcheck command succeeds against the socket', async function () {
    const test = file.services.runtime!.healthcheck?.test as string[];
    expect(test.slice(0, 3)).to.deep.equal(['CMD', 'node', 'dist/src/healthcheck.js']);
    // The compose socket is the runtime's; node and the script run from the repository.
    const endpoint = test[3];
    expect(endpoint).to.equal('unix:///run/cri-winsim/cri.sock');
    const res = await runArgv([process.execPath, join(repoRoot, test[2]!), runtime().endpoint], repoRoot, SERVICE_TIMEOUT_MS);
    expect(res.code, describeResult(res)).to.equal(0);
    expect(res.stdout).to.match(/^\S+ \S+\n$/);
  });

  it('runtime: the healthcheck fails while nothing listens on the socket', async function () {
    const test = file.services.runtime!.healthcheck?.test as string[];
    const missing = `unix://${join(runtime().dir, 'no-such.sock')}`;
    const res = await runArgv([process.execPath, join(repoRoot, test[2]!), missing], repoRoot, SERVICE_TIMEOUT_MS);
    expect(res.code, describeResult(res)).to.equal(1);
    expect(res.stderr).to.match(/^cri-winsim healthcheck: 14 UNAVAILABLE: .*no-such\.sock/);
  });

  it('kubelet: runs the examples named in its compose command against the runtime', async function () {
    const { argv, rewritten } = local().rewrite('kubelet');
    expect(rewritten.join('\n'), 'the socket is rewritten').to.include(`unix:///run/cri-winsim/cri.sock -> ${runtime().endpoint}`);
    expectOnlyLocalPaths(argv, runtime().dir);
    const res = await runArgv(local().localProgram(argv), repoRoot, SERVICE_TIMEOUT_MS);
    expect(res.timedOut, describeResult(res)).to.equal(false);
    expect(res.code, describeResult(res)).to.equal(0);
    kubeletRan = true;
  });

  it('crictl: its compose command lists the containers the kubelet created', async function () {
    requireCriTool(this, 'crictl');
    if (!kubeletRan) throw new Error('the kubelet service did not complete (see the test before); crictl depends on it');
    const { argv } = serviceArgv(file, 'crictl');
    expect(argv[0]).to.equal('crictl');
    const args = withoutFlags(argv.slice(1), '--runtime-endpoint', '-r', '--image-endpoint', '-i');
    const res = await runCrictl(runtime(), args);
    const { pods, containers } = podFileNames(serviceArgv(file, 'kubelet').argv);
    expect(containers.length, 'containers in the kubelet pod files').to.be.greaterThan(0);
    for (const name of [...containers, ...pods]) expect(res.stdout, `crictl ${args.join(' ')}`).to.include(name);
  });

  it('tests: its command runs critest against the same runtime, after the kubelet and crictl', async function () {
    requireCriTool(this, 'critest');
    const { argv, rewritten } = local().rewrite('tests');
    expect(rewritten.join('\n'), 'the socket is rewritten').to.include(`unix:///run/cri-winsim/cri.sock -> ${runtime().endpoint}`);
    expectOnlyLocalPaths(argv, runtime().dir);
    expect(flagValue(argv, '--runtime-endpoint')).to.equal(runtime().endpoint);
    const env = local().environment('tests');
    const res = await runArgv(local().localProgram(argv), repoRoot, CRITEST_TIMEOUT_MS, env);
    expect(res.timedOut, describeResult(res)).to.equal(false);
    expect(res.code, describeResult(res)).to.equal(0);
    // ginkgo's summary: every selected spec ran and passed.
    expect(res.stdout).to.match(/Ran \d+ of \d+ Specs/);
    expect(res.stdout).to.match(/SUCCESS!/);
  });

  it('stops the runtime and leaves nothing behind', async function () {
    const handle = runtime();
    const pid = handle.pid;
    const exit = await handle.stop();
    rt = undefined;
    expect(exit.killed, `the runtime needed SIGKILL; output:\n${handle.output()}`).to.equal(false);
    expect(exit.code, `runtime exit; output:\n${handle.output()}`).to.equal(0);
    expect(exit.socketLeft, 'socket file left after exit').to.equal(false);
    expect(processRunning(pid), `runtime pid ${pid} still alive`).to.equal(false);
    expect(existsSync(handle.dir), handle.dir).to.equal(false);
  });
});
