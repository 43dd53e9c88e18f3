import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { hasLoadGeneratorFlags, LOAD_GENERATOR_NODE_ARGS } from '../../bench/load-generator.js';
import { kubeletThroughputInChild } from '../../bench/kubelet-process.js';
import { runProcess } from '../support/process.js';
import { repoRoot } from '../support/paths.js';
import { startRuntime } from '../support/runtime.js';

const loadGeneratorModule = pathToFileURL(join(repoRoot, 'dist', 'bench', 'load-generator.js')).href;

/**
 * A script that starts itself again as the load generator: the second run prints what it got
 * (its execArgv, its arguments, its parent) and, with "wait", waits to be signalled.
 */
const FIXTURE = `
import { asLoadGenerator } from ${JSON.stringify(loadGeneratorModule)};
if (await asLoadGenerator()) {
  const args = process.argv.slice(2);
  process.stdout.write(JSON.stringify({ execArgv: process.execArgv, args, parent: process.ppid }) + '\\n');
  if (args[0] === 'wait') setInterval(() => {}, 1000);
  else process.exitCode = 7;
}
`;

describe('bench load generator flags', function () {
  this.timeout(30_000);
  let dir: string;
  let script: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-loadgen-'));
    script = join(dir, 'fixture.mjs');
    await writeFile(script, FIXTURE);
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('knows whether a process has them', () => {
    expect(LOAD_GENERATOR_NODE_ARGS).to.deep.equal(['--single-threaded-gc']);
    expect(hasLoadGeneratorFlags(['--single-threaded-gc'])).to.equal(true);
    expect(hasLoadGeneratorFlags(['--max-old-space-size=100'])).to.equal(false);
    expect(hasLoadGeneratorFlags([])).to.equal(false);
  });

  it('runs the script again with them, the same arguments and its own flags, and leaves with its exit code', async () => {
    const result = await runProcess(process.execPath, ['--max-old-space-size=200', script, 'one', 'two words'], { killAfterMs: 20_000 });
    expect(result.stderr).to.equal('');
    expect(result.code).to.equal(7);
    const seen = JSON.parse(result.stdout) as { execArgv: string[]; args: string[] };
    expect(seen.execArgv).to.deep.equal(['--single-threaded-gc', '--max-old-space-size=200']);
    expect(seen.args).to.deep.equal(['one', 'two words']);
  });

  it('passes SIGTERM on to the run it started and leaves with 128 + its number', async () => {
    let signalled = false;
    const result = await runProcess(process.execPath, [script, 'wait'], {
      killAfterMs: 20_000,
      onStdout: (chunk) => {
        if (signalled) return;
        signalled = true;
        // The run with the flags names its parent: the process the user started.
        process.kill((JSON.parse(chunk) as { parent: number }).parent, 'SIGTERM');
      },
    });
    expect(result.timedOut).to.equal(false);
    expect(result.code).to.equal(143);
  });
});

describe('bench fake kubelet in its own process', function () {
  this.timeout(60_000);

  it('runs the pods through the kubelet in a child with Node defaults and reports them', async () => {
    const rt = await startRuntime();
    try {
      const run = await kubeletThroughputInChild(rt.endpoint, join(rt.dir, 'kubelet'), 3);
      expect(run.pods).to.equal(3);
      expect(run.running, JSON.stringify(run.examples)).to.equal(3);
      expect(run.notRunning).to.deep.equal({});
      expect(run.elapsedMs).to.be.greaterThan(0);
    } finally {
      await rt.stop();
    }
  });

  it('passes on the error the run in the child failed with', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'winsim-kubelet-proc-'));
    try {
      const notADirectory = join(dir, 'file');
      await writeFile(notADirectory, '');
      let error: Error | undefined;
      await kubeletThroughputInChild('unix:///nonexistent.sock', join(notADirectory, 'kubelet'), 2).catch((err: Error) => (error = err));
      expect(error?.message).to.match(/^ENOTDIR: not a directory, mkdir '.*\/file\/kubelet'$/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
