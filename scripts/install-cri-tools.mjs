// Builds the real crictl and critest (kubernetes-sigs/cri-tools) into .tools/bin/ for the
// end-to-end suites. The version is the one pinned in tools/cri-tools/go.mod; go.sum there
// makes the build reproducible. Binaries that already report that version are kept, so
// reruns are instant.
//
// Without Go: in CI (CI=true) this is an error; elsewhere the crictl/critest suites are
// skipped (they say so), and this script says why and exits 0.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const moduleDir = join(root, 'tools', 'cri-tools');
const binDir = join(root, '.tools', 'bin');
const inCI = process.env.CI === 'true';
const say = (msg) => process.stdout.write(`install-cri-tools: ${msg}\n`);

function pinnedVersion() {
  const goMod = readFileSync(join(moduleDir, 'go.mod'), 'utf8');
  const m = /^\s*(?:require\s+)?sigs\.k8s\.io\/cri-tools\s+(v\d+\.\d+\.\d+)\b/m.exec(goMod);
  if (!m) throw new Error(`no sigs.k8s.io/cri-tools requirement in ${join(moduleDir, 'go.mod')}`);
  return m[1];
}

// Each tool: how it is built and how it reports its version.
const tools = (version) => [
  {
    name: 'crictl',
    build: ['build'],
    pkg: 'sigs.k8s.io/cri-tools/cmd/crictl',
    versionArgs: ['--version'],
    expected: `crictl version ${version}`,
  },
  {
    // critest is the package's test binary (upstream builds it with `go test -c` too).
    name: 'critest',
    build: ['test', '-c'],
    pkg: 'sigs.k8s.io/cri-tools/cmd/critest',
    versionArgs: ['-version'],
    expected: `critest version: ${version}`,
  },
];

function reportedVersion(bin, args) {
  if (!existsSync(bin)) return undefined;
  const res = spawnSync(bin, args, { encoding: 'utf8', timeout: 30_000 });
  if (res.error || res.status !== 0) return undefined;
  return res.stdout.split('\n').map((l) => l.trim()).find((l) => l.length > 0);
}

function goAvailable() {
  const res = spawnSync('go', ['version'], { encoding: 'utf8', timeout: 30_000 });
  if (res.error || res.status !== 0) return undefined;
  return res.stdout.trim();
}

function main() {
  const version = pinnedVersion();
  const wanted = tools(version);
  const missing = wanted.filter((t) => reportedVersion(join(binDir, t.name), t.versionArgs) !== t.expected);
  if (missing.length === 0) {
    say(`crictl and critest ${version} already in .tools/bin (nothing to do)`);
    return 0;
  }

  const go = goAvailable();
  if (!go) {
    const why = `Go is not installed (\`go\` not found on PATH), so crictl/critest ${version} cannot be built`;
    if (inCI) {
      process.stderr.write(`install-cri-tools: ERROR: ${why}. CI needs them: install Go 1.24 or newer.\n`);
      return 1;
    }
    say(`${why}.`);
    say('the crictl and critest end-to-end suites will be SKIPPED; install Go 1.24+ and rerun to include them.');
    return 0;
  }

  mkdirSync(binDir, { recursive: true });
  for (const tool of missing) {
    const dest = join(binDir, tool.name);
    // Build to a temporary name and rename: an interrupted build never looks installed.
    const partial = `${dest}.partial`;
    rmSync(partial, { force: true });
    say(`building ${tool.name} ${version} with ${go} into .tools/bin/${tool.name} (first build takes a few minutes)`);
    const args = [
      ...tool.build,
      // go.sum is complete: a missing hash is an error, never a silent go.mod/go.sum update.
      '-mod=readonly',
      '-trimpath',
      // Upstream's Makefile stamps the version the same way; crictl prints it in `crictl --version`.
      '-ldflags', `-X sigs.k8s.io/cri-tools/pkg/version.Version=${version}`,
      '-o', partial,
      tool.pkg,
    ];
    const started = Date.now();
    const res = spawnSync('go', args, {
      cwd: moduleDir,
      stdio: 'inherit',
      // Static binaries, as upstream's Makefile builds them.
      env: { ...process.env, CGO_ENABLED: '0' },
    });
    if (res.error || res.status !== 0) {
      rmSync(partial, { force: true });
      process.stderr.write(`install-cri-tools: ERROR: \`go ${args.join(' ')}\` failed in tools/cri-tools` +
        `${res.error ? `: ${res.error.message}` : ` (exit ${res.status})`}\n`);
      return 1;
    }
    renameSync(partial, dest);
    const got = reportedVersion(dest, tool.versionArgs);
    if (got !== tool.expected) {
      process.stderr.write(`install-cri-tools: ERROR: built ${tool.name} reports ${JSON.stringify(got)}, expected ${JSON.stringify(tool.expected)}\n`);
      return 1;
    }
    say(`built ${tool.name} ${version} in ${Math.round((Date.now() - started) / 1000)} s`);
  }
  return 0;
}

try {
  process.exitCode = main();
} catch (err) {
  process.stderr.write(`install-cri-tools: ERROR: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
