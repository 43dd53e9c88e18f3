import { expect } from 'chai';
import { join } from 'node:path';
import { runProcess } from '../support/process.js';
import { repoRoot } from '../support/paths.js';

describe('bench command line', function () {
  // Two node starts per test, each bounded at 20 s: mocha's default of 20 s for both is tight
  // on a busy machine.
  this.timeout(60_000);
  const script = join(repoRoot, 'dist', 'bench', 'run.js');

  it('--help lists every option with its default and starts nothing', async () => {
    const result = await runProcess(process.execPath, [script, '--help'], { killAfterMs: 20_000 });
    expect(result.code).to.equal(0);
    expect(result.stdout).to.match(/^Usage: npm run bench -- \[options\]/);
    for (const option of ['--quick', '--seconds N', '--seconds-c1 N', '--disk-settle-seconds N', '--warmup-pods N', '--image-iterations N', '--image-seconds N', '--skip-images', '--cli PATH', '--out DIR']) {
      expect(result.stdout).to.contain(option);
    }
    expect(result.stdout).to.contain('(default 60)');
    expect(result.stdout).to.contain('(default 480)');
    expect(result.stderr).to.equal('');
  });

  it('refuses an unknown option or a bad value in one line, naming it, with exit code 2', async () => {
    const unknown = await runProcess(process.execPath, [script, '--bogus'], { killAfterMs: 20_000 });
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.contain("Unknown option '--bogus'");
    expect(unknown.stderr).to.contain('(--help lists the options)');
    expect(unknown.stderr.trim().split('\n')).to.have.length(1);
    const bad = await runProcess(process.execPath, [script, '--seconds-c1', '600'], { killAfterMs: 20_000 });
    expect(bad.code).to.equal(2);
    expect(bad.stderr.trim()).to.equal('bench: --seconds-c1 600: expected a number in (0, 60] (--help lists the options)');
  });
});
