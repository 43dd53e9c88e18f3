// The real crictl (cri-tools v1.34.0, built by scripts/install-tools.mjs) drives a running
// `cri-winsim runtime` through a whole pod and container lifecycle. Every assertion is on what
// crictl prints or its exit code, as a user would see it.
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { crictlJson, runCrictl, type CrictlResult } from '../support/crictl.js';
import { requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
/** An image the tests pull and remove (critest's tagged test image). */
const TAGGED = 'gcr.io/k8s-staging-cri-tools/test-image-tag:test';

/** Polls `probe` until it returns a value or `ms` pass (crictl has no "wait" command). */
async function eventually<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (let attempt = 0; attempt < 1000 && Date.now() < deadline; attempt++) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `; last error: ${String(last)}` : ''}`);
}

/** crictl inspect/inspectp print times as RFC 3339 strings; a real one is within the last hour. */
function isRecent(time: unknown): boolean {
  const t = typeof time === 'string' ? Date.parse(time) : NaN;
  return Number.isFinite(t) && Math.abs(Date.now() - t) < 3_600_000;
}

function lines(res: CrictlResult): string[] {
  return res.stdout.split('\n').map((l) => l.trim()).filter((l) => l.length > 0);
}

describe('crictl against cri-winsim runtime', function () {
  this.timeout(30_000);
  let rt: RuntimeHandle | undefined;
  let dir = '';
  const files = { podJson: '', podYaml: '', worker: '', greeter: '', ticker: '' };
  const ids = { podJson: '', podYaml: '', worker: '', greeter: '', ticker: '' };

  /** The runtime, or a clear failure when an earlier step could not start it. */
  const runtime = (): RuntimeHandle => {
    if (!rt) throw new Error('the runtime is not running (see the before all hook)');
    return rt;
  };
  const crictl = (args: string[], opts?: Parameters<typeof runCrictl>[2]) => runCrictl(runtime(), args, opts);
  const need = (id: string, what: string): string => {
    if (!id) throw new Error(`${what} was not created by an earlier test`);
    return id;
  };

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime({ name: 'crictl-e2e' });
    dir = rt.dir;
    const podLogs = { json: join(dir, 'pod-logs', 'json'), yaml: join(dir, 'pod-logs', 'yaml') };
    // The kubelet creates the pod log directory before RunPodSandbox; so do we.
    for (const d of Object.values(podLogs)) mkdirSync(d, { recursive: true });

    const podJson = {
      metadata: { name: 'crictl-e2e-json', namespace: 'e2e-json', uid: 'crictl-e2e-uid-json', attempt: 1 },
      log_directory: podLogs.json,
      labels: { suite: 'crictl-e2e', format: 'json' },
      annotations: { 'e2e.cri-winsim/purpose': 'json config' },
      linux: {},
    };
    const podYaml = {
      metadata: { name: 'crictl-e2e-yaml', namespace: 'e2e-yaml', uid: 'crictl-e2e-uid-yaml', attempt: 0 },
      log_directory: podLogs.yaml,
      labels: { suite: 'crictl-e2e', format: 'yaml' },
      linux: {},
    };
    const container = (name: string, command: string[], labels: Record<string, string>) => ({
      metadata: { name },
      image: { image: BUSYBOX },
      command,
      log_path: `${name}.log`,
      labels: { suite: 'crictl-e2e', ...labels },
    });
    files.podJson = join(dir, 'pod.json');
    files.podYaml = join(dir, 'pod.yaml');
    files.worker = join(dir, 'worker.json');
    files.greeter = join(dir, 'greeter.yaml');
    files.ticker = join(dir, 'ticker.json');
    writeFileSync(files.podJson, JSON.stringify(podJson, null, 2));
    writeFileSync(files.podYaml, toYaml(podYaml));
    writeFileSync(files.worker, JSON.stringify(container('worker', ['sleep', '3600'], { role: 'worker' })));
    writeFileSync(files.greeter, toYaml(container('greeter', ['echo', 'hello from crictl e2e'], { role: 'greeter' })));
    writeFileSync(files.ticker, JSON.stringify(container('ticker', ['sh', '-c', 'while true; do echo tick; sleep 1; done'], { role: 'ticker' })));
  });

  after(async () => {
    await rt?.stop();
  });

  describe('runtime and images', () => {
    it('crictl version reports the runtime name and CRI API v1', async () => {
      const out = (await crictl(['version'])).stdout;
      expect(out).to.match(/^Version:\s+\S+/m);
      expect(out).to.match(/^RuntimeName:\s+\S+/m);
      expect(out).to.match(/^RuntimeVersion:\s+\S+/m);
      expect(out).to.match(/^RuntimeApiVersion:\s+v1\s*$/m);
    });

    it('crictl info reports RuntimeReady and NetworkReady true', async () => {
      const info = await crictlJson(runtime(), ['info']);
      const conditions: Array<{ type: string; status: boolean }> = info.status?.conditions ?? [];
      expect(conditions.find((c) => c.type === 'RuntimeReady')?.status, JSON.stringify(conditions)).to.equal(true);
      expect(conditions.find((c) => c.type === 'NetworkReady')?.status, JSON.stringify(conditions)).to.equal(true);
    });

    it('crictl pull pulls a known image and reports its reference', async () => {
      const res = await crictl(['pull', TAGGED]);
      expect(res.stdout).to.match(/^Image is up to date for \S+/m);
      await crictl(['pull', BUSYBOX]);
    });

    it('crictl pull of an image the registry does not have fails with a message naming it', async () => {
      // A tag the catalogue's repository does not have (a repository nobody described would pull
      // as an image of the node's build: docs/images.md).
      const ref = 'mcr.microsoft.com/windows/nanoserver:no-such-image';
      const res = await crictl(['pull', ref], { check: false });
      expect(res.code).to.not.equal(0);
      expect(res.stderr).to.contain('no-such-image');
    });

    it('crictl images lists the pulled images (table, -q and JSON)', async () => {
      const table = (await crictl(['images'])).stdout;
      expect(table).to.match(/^IMAGE\s+TAG\s+IMAGE ID\s+SIZE/m);
      expect(table).to.match(/gcr\.io\/k8s-staging-cri-tools\/test-image-tag\s+test\s+\S+/);
      expect(table).to.match(/registry\.k8s\.io\/e2e-test-images\/busybox\s+1\.29-2\s+\S+/);
      const json = await crictlJson(runtime(), ['images', '-o', 'json']);
      const tags = (json.images as Array<{ repoTags: string[] }>).flatMap((i) => i.repoTags);
      expect(tags).to.include.members([TAGGED, BUSYBOX]);
      const quiet = lines(await crictl(['images', '-q']));
      expect(quiet.length).to.equal((json.images as unknown[]).length);
    });

    it('crictl inspecti shows the image by tag and by id', async () => {
      const byTag = await crictlJson(runtime(), ['inspecti', TAGGED]);
      expect(byTag.status.repoTags).to.include(TAGGED);
      expect(byTag.status.id).to.be.a('string').and.not.equal('');
      expect(Number(byTag.status.size)).to.be.greaterThan(0);
      const byId = await crictlJson(runtime(), ['inspecti', byTag.status.id]);
      expect(byId.status.id).to.equal(byTag.status.id);
    });

    it('crictl imagefsinfo reports the image filesystem', async () => {
      const info = await crictlJson(runtime(), ['imagefsinfo']);
      const fs = info.status?.imageFilesystems?.[0];
      expect(fs, JSON.stringify(info)).to.be.an('object');
      expect(fs.fsId.mountpoint).to.be.a('string').and.not.equal('');
      expect(Number(fs.timestamp)).to.be.greaterThan(0);
    });
  });

  describe('pod sandboxes', () => {
    it('crictl runp starts a sandbox from a JSON config', async () => {
      const out = lines(await crictl(['runp', files.podJson], { callTimeout: '20s' }));
      expect(out).to.have.length(1);
      ids.podJson = out[0];
      expect(ids.podJson).to.match(/^[0-9a-zA-Z-]+$/);
    });

    it('crictl runp starts a sandbox from a YAML config', async () => {
      const out = lines(await crictl(['runp', files.podYaml], { callTimeout: '20s' }));
      expect(out).to.have.length(1);
      ids.podYaml = out[0];
      expect(ids.podYaml).to.not.equal(ids.podJson);
    });

    it('crictl pods lists both and filters by name, namespace, label, state and id', async () => {
      const json = need(ids.podJson, 'the JSON pod');
      const yaml = need(ids.podYaml, 'the YAML pod');
      expect(lines(await crictl(['pods', '-q']))).to.include.members([json, yaml]);
      expect(lines(await crictl(['pods', '-q', '--name', 'crictl-e2e-json']))).to.deep.equal([json]);
      expect(lines(await crictl(['pods', '-q', '--namespace', 'e2e-yaml']))).to.deep.equal([yaml]);
      expect(lines(await crictl(['pods', '-q', '--label', 'format=yaml']))).to.deep.equal([yaml]);
      expect(lines(await crictl(['pods', '-q', '--label', 'suite=crictl-e2e'])).sort()).to.deep.equal([json, yaml].sort());
      expect(lines(await crictl(['pods', '-q', '--state', 'ready']))).to.include.members([json, yaml]);
      expect(lines(await crictl(['pods', '-q', '--state', 'notready']))).to.not.include.members([json]);
      expect(lines(await crictl(['pods', '-q', '--id', json]))).to.deep.equal([json]);
      const table = (await crictl(['pods', '--name', 'crictl-e2e-yaml'])).stdout;
      expect(table).to.match(/POD ID\s+CREATED\s+STATE\s+NAME\s+NAMESPACE\s+ATTEMPT/);
      expect(table).to.match(/Ready\s+crictl-e2e-yaml\s+e2e-yaml\s+0/);
      const listed = await crictlJson(runtime(), ['pods', '-o', 'json', '--name', 'crictl-e2e-json']);
      expect(listed.items).to.have.length(1);
      expect(listed.items[0]).to.deep.include({ id: json, state: 'SANDBOX_READY' });
      expect(listed.items[0].metadata).to.deep.include({ name: 'crictl-e2e-json', namespace: 'e2e-json', uid: 'crictl-e2e-uid-json', attempt: 1 });
    });

    it('crictl inspectp shows the sandbox status', async () => {
      const json = need(ids.podJson, 'the JSON pod');
      const status = (await crictlJson(runtime(), ['inspectp', json])).status;
      expect(status.id).to.equal(json);
      expect(status.state).to.equal('SANDBOX_READY');
      expect(status.metadata).to.deep.include({ name: 'crictl-e2e-json', namespace: 'e2e-json', uid: 'crictl-e2e-uid-json' });
      expect(status.labels).to.deep.include({ suite: 'crictl-e2e', format: 'json' });
      expect(status.annotations).to.deep.include({ 'e2e.cri-winsim/purpose': 'json config' });
      expect(isRecent(status.createdAt), `createdAt ${status.createdAt}`).to.equal(true);
    });
  });

  describe('containers', () => {
    it('crictl create creates containers from JSON and YAML configs', async () => {
      const pod = need(ids.podJson, 'the JSON pod');
      for (const name of ['worker', 'greeter', 'ticker'] as const) {
        const out = lines(await crictl(['create', pod, files[name], files.podJson]));
        expect(out, `create ${name}`).to.have.length(1);
        ids[name] = out[0];
      }
      expect(new Set([ids.worker, ids.greeter, ids.ticker]).size).to.equal(3);
      const created = await crictlJson(runtime(), ['inspect', ids.worker]);
      expect(created.status.state).to.equal('CONTAINER_CREATED');
    });

    it('crictl start starts them', async () => {
      for (const name of ['worker', 'greeter', 'ticker'] as const) {
        const id = need(ids[name], name);
        expect(lines(await crictl(['start', id]))).to.deep.equal([id]);
      }
    });

    it('crictl ps lists running containers and, with -a, exited ones; filters work', async () => {
      const worker = need(ids.worker, 'worker');
      const greeter = need(ids.greeter, 'greeter');
      const ticker = need(ids.ticker, 'ticker');
      // `echo` exits by itself; wait until the runtime reports it.
      await eventually('greeter to exit', 10_000, async () =>
        lines(await crictl(['ps', '-a', '-q', '--state', 'exited'])).includes(greeter) ? true : undefined);
      const running = lines(await crictl(['ps', '-q']));
      expect(running).to.include.members([worker, ticker]);
      expect(running).to.not.include(greeter);
      expect(lines(await crictl(['ps', '-a', '-q']))).to.include.members([worker, greeter, ticker]);
      expect(lines(await crictl(['ps', '-q', '--name', '^worker$']))).to.deep.equal([worker]);
      expect(lines(await crictl(['ps', '-a', '-q', '--label', 'role=greeter']))).to.deep.equal([greeter]);
      expect(lines(await crictl(['ps', '-a', '-q', '--pod', need(ids.podJson, 'pod')])).sort()).to.deep.equal([worker, greeter, ticker].sort());
      expect(lines(await crictl(['ps', '-a', '-q', '--pod', need(ids.podYaml, 'pod')]))).to.deep.equal([]);
      expect(lines(await crictl(['ps', '-q', '--state', 'running']))).to.include.members([worker, ticker]);
      const table = (await crictl(['ps', '--name', '^worker$'])).stdout;
      expect(table).to.match(/CONTAINER\s+IMAGE\s+CREATED\s+STATE\s+NAME\s+ATTEMPT\s+POD ID\s+POD/);
      expect(table).to.match(/Running\s+worker\s+0\s+/);
      const json = await crictlJson(runtime(), ['ps', '-a', '-o', 'json', '--label', 'role=greeter']);
      expect(json.containers).to.have.length(1);
      expect(json.containers[0]).to.deep.include({ id: greeter, state: 'CONTAINER_EXITED', podSandboxId: ids.podJson });
    });

    it('crictl inspect shows the container status with an absolute log path', async () => {
      const worker = need(ids.worker, 'worker');
      const status = (await crictlJson(runtime(), ['inspect', worker])).status;
      expect(status.id).to.equal(worker);
      expect(status.state).to.equal('CONTAINER_RUNNING');
      expect(status.metadata.name).to.equal('worker');
      expect(status.image.image).to.be.a('string').and.not.equal('');
      expect(status.imageRef).to.be.a('string').and.not.equal('');
      expect(isAbsolute(status.logPath), status.logPath).to.equal(true);
      expect(status.logPath.endsWith('worker.log')).to.equal(true);
      expect(isRecent(status.startedAt), `startedAt ${status.startedAt}`).to.equal(true);
      const greeter = (await crictlJson(runtime(), ['inspect', need(ids.greeter, 'greeter')])).status;
      expect(greeter.state).to.equal('CONTAINER_EXITED');
      expect(greeter.exitCode).to.equal(0);
    });

    it('crictl logs prints what the container wrote', async () => {
      const greeter = need(ids.greeter, 'greeter');
      const out = (await crictl(['logs', greeter])).stdout;
      expect(out).to.equal('hello from crictl e2e\n');
      const stamped = (await crictl(['logs', '--timestamps', greeter])).stdout;
      expect(stamped).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) hello from crictl e2e\n$/);
    });

    it('crictl logs -f follows a running container and ends when it stops', async function () {
      this.timeout(40_000);
      const ticker = need(ids.ticker, 'ticker');
      let seen = '';
      let stopRequested: Promise<CrictlResult> | undefined;
      let stopTime = 0;
      const follow = crictl(['logs', '-f', ticker], {
        killAfterMs: 25_000,
        onStdout: (chunk) => {
          seen += chunk;
          // Once two ticks arrived through the follower, stop the container from another crictl.
          if (!stopRequested && (seen.match(/tick/g) ?? []).length >= 2) {
            stopTime = Date.now();
            stopRequested = crictl(['stop', '--timeout', '1', ticker]);
          }
        },
      });
      const res = await follow;
      expect(res.timedOut, 'crictl logs -f kept running after the container stopped').to.equal(false);
      expect(stopRequested, `crictl logs -f printed too little: ${JSON.stringify(seen)}`).to.not.equal(undefined);
      await stopRequested;
      // crictl polls the container status once a second; allow a few polls, the 1 s stop timeout
      // and two crictl processes (the stop, and the follower's exit) on a busy machine, where one
      // start of crictl can take seconds.
      expect(Date.now() - stopTime).to.be.lessThan(15_000);
      expect(res.stdout.split('\n').filter((l) => l === 'tick').length).to.be.greaterThanOrEqual(2);
    });

    it('crictl exec -s runs a command and returns its output and exit code', async () => {
      const worker = need(ids.worker, 'worker');
      // crictl prints the command's stdout and then its stderr, each with Println.
      expect((await crictl(['exec', '-s', worker, 'echo', 'hello', 'exec'])).stdout).to.equal('hello exec\n\n\n');
      // A non-zero exit code makes crictl fail: its CRI client turns it into an error naming the code.
      const failed = await crictl(['exec', '-s', worker, 'sh', '-c', 'echo oops >&2; exit 3'], { check: false });
      expect(failed.code).to.equal(1);
      expect(failed.stderr).to.contain("command 'sh -c echo oops >&2; exit 3' exited with 3: oops");
      expect((await crictl(['exec', '-s', worker, 'sh', '-c', 'exit 0'], { check: false })).code).to.equal(0);
      const stopped = await crictl(['exec', '-s', need(ids.greeter, 'greeter'), 'echo', 'nope'], { check: false });
      expect(stopped.code, 'exec in an exited container must fail').to.not.equal(0);
    });

    it('crictl stats reports the running container', async () => {
      const worker = need(ids.worker, 'worker');
      const json = await crictlJson(runtime(), ['stats', '-o', 'json', '--id', worker]);
      expect(json.stats).to.have.length(1);
      expect(json.stats[0].attributes.id).to.equal(worker);
      expect(json.stats[0].attributes.metadata.name).to.equal('worker');
      expect(Number(json.stats[0].cpu.timestamp)).to.be.greaterThan(0);
      const table = (await crictl(['stats', '--id', worker])).stdout;
      expect(table).to.match(/CONTAINER\s+NAME\s+CPU %\s+MEM\s+DISK\s+INODES/);
      expect(table).to.match(/\bworker\b/);
    });

    it('crictl stop stops a running container', async () => {
      const worker = need(ids.worker, 'worker');
      expect(lines(await crictl(['stop', '--timeout', '2', worker]))).to.deep.equal([worker]);
      const status = (await crictlJson(runtime(), ['inspect', worker])).status;
      expect(status.state).to.equal('CONTAINER_EXITED');
      expect(isRecent(status.finishedAt), `finishedAt ${status.finishedAt}`).to.equal(true);
      expect(lines(await crictl(['ps', '-q']))).to.not.include(worker);
    });

    it('crictl rm removes containers, and inspect then fails', async () => {
      const worker = need(ids.worker, 'worker');
      expect(lines(await crictl(['rm', worker]))).to.deep.equal([worker]);
      expect(lines(await crictl(['ps', '-a', '-q']))).to.not.include(worker);
      const gone = await crictl(['inspect', worker], { check: false });
      expect(gone.code).to.not.equal(0);
    });
  });

  describe('teardown', () => {
    it('crictl stopp stops the sandbox and its containers', async () => {
      const pod = need(ids.podJson, 'the JSON pod');
      expect(lines(await crictl(['stopp', pod]))).to.deep.equal([`Stopped sandbox ${pod}`]);
      expect((await crictlJson(runtime(), ['inspectp', pod])).status.state).to.equal('SANDBOX_NOTREADY');
      expect(lines(await crictl(['ps', '-q', '--pod', pod]))).to.deep.equal([]);
      expect(lines(await crictl(['pods', '-q', '--state', 'notready']))).to.include(pod);
    });

    it('crictl rmp removes sandboxes with their containers', async () => {
      const json = need(ids.podJson, 'the JSON pod');
      const yaml = need(ids.podYaml, 'the YAML pod');
      expect(lines(await crictl(['rmp', json]))).to.deep.equal([`Removed sandbox ${json}`]);
      // A ready sandbox needs --force: crictl stops it first.
      expect(lines(await crictl(['rmp', '--force', yaml]))).to.deep.equal([`Stopped sandbox ${yaml}`, `Removed sandbox ${yaml}`]);
      const left = lines(await crictl(['pods', '-q']));
      expect(left).to.not.include.members([json]);
      expect(left).to.not.include.members([yaml]);
      expect(lines(await crictl(['ps', '-a', '-q', '--pod', json]))).to.deep.equal([]);
    });

    it('crictl rmi removes an image', async () => {
      const out = lines(await crictl(['rmi', TAGGED]));
      expect(out).to.include(`Deleted: ${TAGGED}`);
      const json = await crictlJson(runtime(), ['images', '-o', 'json']);
      const tags = (json.images as Array<{ repoTags: string[] }>).flatMap((i) => i.repoTags);
      expect(tags).to.not.include(TAGGED);
      expect(tags).to.include(BUSYBOX);
    });

    it('the runtime exits cleanly on SIGTERM and removes its socket', async () => {
      const exit = await runtime().stop();
      expect(exit.killed, 'needed SIGKILL').to.equal(false);
      expect(exit.code).to.equal(0);
      expect(exit.socketLeft, 'socket file left behind').to.equal(false);
    });
  });
});
