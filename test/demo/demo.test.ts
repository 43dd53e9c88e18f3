// `cri-winsim demo` as a user runs it: a child process with its own TMPDIR (so the test sees
// every temporary file it makes), the result table on stdout checked row by row against the
// bundled examples/demo/expect.yaml, the exit code, and nothing left behind — no socket, no temp
// dir, and a process that ends by itself (a leaked timer or handle would keep it alive).
// Plus the pure parts: the manifest loader's errors, the row comparison, the CRI log parser.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { loadExampleManifest, parseExampleManifest, type OutcomeExpectation } from '../../src/demo/example-manifest.js';
import { formatTable } from '../../src/kubectl/pod-printers.js';
import { formatReport, TABLE_HEADER } from '../../src/demo/result-table.js';
import { compareRow, credentialSpecAccount, criLogText, type ObservedRow } from '../../src/demo/run-example.js';
import { cliPath, criToolPath, repoRoot } from '../support/paths.js';
import { oneWorkerAtATime } from '../support/one-worker-at-a-time.js';

const bundledDemo = join(repoRoot, 'examples', 'demo', 'expect.yaml');

interface DemoRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** True when the test had to kill it: it did not end by itself. */
  killed: boolean;
}

/** Runs `cri-winsim demo ARGS` with TMPDIR=tmp; `whileRunning` sees stderr lines as they come. */
function runDemoCli(args: string[], tmp: string, opts: { killAfterMs?: number; onStderrLine?: (line: string, child: ReturnType<typeof spawn>) => void } = {}): Promise<DemoRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, 'demo', ...args], {
      cwd: repoRoot,
      env: { ...process.env, TMPDIR: tmp },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let pending = '';
    let killed = false;
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
      pending += c;
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        opts.onStderrLine?.(pending.slice(0, nl), child);
        pending = pending.slice(nl + 1);
      }
    });
    const timer = setTimeout(() => { killed = true; child.kill('SIGKILL'); }, opts.killAfterMs ?? 60_000);
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr, killed }); });
  });
}

/** The table's data rows: cells split at the column gaps (two or more spaces); MESSAGE is the rest. */
function tableRows(stdout: string): string[][] {
  const lines = stdout.split('\n');
  const header = lines.findIndex((l) => l.startsWith('POD '));
  expect(header, `no table in:\n${stdout}`).to.be.greaterThan(-1);
  const rows: string[][] = [];
  for (const line of lines.slice(header + 1)) {
    if (line.trim() === '') break;
    const cells = line.split(/ {2,}/);
    rows.push([...cells.slice(0, TABLE_HEADER.length - 1), cells.slice(TABLE_HEADER.length - 1).join('  ')]);
  }
  return rows;
}

const col = (name: (typeof TABLE_HEADER)[number]): number => TABLE_HEADER.indexOf(name);

function findRow(rows: string[][], e: OutcomeExpectation): string[] | undefined {
  return rows.find((r) => r[col('POD')] === e.pod && r[col('CONTAINER')] === (e.container ?? '-'));
}

describe('cri-winsim demo', function () {
  // Its processes use the program's default pod ranges and node addresses.
  oneWorkerAtATime('default-addresses');
  this.timeout(90_000);
  let tmp: string;

  beforeEach(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'demo-test-'));
  });
  afterEach(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('runs the bundled examples, prints one row per expected result, exits 0 and leaves nothing behind', async () => {
    const manifest = await loadExampleManifest(bundledDemo);
    const run = await runDemoCli([], tmp);
    expect(run.killed, 'the demo did not end by itself (a timer, socket or child kept it alive)').to.equal(false);
    const rows = tableRows(run.stdout);
    const expectations = manifest.runs.flatMap((r) => r.expect);
    expect(rows.length, run.stdout).to.equal(expectations.length);
    for (const e of expectations) {
      const row = findRow(rows, e);
      const what = `${e.pod}/${e.container ?? '-'}`;
      expect(row, `row for ${what} in:\n${run.stdout}`).to.not.equal(undefined);
      expect(row![col('OUTCOME')], `${what} OUTCOME`).to.equal(e.outcome);
      if (e.message !== undefined) expect(row![col('MESSAGE')], `${what} MESSAGE`).to.include(e.message);
      if (e.user !== undefined) expect(row![col('USER')], `${what} USER`).to.equal(e.user);
      if (e.gmsa !== undefined) expect(row![col('GMSA')], `${what} GMSA`).to.equal(e.gmsa);
      expect(row![col('AS EXPECTED')], `${what}: ${run.stdout.slice(run.stdout.indexOf('Unexpected:'))}`).to.equal('yes');
    }
    expect(run.stdout).to.include('crictl exec -s');
    expect(run.stderr).to.match(/demo: starting the runtime on unix:\/\/.*cri\.sock/);
    expect(run.code, `exit code; stderr:\n${run.stderr}`).to.equal(0);
    expect(readdirSync(tmp), 'left in TMPDIR').to.deep.equal([]);
  });

  for (const flavor of ['cri-dockerd', 'containerd']) {
    it(`runs the bundled demo with --runtime-flavor ${flavor}: every row says the flavor and comes out as expected`, async () => {
      const manifest = await loadExampleManifest(bundledDemo);
      const run = await runDemoCli(['--runtime-flavor', flavor], tmp);
      expect(run.killed).to.equal(false);
      const rows = tableRows(run.stdout);
      expect(rows.length, run.stdout).to.equal(manifest.runs.flatMap((r) => r.expect).length);
      for (const row of rows) {
        expect(row[col('FLAVOR')], row.join(' | ')).to.equal(flavor);
        expect(row[col('AS EXPECTED')], `${row.join(' | ')}\n${run.stdout}`).to.equal('yes');
      }
      expect(run.stderr).to.include(`--runtime-flavor ${flavor}`);
      expect(run.code, run.stderr).to.equal(0);
      expect(readdirSync(tmp), 'left in TMPDIR').to.deep.equal([]);
    });
  }

  it('exits 1 and marks the row when an example does not have its expected outcome', async () => {
    const example = join(tmp, 'wrong-expectation');
    await mkdir(example);
    await writeFile(join(example, 'expect.yaml'), [
      'title: a deliberately wrong expectation',
      `cluster: ${join(repoRoot, 'examples', 'cluster')}`,
      'runs:',
      `  - pods: [${join(repoRoot, 'examples', 'pods', 'run-as-username-pod.yaml')}]`,
      '    expect:',
      '      - pod: run-as-username-pod-demo',
      '        container: run-as-username-demo',
      '        outcome: Running',
      '        user: ContainerAdministrator',
      '',
    ].join('\n'));
    const run = await runDemoCli(['--example', example], tmp);
    expect(run.killed).to.equal(false);
    const row = tableRows(run.stdout).find((r) => r[col('POD')] === 'run-as-username-pod-demo');
    expect(row![col('USER')]).to.equal('ContainerUser');
    expect(row![col('AS EXPECTED')]).to.equal('no');
    expect(run.stdout).to.include('run-as-username-pod-demo/run-as-username-demo: user "ContainerUser", expected "ContainerAdministrator"');
    expect(run.code).to.equal(1);
    expect(readdirSync(tmp), 'left in TMPDIR').to.deep.equal(['wrong-expectation']);
  });

  it('refuses a broken example naming the file and the field, before starting anything', async () => {
    const example = join(tmp, 'broken');
    await mkdir(example);
    await writeFile(join(example, 'expect.yaml'), 'title: broken\ncluster: ../nowhere\nruns: []\n');
    const run = await runDemoCli(['--example', example], tmp);
    expect(run.code).to.equal(1);
    expect(run.stderr).to.include(`${join(example, 'expect.yaml')}: runs: must NOT have fewer than 1 items`);
    expect(run.stdout).to.equal('');
    expect(readdirSync(tmp)).to.deep.equal(['broken']);
  });

  it('Ctrl-C during the run stops it, cleans up and exits 1', async () => {
    let sent = false;
    const run = await runDemoCli([], tmp, {
      onStderrLine: (line, child) => {
        if (!sent && line.includes('kubelet run')) {
          sent = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(sent, run.stderr).to.equal(true);
    expect(run.killed).to.equal(false);
    expect(run.code).to.equal(1);
    expect(run.stderr).to.include('interrupted by SIGINT; everything was cleaned up');
    expect(readdirSync(tmp), 'left in TMPDIR').to.deep.equal([]);
  });

  it('--keep serves the socket for crictl until Ctrl-C, then removes everything', async function () {
    let endpointSeen: string | undefined;
    let crictlOutput: string | undefined;
    let socketExisted = false;
    const run = await runDemoCli(['--keep'], tmp, {
      onStderrLine: (line, child) => {
        const m = /runtime up on (unix:\/\/\S+); press Ctrl-C/.exec(line);
        if (m === null) return;
        endpointSeen = m[1]!;
        socketExisted = existsSync(endpointSeen.slice('unix://'.length));
        const crictl = criToolPath('crictl');
        const stop = () => child.kill('SIGINT');
        if (crictl === undefined) {
          stop();
          return;
        }
        // The config file the "try it yourself" text names, as a user would use it.
        const config = join(endpointSeen.slice('unix://'.length), '..', 'crictl.yaml');
        const c = spawn(crictl, ['ps', '-a'], { env: { ...process.env, CRI_CONFIG_FILE: config }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        c.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
        c.once('close', () => { crictlOutput = out; stop(); });
      },
    });
    expect(endpointSeen, run.stderr).to.be.a('string');
    expect(socketExisted, 'the socket existed while the demo was kept up').to.equal(true);
    if (crictlOutput !== undefined) expect(crictlOutput).to.include('run-as-username-demo');
    expect(run.stdout).to.include('the runtime stays up until you press Ctrl-C');
    expect(run.killed).to.equal(false);
    expect(run.signal).to.equal(null);
    expect(readdirSync(tmp), 'left in TMPDIR').to.deep.equal([]);
  });
});

describe('demo: example manifests', () => {
  const dir = join(repoRoot, 'examples', 'demo');
  const file = join(dir, 'expect.yaml');
  const valid = (extra: string) => `title: t\ncluster: ../cluster\nruns:\n  - pods: [../pods/run-as-username-pod.yaml]\n    expect:\n      - pod: p\n${extra}`;

  const cases: Array<[string, string, string]> = [
    ['an unknown field', valid('        outcome: Running\n        colour: red\n'), 'runs[0].expect[0].colour: unknown field'],
    ['a missing outcome', valid(''), 'runs[0].expect[0].outcome: is required'],
    ['a missing pod file', 'title: t\ncluster: ../cluster\nruns:\n  - pods: [nope.yaml]\n    expect: [{pod: p, outcome: Running}]\n', `runs[0].pods[0]: ${join(dir, 'nope.yaml')} does not exist`],
    ['a missing node file', 'title: t\nnode: nonode.yaml\ncluster: ../cluster\nruns:\n  - pods: [../pods/run-as-username-pod.yaml]\n    expect: [{pod: p, outcome: Running}]\n', `node: ${join(dir, 'nonode.yaml')} does not exist`],
    ['a bad AD mode', 'title: t\nadMode: lenient\ncluster: ../cluster\nruns: []\n', 'adMode: must be equal to one of the allowed values'],
    ['a bad runtime flavor', 'title: t\nruntimeFlavor: cri-o\ncluster: ../cluster\nruns: []\n', 'runtimeFlavor: must be equal to one of the allowed values'],
    ['exec in a container expected not to run', valid('        container: c\n        outcome: RunContainerError\n        exec: [{command: [whoami]}]\n'), 'runs[0].expect[0].exec: commands can only run in a Running container, not RunContainerError'],
    ['the same row twice', valid('        outcome: Running\n      - pod: p\n        outcome: Forbidden\n'), 'runs[0].expect[1]: pod p is expected twice'],
    ['not YAML', 'title: [', 'not valid YAML'],
  ];
  for (const [what, text, message] of cases) {
    it(`refuses ${what}`, async () => {
      let err: Error | undefined;
      try {
        await parseExampleManifest(file, text);
      } catch (e) {
        err = e as Error;
      }
      expect(err?.message).to.include(`${file}: ${message}`);
    });
  }

  it('resolves paths against the file and applies defaults', async () => {
    const m = await parseExampleManifest(file, valid('        outcome: Running\n        exec: [{command: [cmd, /c, whoami]}]\n'));
    expect(m.cluster).to.equal(join(repoRoot, 'examples', 'cluster'));
    expect(m.runs[0]!.pods).to.deep.equal([join(repoRoot, 'examples', 'pods', 'run-as-username-pod.yaml')]);
    // The defaults are what a current node does (docs/failure-modes.md) and the KEP's dockershim.
    expect(m.adMode).to.equal('windows-server');
    expect(m.runtimeFlavor).to.equal('dockershim-kep');
    expect(m.node).to.equal(undefined);
    expect(m.runs[0]!.expect[0]!.exec).to.deep.equal([{ command: ['cmd', '/c', 'whoami'], exitCode: 0 }]);
  });
});

describe('demo: judging rows', () => {
  const row: ObservedRow = { namespace: 'ns', pod: 'p', container: 'c', containerId: 'id', outcome: 'RunContainerError', message: 'rpc says: invalid credential spec: DomainJoinConfig.Sid is required', user: 'ContainerUser', gmsa: 'none' };
  const expectation = (e: Partial<OutcomeExpectation>): OutcomeExpectation => ({ pod: 'p', container: 'c', outcome: 'RunContainerError', exec: [], ...e });

  it('accepts an expected failure', () => {
    expect(compareRow(row, expectation({ message: 'DomainJoinConfig.Sid is required', user: 'ContainerUser', gmsa: 'none' }))).to.deep.equal([]);
  });
  it('names every difference', () => {
    expect(compareRow(row, expectation({ outcome: 'Running', message: 'nope', user: 'ContainerAdministrator', gmsa: 'DEMO\\WebApplication1' }))).to.deep.equal([
      'outcome RunContainerError, expected Running (message: rpc says: invalid credential spec: DomainJoinConfig.Sid is required)',
      'message "rpc says: invalid credential spec: DomainJoinConfig.Sid is required" does not contain "nope"',
      'user "ContainerUser", expected "ContainerAdministrator"',
      'gMSA "none", expected "DEMO\\\\WebApplication1"',
    ]);
  });
  it('reports a row nobody expected and an expectation nothing matched', () => {
    expect(compareRow(row, undefined)[0]).to.match(/^not in the example's expectations/);
    expect(compareRow(undefined, expectation({}))[0]).to.equal('expected p/c to come out RunContainerError, but the kubelet reported no such container');
  });
  it('checks exec results: exit code and output', () => {
    const exec = [{ expectation: { command: ['cmd', '/c', 'nltest /query'], exitCode: 0, output: 'NERR_Success' }, result: { exitCode: 1, stdout: 'ERROR_NO_LOGON_SERVERS\n', stderr: '' } }];
    expect(compareRow({ ...row, outcome: 'Running', message: '' }, expectation({ outcome: 'Running' }), exec)).to.deep.equal([
      '`cmd /c nltest /query` exited 1, expected 0; output: "ERROR_NO_LOGON_SERVERS"',
      '`cmd /c nltest /query` printed "ERROR_NO_LOGON_SERVERS", expected it to contain "NERR_Success"',
    ]);
  });
  it('names the gMSA of a credential spec given as text or as an object', () => {
    const spec = { DomainJoinConfig: { NetBiosName: 'DEMO', MachineAccountName: 'WebApplication1' } };
    expect(credentialSpecAccount(JSON.stringify(spec))).to.equal('DEMO\\WebApplication1');
    expect(credentialSpecAccount(spec)).to.equal('DEMO\\WebApplication1');
    expect(credentialSpecAccount(undefined)).to.equal('none');
    expect(credentialSpecAccount('')).to.equal('none');
  });
  it('reads the text of CRI log lines, joining partial lines', () => {
    const log = '2026-01-01T00:00:00.000000000Z stdout P contoso.com.\n2026-01-01T00:00:00.000000001Z stdout F  (1)\n2026-01-01T00:00:00.000000002Z stderr F oops\n';
    expect(criLogText(log)).to.equal('contoso.com. (1)\noops\n');
  });
  it('turns messages into numbered notes when the table would not fit the terminal', () => {
    const long = 'node WINNODE1 (WINNODE1$) is not allowed to retrieve the managed password of gMSA DEMO\\SqlReporting';
    const verdicts = [
      { row: { ...row, message: long }, expectation: expectation({}), exec: [], problems: [] },
      { row: { ...row, container: 'd', outcome: 'Running', message: '' }, expectation: expectation({ container: 'd', outcome: 'Running' }), exec: [], problems: [] },
    ];
    const report = { manifest: { runtimeFlavor: 'dockershim-kep' } as never, runs: [{ run: { gmsaDesign: 'webhook' } as never, results: [], verdicts }], ok: true };
    const narrow = formatReport(report, { tableWidth: 80 });
    expect(narrow).to.include(`yes          [1]\n`);
    expect(narrow).to.include(`\n[1] ${long}\n`);
    expect(narrow).to.include('2 of 2 results as expected.');
    expect(formatReport(report)).to.include(`yes          ${long}\n`);
  });
  it('aligns the table without trailing spaces', () => {
    expect(formatTable(['A', 'BB', 'C'], [['aaa', 'b', '']], 2)).to.equal('A    BB  C\naaa  b\n');
  });
});
