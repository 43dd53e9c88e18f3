// scripts/install-tools.mjs, run on a copy of the files it reads: it keeps binaries that report
// their pinned version, and without Go it skips (exit 0, saying why) outside CI but fails in CI.
// Building itself is exercised by `npm test`'s pretest.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../support/paths.js';

const MODULES = ['cri-tools', 'kubernetes', 'etcd', 'kwok'];

// What each pinned binary prints first, as the installer expects it (each program's own text).
const PINNED: Record<string, string> = {
  crictl: 'crictl version v1.34.0',
  critest: 'critest version: v1.34.0',
  'kube-apiserver': 'Kubernetes v1.34.12',
  'kube-controller-manager': 'Kubernetes v1.34.12',
  'kube-scheduler': 'Kubernetes v1.34.12',
  kubectl: 'Client Version: v1.34.12',
  etcd: 'etcd Version: 3.6.14',
  kwok: 'kwok version v0.7.0 go1.26.8 (linux/amd64)',
};
const TEST_TOOLS = ['crictl', 'critest', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl', 'etcd'];

describe('scripts/install-tools.mjs', function () {
  this.timeout(20_000);
  let root = '';
  let pathWithoutGo = '';

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'cri-winsim-install-'));
    mkdirSync(join(root, 'scripts'));
    copyFileSync(join(repoRoot, 'scripts', 'install-tools.mjs'), join(root, 'scripts', 'install-tools.mjs'));
    for (const m of MODULES) {
      mkdirSync(join(root, 'tools', m), { recursive: true });
      copyFileSync(join(repoRoot, 'tools', m, 'go.mod'), join(root, 'tools', m, 'go.mod'));
    }
    // A PATH with node and nothing else, so `go` is certainly missing.
    pathWithoutGo = join(root, 'path');
    mkdirSync(pathWithoutGo);
    symlinkSync(process.execPath, join(pathWithoutGo, 'node'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const run = (env: NodeJS.ProcessEnv, args: string[] = []) => spawnSync(process.execPath, [join(root, 'scripts', 'install-tools.mjs'), ...args], {
    encoding: 'utf8',
    timeout: 15_000,
    env: { HOME: process.env.HOME, PATH: pathWithoutGo, ...env },
  });

  const fakeTool = (name: string, versionLine: string) => {
    const bin = join(root, '.tools', 'bin');
    mkdirSync(bin, { recursive: true });
    const file = join(bin, name);
    writeFileSync(file, `#!/bin/sh\necho '${versionLine}'\n`);
    chmodSync(file, 0o755);
  };

  it('without Go and outside CI: exits 0 and says which suites will be skipped', () => {
    const res = run({ CI: '' });
    expect(res.status, res.stderr).to.equal(0);
    expect(res.stdout).to.contain('Go is not installed (`go` not found on PATH), so crictl, critest, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd cannot be built');
    expect(res.stdout).to.contain('the crictl and critest end-to-end suites; the node-mode suites (real control plane) will be SKIPPED');
    expect(res.stdout).not.to.contain('kwok');
  });

  it('without Go in CI: fails with a clear message', () => {
    const res = run({ CI: 'true' });
    expect(res.status).to.equal(1);
    expect(res.stderr).to.match(/ERROR: Go is not installed .* CI needs them: install Go 1\.25 or newer/);
  });

  it('keeps binaries that report the pinned version (no Go needed); kwok only with --bench', () => {
    for (const t of TEST_TOOLS) fakeTool(t, PINNED[t] as string);
    const res = run({ CI: 'true' });
    expect(res.status, res.stderr).to.equal(0);
    expect(res.stdout).to.contain(`${TEST_TOOLS.join(', ')} already in .tools/bin at their pinned versions (nothing to do)`);

    const bench = run({ CI: 'true' }, ['--bench']);
    expect(bench.status).to.equal(1);
    expect(bench.stderr).to.contain('so kwok cannot be built');
    fakeTool('kwok', PINNED.kwok as string);
    expect(run({ CI: 'true' }, ['--bench']).status).to.equal(0);
  });

  it('does not keep a binary of another version', () => {
    for (const t of TEST_TOOLS) fakeTool(t, PINNED[t] as string);
    fakeTool('kube-apiserver', 'Kubernetes v0.0.0-master+$Format:%H$');
    const res = run({ CI: 'true' });
    // It wants to rebuild kube-apiserver, and in CI without Go that is an error.
    expect(res.status).to.equal(1);
    expect(res.stderr).to.contain('so kube-apiserver cannot be built');
  });

  it('builds only the modules named', () => {
    fakeTool('crictl', PINNED.crictl as string);
    fakeTool('critest', PINNED.critest as string);
    const res = run({ CI: 'true' }, ['cri-tools']);
    expect(res.status, res.stderr).to.equal(0);
    expect(res.stdout).to.contain('crictl, critest already in .tools/bin at their pinned versions (nothing to do)');
    const bad = run({ CI: 'true' }, ['kubelet']);
    expect(bad.status).to.equal(1);
    expect(bad.stderr).to.contain('unknown module kubelet: one of cri-tools, kubernetes, etcd, kwok');
  });
});
