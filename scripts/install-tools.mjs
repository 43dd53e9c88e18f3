// Builds the Go programs the test suites (and the benchmark) run into .tools/bin/, each from a
// pinned module under tools/<name>/ (go.mod + a complete go.sum, so a build downloads exactly
// those versions from the Go module proxy):
//
//   tools/cri-tools   crictl, critest                          (npm test)
//   tools/kubernetes  kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
//                                                            (npm test: the node-mode suites)
//   tools/etcd        etcd                                     (npm test: the node-mode suites)
//   tools/kwok        kwok                                     (only with --bench: npm run tools:bench)
//
// Usage: node scripts/install-tools.mjs [--bench] [MODULE...]
//   no MODULE: every module npm test needs (plus kwok with --bench); MODULE names a tools/ dir.
//
// A binary that already reports its pinned version is kept, so reruns are instant. Builds are
// niced, static (CGO_ENABLED=0), -trimpath and stripped, and stamped with their version the way
// upstream's release builds are.
//
// Without Go, or when a build fails: in CI (CI=true) that is an error (exit 1); elsewhere the
// suites that need the missing programs are skipped (they say so), and this script says why
// and exits 0.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = join(root, 'tools');
const binDir = join(root, '.tools', 'bin');
const inCI = process.env.CI === 'true';
const say = (msg) => process.stdout.write(`install-tools: ${msg}\n`);
const warn = (msg) => process.stderr.write(`install-tools: ERROR: ${msg}\n`);

/** The version tools/<dir>/go.mod requires of module `path`. */
function pinned(dir, path) {
  const file = join(toolsDir, dir, 'go.mod');
  const goMod = readFileSync(file, 'utf8');
  const escaped = path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const m = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\d+\\.\\d+\\.\\d+)\\b`, 'm').exec(goMod);
  if (!m) throw new Error(`no ${path} requirement in tools/${dir}/go.mod`);
  return m[1];
}

/** `-X pkg.name=value` for each pair, as one -ldflags word list. */
const stamp = (pkgs, vars) => pkgs.flatMap((p) => Object.entries(vars).map(([k, v]) => `-X ${p}.${k}=${v}`));

// Each module: the tools/ dir, whether only the benchmark needs it, and its binaries, each with
// how it is built and the first line of its version output it must print.
const modules = [
  {
    dir: 'cri-tools',
    suites: 'the crictl and critest end-to-end suites',
    binaries() {
      const v = pinned('cri-tools', 'sigs.k8s.io/cri-tools');
      // Upstream's Makefile stamps the version the same way; crictl prints it in `crictl --version`.
      const ldflags = [`-X sigs.k8s.io/cri-tools/pkg/version.Version=${v}`];
      return [
        { name: 'crictl', build: ['build'], pkg: 'sigs.k8s.io/cri-tools/cmd/crictl', ldflags, versionArgs: ['--version'], expected: `crictl version ${v}` },
        // critest is the package's test binary (upstream builds it with `go test -c` too).
        { name: 'critest', build: ['test', '-c'], pkg: 'sigs.k8s.io/cri-tools/cmd/critest', ldflags, versionArgs: ['-version'], expected: `critest version: ${v}` },
      ];
    },
  },
  {
    dir: 'kubernetes',
    suites: 'the node-mode suites (real control plane)',
    binaries() {
      const v = pinned('kubernetes', 'k8s.io/kubernetes');
      const [, major, minor] = /^v(\d+)\.(\d+)\./.exec(v);
      // As hack/lib/version.sh does: both version packages, so `kubectl version`, `--version`
      // and the API server's /version report the release instead of v0.0.0-master.
      const ldflags = () => {
        const vars = { gitVersion: v, gitMajor: major, gitMinor: minor, gitTreeState: 'clean' };
        const date = moduleTime('kubernetes', 'k8s.io/kubernetes');
        if (date) vars.buildDate = date;
        return stamp(['k8s.io/client-go/pkg/version', 'k8s.io/component-base/version'], vars);
      };
      return [
        { name: 'kube-apiserver', build: ['build'], pkg: 'k8s.io/kubernetes/cmd/kube-apiserver', ldflags, versionArgs: ['--version'], expected: `Kubernetes ${v}` },
        { name: 'kube-controller-manager', build: ['build'], pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager', ldflags, versionArgs: ['--version'], expected: `Kubernetes ${v}` },
        { name: 'kube-scheduler', build: ['build'], pkg: 'k8s.io/kubernetes/cmd/kube-scheduler', ldflags, versionArgs: ['--version'], expected: `Kubernetes ${v}` },
        { name: 'kubectl', build: ['build'], pkg: 'k8s.io/kubernetes/cmd/kubectl', ldflags, versionArgs: ['version', '--client'], expected: `Client Version: ${v}` },
      ];
    },
  },
  {
    dir: 'etcd',
    suites: 'the node-mode suites (real control plane)',
    binaries() {
      const v = pinned('etcd', 'go.etcd.io/etcd/server/v3');
      // The server module's root package is etcd's main (it calls etcdmain.Main); the version
      // it prints is a constant of go.etcd.io/etcd/api/v3/version, no stamping needed.
      return [
        { name: 'etcd', build: ['build'], pkg: 'go.etcd.io/etcd/server/v3', ldflags: [], versionArgs: ['--version'], expected: `etcd Version: ${v.slice(1)}` },
      ];
    },
  },
  {
    dir: 'kwok',
    bench: true,
    suites: 'the kwok comparison of the benchmark',
    binaries() {
      const v = pinned('kwok', 'sigs.k8s.io/kwok');
      // As kwok's hack/releases.sh stamps it.
      const ldflags = [`-X sigs.k8s.io/kwok/pkg/consts.Version=${v}`];
      return [
        { name: 'kwok', build: ['build'], pkg: 'sigs.k8s.io/kwok/cmd/kwok', ldflags, versionArgs: ['--version'], expected: `kwok version ${v} `, prefix: true },
      ];
    },
  },
];

/** The module's publication time (`go list -m`), as upstream release builds' buildDate. */
const moduleTimes = new Map();
function moduleTime(dir, path) {
  const key = `${dir} ${path}`;
  if (!moduleTimes.has(key)) moduleTimes.set(key, goListTime(dir, path));
  return moduleTimes.get(key);
}
function goListTime(dir, path) {
  const res = spawnSync('go', ['list', '-mod=readonly', '-m', '-f', '{{.Time}}', path], { cwd: join(toolsDir, dir), encoding: 'utf8', timeout: 120_000 });
  if (res.error || res.status !== 0) return undefined;
  const t = new Date(res.stdout.trim());
  return Number.isNaN(t.getTime()) ? undefined : t.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function reportedVersion(bin, args) {
  if (!existsSync(bin)) return undefined;
  const res = spawnSync(bin, args, { encoding: 'utf8', timeout: 30_000 });
  if (res.error || res.status !== 0) return undefined;
  return res.stdout.split('\n').map((l) => l.trim()).find((l) => l.length > 0);
}

const reportsPinned = (tool) => {
  const got = reportedVersion(join(binDir, tool.name), tool.versionArgs);
  return got !== undefined && (tool.prefix ? got.startsWith(tool.expected) : got === tool.expected);
};

function goAvailable() {
  const res = spawnSync('go', ['version'], { encoding: 'utf8', timeout: 30_000 });
  if (res.error || res.status !== 0) return undefined;
  return res.stdout.trim();
}

const niceAvailable = () => {
  const res = spawnSync('nice', ['-n', '10', 'true'], { timeout: 10_000 });
  return !res.error && res.status === 0;
};

/**
 * One installer at a time per .tools/bin (worktrees may share it): others wait, then find the
 * binaries built. A lock whose owner is gone is taken over.
 */
async function withLock(fn) {
  const lock = join(binDir, '.install-tools.lock');
  let said = false;
  for (;;) {
    try {
      const fd = openSync(lock, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      const owner = Number.parseInt(readFileSync(lock, 'utf8'), 10);
      let alive;
      try { process.kill(owner, 0); alive = Number.isInteger(owner) && owner > 0; } catch { alive = false; }
      if (!alive) { rmSync(lock, { force: true }); continue; }
      if (!said) { say(`waiting for another install-tools (pid ${owner}) to finish`); said = true; }
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  try { return await fn(); } finally { rmSync(lock, { force: true }); }
}

function build(mod, tool, go, useNice) {
  const dest = join(binDir, tool.name);
  // Build to a temporary name and rename: an interrupted build never looks installed.
  const partial = `${dest}.partial-${process.pid}`;
  rmSync(partial, { force: true });
  const args = [
    ...tool.build,
    // go.sum is complete: a missing hash is an error, never a silent go.mod/go.sum update.
    '-mod=readonly',
    '-trimpath',
    // The programs are dependencies' main packages: there is no VCS state of ours to stamp.
    '-buildvcs=false',
    '-ldflags', ['-s', '-w', ...(typeof tool.ldflags === 'function' ? tool.ldflags() : tool.ldflags)].join(' '),
    '-o', partial,
    tool.pkg,
  ];
  const [program, ...pre] = useNice ? ['nice', '-n', '10', 'go'] : ['go'];
  say(`building ${tool.name} (tools/${mod.dir}) with ${go} into .tools/bin/${tool.name}`);
  const started = Date.now();
  const res = spawnSync(program, [...pre, ...args], {
    cwd: join(toolsDir, mod.dir),
    stdio: 'inherit',
    // Static binaries, as upstream builds these.
    env: { ...process.env, CGO_ENABLED: '0' },
  });
  if (res.error || res.status !== 0) {
    rmSync(partial, { force: true });
    return `\`go ${args.join(' ')}\` failed in tools/${mod.dir}${res.error ? `: ${res.error.message}` : ` (exit ${res.status})`}`;
  }
  renameSync(partial, dest);
  if (!reportsPinned(tool)) {
    const got = reportedVersion(dest, tool.versionArgs);
    return `built ${tool.name} reports ${JSON.stringify(got)}, expected ${JSON.stringify(tool.expected)}`;
  }
  say(`built ${tool.name} in ${Math.round((Date.now() - started) / 1000)} s`);
  return undefined;
}

async function main(argv) {
  const bench = argv.includes('--bench');
  const named = argv.filter((a) => !a.startsWith('--'));
  for (const a of argv) {
    if (a.startsWith('--') && a !== '--bench') throw new Error(`unknown option ${a} (usage: install-tools.mjs [--bench] [MODULE...])`);
  }
  for (const n of named) {
    if (!modules.some((m) => m.dir === n)) throw new Error(`unknown module ${n}: one of ${modules.map((m) => m.dir).join(', ')}`);
  }
  const chosen = named.length > 0 ? modules.filter((m) => named.includes(m.dir)) : modules.filter((m) => !m.bench || bench);

  const missing = chosen
    .map((mod) => ({ mod, tools: mod.binaries().filter((t) => !reportsPinned(t)) }))
    .filter((m) => m.tools.length > 0);
  if (missing.length === 0) {
    say(`${chosen.flatMap((m) => m.binaries().map((t) => t.name)).join(', ')} already in .tools/bin at their pinned versions (nothing to do)`);
    return 0;
  }
  const missingNames = missing.flatMap((m) => m.tools.map((t) => t.name)).join(', ');

  const go = goAvailable();
  if (!go) {
    const why = `Go is not installed (\`go\` not found on PATH), so ${missingNames} cannot be built`;
    if (inCI) {
      warn(`${why}. CI needs them: install Go 1.25 or newer.`);
      return 1;
    }
    say(`${why}.`);
    say(`${[...new Set(missing.map((m) => m.mod.suites))].join('; ')} will be SKIPPED; install Go 1.25+ and rerun to include them.`);
    return 0;
  }

  mkdirSync(binDir, { recursive: true });
  const useNice = niceAvailable();
  return withLock(() => {
    const failures = [];
    for (const { mod } of missing) {
      // Recomputed under the lock: another installer may have built them meanwhile.
      for (const tool of mod.binaries().filter((t) => !reportsPinned(t))) {
        const err = build(mod, tool, go, useNice);
        if (err) { failures.push({ mod, err }); break; }
      }
    }
    for (const { mod, err } of failures) {
      if (inCI) warn(err);
      else say(`ERROR: ${err}; ${mod.suites} will be SKIPPED.`);
    }
    return failures.length > 0 && inCI ? 1 : 0;
  });
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  warn(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
}
