// The command line as a kubectl and kubelet user meets it: the built CLI spawned as a user runs
// it, against a real runtime (test/support/runtime.ts). Upstream texts pinned here: pflag's
// "invalid argument" and deprecation lines (spf13/pflag v1.0.10), Go's time.ParseDuration errors
// (Go 1.26), kubectl's printer, selector, logs and exec texts (k8s.io/kubectl, cli-runtime,
// apimachinery v0.34.12). The one-line runtime errors and the usage exit code 2 are our own
// (docs/cli.md).
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliPath, repoRoot } from '../support/paths.js';
import { runProcess } from '../support/process.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { runKubelet } from './support/kubelet-cli.js';

const examples = join(repoRoot, 'examples');
const cluster = join(examples, 'cluster');
const pods = (name: string) => join(examples, 'pods', name);
const cli = (args: readonly string[]) => runProcess(process.execPath, [cliPath, ...args], { killAfterMs: 45_000 });

describe('cri-winsim command line: usage errors exit 2 and name the flag', function () {
  this.timeout(60_000);
  const endpoint = 'unix:///nonexistent-cri-winsim-dir/cri.sock';

  const cases: { args: string[]; stderr: string }[] = [
    {
      args: ['kubelet', 'get', '--runtime-request-timeout', '30'],
      stderr: 'error: invalid argument "30" for "--runtime-request-timeout" flag: time: missing unit in duration "30"\nSee \'cri-winsim kubelet get --help\' for usage.\n',
    },
    {
      args: ['kubelet', 'run', pods('run-as-username-pod.yaml'), '--cluster', cluster, '--wait-ready', '--timeout', '1d'],
      stderr: 'error: invalid argument "1d" for "--timeout" flag: time: unknown unit "d" in duration "1d"\nSee \'cri-winsim kubelet run --help\' for usage.\n',
    },
    {
      args: ['kubelet', 'get', '-o', 'xyz'],
      stderr: 'error: unable to match a printer suitable for the output format "xyz", allowed formats are: custom-columns,json,jsonpath,name,wide,yaml\nSee \'cri-winsim kubelet get --help\' for usage.\n',
    },
    {
      args: ['kubelet', 'get', '-l', 'app in (web'],
      stderr: "error: unable to parse requirement: found '', expected: ',' or ')'\nSee 'cri-winsim kubelet get --help' for usage.\n",
    },
    {
      args: ['kubelet', 'get', '-o', 'jsonpath={.items[*].metadata.name'],
      stderr: "error: error parsing jsonpath {.items[*].metadata.name, unclosed action\nSee 'cri-winsim kubelet get --help' for usage.\n",
    },
    {
      args: ['kubelet', 'exec', 'web', 'whoami'],
      stderr: "error: exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead\nSee 'cri-winsim kubelet exec --help' for usage.\n",
    },
    { args: ['completion', 'fish'], stderr: 'error: Unsupported shell type "fish".\nSee \'cri-winsim completion --help\' for usage.\n' },
    { args: ['kubelet', 'get', '--bogus'], stderr: "error: unknown option '--bogus'\nSee 'cri-winsim kubelet get --help' for usage.\n" },
  ];
  for (const c of cases) {
    it(`${c.args.slice(0, 4).join(' ')} …: exit 2, ${c.stderr.split('\n')[0]}`, async () => {
      const r = await cli(c.args[0] === 'kubelet' ? [...c.args, '--container-runtime-endpoint', endpoint] : c.args);
      expect(r.stdout).to.equal('');
      expect(r.stderr).to.equal(c.stderr);
      expect(r.code).to.equal(2);
    });
  }

  it('a duration flag takes every Go spelling (30s, 2m0s, 1h2m3.5s, 500ms) and is not mistaken for an unreachable runtime', async () => {
    for (const value of ['30s', '2m0s', '1h2m3.5s', '500ms']) {
      const r = await cli(['kubelet', 'get', '--runtime-request-timeout', value, '--container-runtime-endpoint', endpoint]);
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stderr).to.match(/^error: cannot reach the container runtime at /);
    }
  });
});

describe('cri-winsim kubelet: a runtime that is not there, in one line', function () {
  this.timeout(60_000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-cli-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('no socket: names the endpoint and how to start the runtime; no empty "Resolution note"', async () => {
    const endpoint = `unix://${join(dir, 'cri.sock')}`;
    const r = await runKubelet(['get', '--container-runtime-endpoint', endpoint]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal(
      `error: cannot reach the container runtime at ${endpoint}: there is no socket at ${join(dir, 'cri.sock')}; is the runtime running? ` +
        `Start it with \`cri-winsim runtime --listen ${endpoint}\`, or point --container-runtime-endpoint at the socket it listens on\n`,
    );
  });

  it('a file where the socket should be: nothing listens on it', async () => {
    await writeFile(join(dir, 'stale.sock'), '');
    const r = await runKubelet(['get', '--container-runtime-endpoint', `unix://${join(dir, 'stale.sock')}`]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/^error: cannot reach the container runtime at unix:\/\/\S+stale\.sock: nothing listens on the socket \(connection refused; a runtime that stopped left it behind\?\); is the runtime running\?/);
    expect(r.stderr).not.to.contain('Resolution note');
    expect(r.stderr.trimEnd().split('\n')).to.have.length(1);
  });

  it('--v=4 adds the gRPC details after the line', async () => {
    const r = await runKubelet(['get', '--container-runtime-endpoint', `unix://${join(dir, 'cri.sock')}`, '--v', '4']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/^error: cannot reach the container runtime at .*\n(.|\n)*gRPC code: Unavailable \(14\)\ngRPC details: No connection established/);
  });

  it('the old flag names still work for one release, with pflag\'s deprecation line', async () => {
    const endpoint = `unix://${join(dir, 'cri.sock')}`;
    const r = await runKubelet(['get', '--runtime-endpoint', endpoint, '--request-timeout', '5', '--node-name', 'n1']);
    expect(r.code).to.equal(1);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.slice(0, 3)).to.deep.equal([
      'Flag --runtime-endpoint has been deprecated, use --container-runtime-endpoint instead; --runtime-endpoint will be removed in the next release',
      'Flag --request-timeout has been deprecated, use --runtime-request-timeout instead; --request-timeout will be removed in the next release',
      'Flag --node-name has been deprecated, use --hostname-override instead; --node-name will be removed in the next release',
    ]);
    expect(lines[3]).to.match(new RegExp(`^error: cannot reach the container runtime at ${endpoint.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: there is no socket`));
  });

  it('the deprecated names are hidden from --help, the kubelet\'s are shown', async () => {
    const r = await runKubelet(['get', '--help']);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.contain('--container-runtime-endpoint <endpoint>');
    expect(r.stdout).to.contain('--runtime-request-timeout <duration>');
    expect(r.stdout).to.contain('--hostname-override <name>');
    expect(r.stdout).not.to.match(/--runtime-endpoint|--request-timeout|--node-name/);
  });
});

interface Report {
  summary: { tests: number; passed: number; failed: number };
  testCases: { name: string; outcome: string; reason: string; message: string; durationSeconds: number }[];
}

describe('cri-winsim kubelet: kubectl-like get, logs and exec, and the CI report', function () {
  this.timeout(120_000);
  let rt: RuntimeHandle;
  let run: Awaited<ReturnType<typeof runKubelet>>;
  // The endpoint goes first: after `--` everything is the exec'd command.
  const k = (...args: string[]) => runKubelet(['--container-runtime-endpoint', rt.endpoint, ...args]);

  before(async () => {
    rt = await startRuntime();
    run = await k(
      'run', pods('gmsa-pod-level.yaml'), pods('run-as-username-pod.yaml'), pods('gmsa-invalid-credspec.yaml'), pods('gmsa-service-account-not-authorised.yaml'),
      '--cluster', cluster, '--wait-ready', '--timeout', '30s', '--report', `junit=${join(rt.dir, 'report.xml')}`, '--report', `json=${join(rt.dir, 'report.json')}`,
    );
  });
  after(async () => {
    await rt?.stop();
  });

  it('run exits 1 (a pod failed) and writes one test case per container, and one per refused pod', async () => {
    expect(run.code, run.stderr).to.equal(1);
    const report = JSON.parse(await readFile(join(rt.dir, 'report.json'), 'utf8')) as Report;
    expect(report.testCases.map((c) => [c.name, c.outcome, c.reason])).to.deep.equal([
      ['webapp-gmsa/iis', 'passed', 'Running'],
      ['webapp-gmsa/logger', 'passed', 'Running'],
      ['run-as-username-pod-demo/run-as-username-demo', 'passed', 'Running'],
      ['webapp-invalid-credspec/iis', 'failed', 'RunContainerError'],
      ['reporting-webapp', 'failed', 'Forbidden'],
    ]);
    expect(report.summary).to.deep.equal({ tests: 5, passed: 3, failed: 2 });
    expect(report.testCases[3]!.message).to.equal('invalid credential spec: DomainJoinConfig.Sid is required (cri-winsim schema check)');
    expect(report.testCases.filter((c) => c.name.includes('/')).every((c) => c.durationSeconds > 0)).to.equal(true);
    const xml = await readFile(join(rt.dir, 'report.xml'), 'utf8');
    expect(xml).to.match(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="cri-winsim kubelet run" tests="5" failures="2" errors="0" time="[\d.]+">\n/);
    expect(xml).to.contain('<testcase classname="contoso-apps/webapp-invalid-credspec" name="webapp-invalid-credspec/iis" time="');
    expect(xml).to.contain('<failure type="RunContainerError" message="invalid credential spec: DomainJoinConfig.Sid is required (cri-winsim schema check)">');
    expect(xml).to.match(/<failure type="Forbidden" message="[^"]*service account &quot;reporting&quot; is not authorized to `use` GMSA cred spec &quot;webapplication1&quot;">/);
  });

  it('get sees the default namespace, -n another, -A all with a NAMESPACE column', async () => {
    const plain = await k('get', 'pods');
    expect(plain.code, plain.stderr).to.equal(0);
    expect(plain.stdout).to.match(/^NAME +READY +STATUS +RESTARTS +AGE\nrun-as-username-pod-demo +1\/1 +Running +0 +\S+\n$/);
    const other = await k('get', 'pods', '-n', 'contoso-apps', '--no-headers');
    expect(other.stdout.split('\n').filter(Boolean).map((l) => l.split(/ {3,}/)[0])).to.deep.equal(['webapp-gmsa', 'webapp-invalid-credspec']);
    const all = await k('get', 'pods', '-A');
    expect(all.stdout.split('\n')[0]).to.match(/^NAMESPACE +NAME +READY +STATUS +RESTARTS +AGE$/);
    const empty = await k('get', 'pods', '-n', 'kube-system');
    expect([empty.code, empty.stdout, empty.stderr]).to.deep.equal([0, '', 'No resources found in kube-system namespace.\n']);
  });

  it('-o wide has kubectl\'s four extra columns', async () => {
    const r = await k('get', 'pods', '-o', 'wide');
    expect(r.stdout.split('\n')[0]).to.match(/^NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES$/);
    expect(r.stdout.split('\n')[1]).to.match(/ winnode1 +<none> +<none>$/);
  });

  it('-o name, -l selectors (=, in, notin, !key)', async () => {
    expect((await k('get', 'pods', '-A', '-o', 'name')).stdout).to.equal('pod/webapp-gmsa\npod/webapp-invalid-credspec\npod/run-as-username-pod-demo\n');
    expect((await k('get', 'pods', '-A', '-l', 'app=webapp', '-o', 'name')).stdout).to.equal('pod/webapp-gmsa\n');
    expect((await k('get', 'pods', '-A', '-l', 'app in (webapp,other)', '-o', 'name')).stdout).to.equal('pod/webapp-gmsa\n');
    expect((await k('get', 'pods', '-A', '-l', 'app notin (webapp)', '-o', 'name')).stdout).to.equal('pod/webapp-invalid-credspec\npod/run-as-username-pod-demo\n');
    expect((await k('get', 'pods', '-A', '-l', '!app', '-o', 'name')).stdout).to.equal('pod/webapp-invalid-credspec\npod/run-as-username-pod-demo\n');
    const none = await k('get', 'pods', '-l', 'app=nothing');
    expect(none.stderr).to.equal('No resources found in default namespace.\n');
  });

  it('-o jsonpath with range, and for one named pod the object itself', async () => {
    const r = await k('get', 'pods', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}');
    expect(r.stdout).to.equal('contoso-apps/webapp-gmsa\tRunning\ncontoso-apps/webapp-invalid-credspec\tRunning\ndefault/run-as-username-pod-demo\tRunning\n');
    const one = await k('get', 'pods', 'webapp-gmsa', '-n', 'contoso-apps', '-o', 'jsonpath={.spec.containers[*].name}');
    expect(one.stdout).to.equal('iis logger');
  });

  it('-o custom-columns: header as given, <none> for a missing value, lists joined by commas', async () => {
    const r = await k('get', 'pods', '-n', 'contoso-apps', '-o', 'custom-columns=NAME:.metadata.name,CONTAINERS:.spec.containers[*].name,X:.metadata.nothing');
    expect(r.stdout).to.equal('NAME                      CONTAINERS   X\nwebapp-gmsa               iis,logger   <none>\nwebapp-invalid-credspec   iis          <none>\n');
  });

  it('-w prints the list, then each change (a deleted pod once more), and stops on Ctrl-C with exit 0', async () => {
    const child = spawn(process.execPath, [cliPath, 'kubelet', 'get', 'pods', '-A', '-w', '--container-runtime-endpoint', rt.endpoint], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let seen: () => void = () => {};
    let wanted = (_: string): boolean => false;
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (wanted(out)) seen();
    });
    child.stderr.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const until = (check: (text: string) => boolean, what: string): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${what} within 30 s:\n${out}`)), 30_000);
        seen = () => { clearTimeout(timer); resolve(); };
        wanted = check;
        if (check(out)) seen();
      });
    try {
      await until((t) => t.split('\n').length > 4, 'initial list');
      const del = await k('delete', 'webapp-invalid-credspec', '-n', 'contoso-apps', '--grace-period', '0');
      expect(del.code, del.stderr).to.equal(0);
      await until((t) => t.trimEnd().split('\n').length > 4, 'line for the deleted pod');
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).to.equal(0);
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).to.match(/^NAMESPACE +NAME +READY/);
    expect(lines.slice(1, 4).map((l) => l.split(/ +/)[1])).to.deep.equal(['webapp-gmsa', 'webapp-invalid-credspec', 'run-as-username-pod-demo']);
    // Its changes while it stops (kubectl's MODIFIED events), then its last state (DELETED).
    expect(new Set(lines.slice(4).map((l) => l.split(/ +/)[1]))).to.deep.equal(new Set(['webapp-invalid-credspec']));
    // The remembered widths of cli-runtime's tabwriter: the late row lines up with the first ones.
    const thirdColumn = (line: string): number => /^\S+\s+\S+\s+/.exec(line)![0].length;
    expect(lines.slice(4).map(thirdColumn)).to.deep.equal(lines.slice(4).map(() => lines[0]!.indexOf('READY')));
  });

  it('-w --timeout ends the watch by itself, exit 0', async () => {
    const r = await k('get', 'pods', '-w', '--timeout', '1s');
    expect([r.code, r.stderr]).to.deep.equal([0, '']);
    expect(r.stdout).to.match(/^NAME +READY +STATUS +RESTARTS +AGE\nrun-as-username-pod-demo /);
  });

  it('logs: the container\'s output, --tail, --timestamps; the first container of several with a note', async () => {
    const tail = await k('logs', 'run-as-username-pod-demo', '--tail', '1', '--timestamps');
    expect(tail.code, tail.stderr).to.equal(0);
    expect(tail.stdout).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z \S.*\n$/);
    const multi = await k('logs', 'webapp-gmsa', '-n', 'contoso-apps');
    expect(multi.code, multi.stderr).to.equal(0);
    expect(multi.stderr).to.equal('Defaulted container "iis" out of: iis, logger\n');
    const bad = await k('logs', 'webapp-gmsa', '-n', 'contoso-apps', '-c', 'nope');
    expect([bad.code, bad.stderr]).to.deep.equal([1, 'error: container nope is not valid for pod webapp-gmsa\n']);
    const previous = await k('logs', 'webapp-gmsa', '-n', 'contoso-apps', '-c', 'iis', '--previous');
    expect([previous.code, previous.stderr]).to.deep.equal([1, 'Error from server (BadRequest): previous terminated container "iis" in pod "webapp-gmsa" not found\n']);
    const missing = await k('logs', 'nope');
    expect([missing.code, missing.stderr]).to.deep.equal([1, 'Error from server (NotFound): pods "nope" not found\n']);
  });

  it('exec runs the command in the container; its exit status is the command\'s', async () => {
    const who = await k('exec', 'run-as-username-pod-demo', '--', 'cmd', '/c', 'whoami');
    expect([who.code, who.stdout.trim().toLowerCase()]).to.deep.equal([0, 'user manager\\containeruser']);
    const gmsa = await k('exec', 'webapp-gmsa', '-n', 'contoso-apps', '-c', 'iis', '--', 'cmd', '/c', 'nltest /parentdomain');
    expect(gmsa.stdout).to.contain('contoso.com. (1)');
    const failing = await k('exec', 'run-as-username-pod-demo', '--', 'cmd', '/c', 'exit 3');
    expect([failing.code, failing.stderr]).to.deep.equal([3, 'command terminated with exit code 3\n']);
  });

  it('logs -f follows the log until the container exits', async () => {
    const file = join(rt.dir, 'once.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: once\nspec:\n  restartPolicy: Never\n  containers:\n    - name: app\n' +
        '      image: mcr.microsoft.com/windows/nanoserver:ltsc2022\n      command: ["cmd", "/c", "ping -n 3 localhost"]\n',
    );
    const started = await k('run', file, '--cluster', cluster);
    expect(started.code, started.stderr).to.equal(0);
    const follow = await k('logs', 'once', '-f');
    expect(follow.code, follow.stderr).to.equal(0);
    expect(follow.stdout.match(/Reply from/g)).to.have.length(3);
  });
});

describe('cri-winsim kubelet run --expect: the demo\'s expectation format for a team\'s own pods', function () {
  this.timeout(180_000);
  let rt: RuntimeHandle;
  let dir: string;
  before(async () => {
    rt = await startRuntime({ args: ['--ad-mode', 'strict'] });
    dir = await mkdtemp(join(tmpdir(), 'winsim-expect-'));
  });
  after(async () => {
    await rt?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('an expectation that does not hold: FAIL with what differs, exit 1, a failed test case', async () => {
    const file = join(dir, 'expect.yaml');
    await writeFile(
      file,
      `title: one pod, one wrong expectation\ncluster: ${cluster}\nruns:\n  - pods: [${pods('run-as-username-pod.yaml')}]\n    expect:\n` +
        '      - pod: run-as-username-pod-demo\n        container: run-as-username-demo\n        outcome: Running\n        user: ContainerAdministrator\n',
    );
    const r = await runKubelet(['run', '--expect', file, '--report', `json=${join(dir, 'r.json')}`, '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code, r.stderr).to.equal(1);
    expect(r.stdout).to.equal(`FAIL run-as-username-pod-demo/run-as-username-demo: Running — user "ContainerUser", expected "ContainerAdministrator"\n0 of 1 as expected (${file})\n`);
    const report = JSON.parse(await readFile(join(dir, 'r.json'), 'utf8')) as Report;
    expect(report.testCases.map((c) => [c.name, c.outcome, c.message])).to.deep.equal([
      ['run-as-username-pod-demo/run-as-username-demo', 'failed', 'user "ContainerUser", expected "ContainerAdministrator"'],
    ]);
  });

  it('the demo\'s own expect.yaml holds on a runtime with the default AD mode (windows-server): exit 0', async () => {
    const own = await startRuntime();
    try {
      const r = await runKubelet(['run', '--expect', join(examples, 'demo', 'expect.yaml'), '--container-runtime-endpoint', own.endpoint], { killAfterMs: 120_000 });
      expect(r.code, r.stdout + r.stderr).to.equal(0);
      expect(r.stdout.trimEnd().split('\n').at(-1)).to.match(/^(\d+) of \1 as expected \(/);
    } finally {
      await own.stop();
    }
  });

  it('an expectation file that cannot be used is a usage error', async () => {
    const file = join(dir, 'broken.yaml');
    await writeFile(file, 'title: x\ncluster: .\nruns: []\n');
    const r = await runKubelet(['run', '--expect', file, '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(new RegExp(`^error: --expect: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: runs: `));
  });
});

describe('cri-winsim --help and completion', function () {
  this.timeout(300_000);
  let script: string;
  before(async () => {
    script = (await cli(['completion', 'bash'])).stdout;
  });

  /** Every command path, from the completion script's own table (so a new command is covered too). */
  const commandPaths = (): string[] => [...script.matchAll(/^ {4}'(cri-winsim[^']*)'\) echo '[^']*' ;;$/gm)].map((m) => m[1]!).filter((p, i, all) => !p.includes('|') && all.indexOf(p) === i);

  it('every command\'s --help ends with an Examples section', async () => {
    const paths = commandPaths();
    expect(paths).to.include.members(['cri-winsim', 'cri-winsim kubelet get', 'cri-winsim kubelet logs', 'cri-winsim kubelet exec', 'cri-winsim runtime', 'cri-winsim demo', 'cri-winsim completion']);
    const helps = await Promise.all(paths.map(async (path) => ({ path, r: await cli([...path.split(' ').slice(1), '--help']) })));
    for (const { path, r } of helps) {
      expect(r.code, path).to.equal(0);
      expect(r.stdout, `${path} --help`).to.match(/\nExamples:\n {2}# .+\n {2}.*cri-winsim /);
    }
  });

  const complete = async (words: string[]): Promise<string[]> => {
    const line = `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _cri_winsim; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const r = await runProcess('bash', ['-c', line], { killAfterMs: 10_000 });
    expect(r.code, r.stderr).to.equal(0);
    return r.stdout.split('\n').filter(Boolean);
  };

  it('bash completes commands, flags (not the hidden ones) and flag values', async () => {
    expect(await complete(['cri-winsim', ''])).to.deep.equal(['runtime', 'kubelet', 'demo', 'node', 'ad', 'explain', 'completion']);
    expect(await complete(['cri-winsim', 'ad', ''])).to.deep.equal(['get', 'apply']);
    expect(await complete(['cri-winsim', 'kubelet', 'g'])).to.deep.equal(['get']);
    expect(await complete(['cri-winsim', 'kubelet', 'get', '--container-r'])).to.deep.equal(['--container-runtime-endpoint']);
    expect(await complete(['cri-winsim', 'kubelet', '--runtime-e'])).to.deep.equal([]);
    expect(await complete(['cri-winsim', 'kubelet', 'get', '-o', 'j'])).to.deep.equal(['json', 'jsonpath=']);
    expect(await complete(['cri-winsim', 'runtime', '--ad-mode', ''])).to.deep.equal(['windows-server', 'gmsa-kep', 'realistic', 'strict']);
    expect(await complete(['cri-winsim', 'runtime', '--runtime-flavor', ''])).to.deep.equal(['dockershim-kep', 'cri-dockerd', 'containerd']);
    expect(await complete(['cri-winsim', 'kubelet', 'logs', '--logging-format', ''])).to.deep.equal(['json', 'text']);
  });

  it('zsh loads the same functions through bashcompinit', async () => {
    const zsh = (await cli(['completion', 'zsh'])).stdout;
    expect(zsh.split('\n').slice(0, 3)).to.deep.equal(['#compdef cri-winsim', '# zsh runs the bash completion functions through bashcompinit.', 'autoload -U +X bashcompinit && bashcompinit']);
    expect(zsh).to.contain('complete -o default -F _cri_winsim cri-winsim');
  });
});

describe('logs: level names in JSON, klog text with --logging-format text', function () {
  this.timeout(60_000);
  let rt: RuntimeHandle | undefined;
  afterEach(async () => {
    await rt?.stop();
    rt = undefined;
  });

  it('the runtime logs "level":"info" by default', async () => {
    rt = await startRuntime();
    const ready = rt.output().split('\n').find((l) => l.includes('cri-winsim runtime listening'))!;
    expect(JSON.parse(ready)).to.include({ level: 'info', msg: 'cri-winsim runtime listening', endpoint: rt.endpoint });
  });

  it('--logging-format text writes the kubelet\'s klog lines', async () => {
    rt = await startRuntime({ args: ['--logging-format', 'text'] });
    const ready = rt.output().split('\n').find((l) => l.includes('cri-winsim runtime listening'))!;
    expect(ready).to.match(/^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ runtime\.js:\d+\] "cri-winsim runtime listening" endpoint="unix:\/\/\S+\/cri\.sock"$/);
    expect(ready.slice(21, 30)).to.match(/^ {2,8}\d+ $/); // the pid, right-aligned in 7 columns after one space
  });

  it('credential specs stay redacted in klog text', async () => {
    const spec = '{"CmsPlugins":["ActiveDirectory"]}';
    const script = `const { createLogger } = await import(${JSON.stringify(new URL(`file://${join(repoRoot, 'dist', 'src', 'log.js')}`).href)});
      createLogger({ format: 'text', level: 'info' }).warn({ credential_spec: ${JSON.stringify(spec)}, containerId: 'c1' }, 'refused');`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    await new Promise((resolve) => child.once('close', resolve));
    expect(stderr).to.match(/^W\d{4} [\d:.]+ +\d+ \[eval1\]:2\] "refused" credential_spec="\[redacted credential spec\]" containerId="c1"\n$|^W\d{4} [\d:.]+ +\d+ \S+\] "refused" credential_spec="\[redacted credential spec\]" containerId="c1"\n$/);
    expect(stderr).not.to.contain('CmsPlugins');
  });
});
