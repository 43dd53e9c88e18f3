// scripts/install-cri-tools.mjs, run on a copy of the files it reads: it keeps binaries that
// report the pinned version, and without Go it skips (exit 0, saying why) outside CI but fails
// in CI. Building itself is exercised by `npm test`'s pretest.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../support/paths.js';

describe('scripts/install-cri-tools.mjs', function () {
  this.timeout(20_000);
  let root = '';
  let pathWithoutGo = '';

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'cri-winsim-install-'));
    mkdirSync(join(root, 'scripts'));
    mkdirSync(join(root, 'tools', 'cri-tools'), { recursive: true });
    copyFileSync(join(repoRoot, 'scripts', 'install-cri-tools.mjs'), join(root, 'scripts', 'install-cri-tools.mjs'));
    copyFileSync(join(repoRoot, 'tools', 'cri-tools', 'go.mod'), join(root, 'tools', 'cri-tools', 'go.mod'));
    // A PATH with node and nothing else, so `go` is certainly missing.
    pathWithoutGo = join(root, 'path');
    mkdirSync(pathWithoutGo);
    symlinkSync(process.execPath, join(pathWithoutGo, 'node'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const run = (env: NodeJS.ProcessEnv) => spawnSync(process.execPath, [join(root, 'scripts', 'install-cri-tools.mjs')], {
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

  it('without Go and outside CI: exits 0 and says the crictl/critest suites will be skipped', () => {
    const res = run({ CI: '' });
    expect(res.status, res.stderr).to.equal(0);
    expect(res.stdout).to.contain('Go is not installed');
    expect(res.stdout).to.contain('suites will be SKIPPED');
  });

  it('without Go in CI: fails with a clear message', () => {
    const res = run({ CI: 'true' });
    expect(res.status).to.equal(1);
    expect(res.stderr).to.match(/ERROR: Go is not installed .* CI needs them/);
  });

  it('keeps binaries that report the pinned version (no Go needed)', () => {
    fakeTool('crictl', 'crictl version v1.34.0');
    fakeTool('critest', 'critest version: v1.34.0');
    const res = run({ CI: 'true' });
    expect(res.status, res.stderr).to.equal(0);
    expect(res.stdout).to.contain('crictl and critest v1.34.0 already in .tools/bin (nothing to do)');
  });

  it('does not keep a binary of another version', () => {
    fakeTool('crictl', 'crictl version v1.33.0');
    fakeTool('critest', 'critest version: v1.34.0');
    const res = run({ CI: 'true' });
    // It wants to rebuild crictl, and in CI without Go that is an error.
    expect(res.status).to.equal(1);
    expect(res.stderr).to.contain('Go is not installed');
  });
});
