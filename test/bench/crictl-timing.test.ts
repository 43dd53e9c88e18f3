import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { timeCrictl, writeCrictlConfig } from '../../bench/crictl-timing.js';

describe('bench crictl timing', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bench-crictl-test-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a config that names the endpoint for both services', () => {
    const path = writeCrictlConfig(dir, 'unix:///tmp/x/cri.sock');
    expect(readFileSync(path, 'utf8')).to.equal('runtime-endpoint: unix:///tmp/x/cri.sock\nimage-endpoint: unix:///tmp/x/cri.sock\ntimeout: 60\n');
  });

  it('times each run of the command and passes --config first', async () => {
    const fake = join(dir, 'fake-crictl');
    const seen = join(dir, 'args');
    writeFileSync(fake, `#!/bin/sh\necho "$@" >> ${seen}\n`);
    chmodSync(fake, 0o755);
    const t = await timeCrictl(fake, '/cfg.yaml', ['ps', '-a', '-q'], 3);
    expect(t.command).to.equal('crictl ps -a -q');
    expect(t.summary.count).to.equal(3);
    expect(readFileSync(seen, 'utf8')).to.equal('--config /cfg.yaml ps -a -q\n'.repeat(3));
  });

  it('fails with the exit code and the last stderr line of a failing run', async () => {
    const fake = join(dir, 'failing-crictl');
    writeFileSync(fake, '#!/bin/sh\necho "level=warning first" >&2\necho "connect: no such file" >&2\nexit 1\n');
    chmodSync(fake, 0o755);
    let caught: unknown;
    try {
      await timeCrictl(fake, '/cfg.yaml', ['pods', '-q'], 2);
    } catch (err) {
      caught = err;
    }
    expect((caught as Error).message).to.equal('crictl --config /cfg.yaml pods -q exited 1: connect: no such file');
  });

  it('refuses a crictl that is not there', async () => {
    let caught: unknown;
    try {
      await timeCrictl(join(dir, 'nope'), '/cfg.yaml', ['version'], 1);
    } catch (err) {
      caught = err;
    }
    expect((caught as Error).message).to.match(/^crictl not found at /);
  });
});
