// "Every command in the docs runs as written": each ```sh runnable block of README.md and
// docs/*.md runs, in document order, in a temporary copy of the repository, with a runtime
// started for the documents whose blocks need one (convention: test/docs/runnable-blocks.ts and
// the top of docs/crictl.md).
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { crictlConfigFile } from '../support/crictl.js';
import { repoRoot, requireCriTool } from '../support/paths.js';
import { processRunning } from '../support/process.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import {
  BlockSession,
  documentationFiles,
  extractRunnableBlocks,
  makeWorkingCopy,
  type RunnableBlock,
} from './runnable-blocks.js';

/** One block may take this long; the blocks are meant to be quick commands. */
const BLOCK_TIMEOUT_MS = 30_000;
/** Keeps the documentation's runnable part small enough to run on every test run. */
const MAX_RUNNABLE_BLOCKS = 40;

describe('runnable blocks: the convention', function () {
  it('finds only "sh runnable" blocks, with the needs of the marker before them', function () {
    const md = [
      '# T', '', '```sh', 'echo illustration', '```', '',
      '```sh runnable', 'echo one', '```', '',
      '<!-- runnable: needs-runtime -->', '```sh runnable', 'crictl version', '', 'crictl info', '```', '',
      '<!-- runnable: needs-crictl -->', '```sh runnable', 'crictl --version', '```',
    ].join('\n');
    const blocks = extractRunnableBlocks(md, 'T.md');
    expect(blocks.map((b) => ({ line: b.line, needs: [...b.needs].sort(), code: b.code }))).to.deep.equal([
      { line: 7, needs: [], code: 'echo one' },
      { line: 12, needs: ['needs-crictl', 'needs-runtime'], code: 'crictl version\n\ncrictl info' },
      { line: 19, needs: ['needs-crictl'], code: 'crictl --version' },
    ]);
  });

  it('names file and line for a broken marker or block', function () {
    expect(() => extractRunnableBlocks('<!-- runnable: needs-network -->\n```sh runnable\nx\n```\n', 'a.md')).to.throw(
      'a.md:1: unknown runnable need "needs-network" (known: needs-runtime, needs-crictl)',
    );
    expect(() => extractRunnableBlocks('<!-- runnable: needs-runtime -->\n```sh\nx\n```\n', 'b.md')).to.throw(
      'b.md:1: runnable marker is followed by a block that is not "sh runnable"',
    );
    expect(() => extractRunnableBlocks('<!-- runnable: -->\ntext\n```sh runnable\nx\n```\n', 'c.md')).to.throw(
      'c.md:1: runnable marker is not directly followed by a code block',
    );
    expect(() => extractRunnableBlocks('```bash runnable\nx\n```\n', 'd.md')).to.throw(
      'd.md:1: "bash runnable": runnable blocks are opened with exactly "sh runnable"',
    );
    expect(() => extractRunnableBlocks('```sh runnable\nx\n', 'e.md')).to.throw('e.md:1: code block is never closed');
  });

  it('runs blocks in one session: state carries over, a failing command fails its block', async function () {
    this.timeout(20_000);
    const dir = await makeWorkingCopy();
    const session = new BlockSession(dir, {});
    try {
      expect(await session.run('GREETING=hello\necho "$GREETING" > greeting.txt', 5_000)).to.include({ exitCode: 0, timedOut: false });
      const second = await session.run('cat greeting.txt\ntest "$GREETING" = hello\nfalse\necho not reached', 5_000);
      expect(second.exitCode).to.equal(1);
      expect(second.output).to.equal('hello\n');
    } finally {
      await session.stop();
      await rm(dir, { recursive: true, force: true });
    }
    expect(existsSync(dir)).to.equal(false);
  });

  it('kills a block that overruns its time, with anything it started', async function () {
    this.timeout(20_000);
    const dir = await makeWorkingCopy();
    const session = new BlockSession(dir, {});
    try {
      const res = await session.run('sleep 30 &\necho $! > bg.pid\nsleep 30', 500);
      expect(res.timedOut).to.equal(true);
      const bgPid = Number(readFileSync(join(dir, 'bg.pid'), 'utf8'));
      // A signal is delivered asynchronously: give the kernel a moment (bounded).
      for (let i = 0; i < 40 && processRunning(bgPid); i++) await new Promise((r) => setTimeout(r, 50));
      expect(processRunning(bgPid), `the background sleep (pid ${bgPid}) was killed`).to.equal(false);
    } finally {
      await session.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('runnable blocks of the documentation', function () {
  const files = documentationFiles();
  const byFile = new Map<string, RunnableBlock[]>(
    files.map((f) => [f, extractRunnableBlocks(readFileSync(join(repoRoot, f), 'utf8'), f)]),
  );
  const total = [...byFile.values()].reduce((n, b) => n + b.length, 0);

  it(`has a moderate number of runnable blocks (at most ${MAX_RUNNABLE_BLOCKS})`, function () {
    expect(total).to.be.greaterThan(0);
    expect(total).to.be.at.most(MAX_RUNNABLE_BLOCKS);
  });

  for (const [file, blocks] of byFile) {
    if (blocks.length === 0) continue;
    describe(file, function () {
      this.timeout(BLOCK_TIMEOUT_MS + 20_000);
      let dir = '';
      let rt: RuntimeHandle | undefined;
      let session: BlockSession | undefined;
      let failed: string | undefined;

      before(async function () {
        dir = await makeWorkingCopy();
        const env: NodeJS.ProcessEnv = {};
        if (blocks.some((b) => b.needs.has('needs-runtime'))) {
          // Skips the document outside CI when crictl is missing; fails in CI.
          requireCriTool(this, 'crictl');
          rt = await startRuntime({ name: `docs ${file}` });
          // What a reader sets after starting the runtime (docs/crictl.md says so).
          env.CONTAINER_RUNTIME_ENDPOINT = rt.endpoint;
          env.IMAGE_SERVICE_ENDPOINT = rt.endpoint;
          // Instead of /etc/crictl.yaml, which may not exist (crictl warns) or point elsewhere.
          env.CRI_CONFIG_FILE = crictlConfigFile(rt);
        }
        session = new BlockSession(dir, env);
      });

      after(async function () {
        await session?.stop();
        await rt?.stop();
        if (dir !== '') await rm(dir, { recursive: true, force: true });
      });

      for (const block of blocks) {
        const firstLine = block.code.split('\n').find((l) => l.trim() !== '' && !l.trim().startsWith('#')) ?? '';
        it(`${file}:${block.line} ${firstLine.slice(0, 60)}`, async function () {
          if (block.needs.has('needs-crictl')) requireCriTool(this, 'crictl');
          if (failed !== undefined) throw new Error(`not run: the block at ${failed} failed and the session ended`);
          const res = await session!.run(block.code, BLOCK_TIMEOUT_MS);
          if (res.timedOut || res.exitCode !== 0) failed = `${file}:${block.line}`;
          const why = res.timedOut ? `did not finish within ${BLOCK_TIMEOUT_MS} ms` : `exited ${res.exitCode}`;
          expect(res.timedOut || res.exitCode !== 0, `${file}:${block.line} ${why}\n--- block ---\n${block.code}\n--- output ---\n${res.output}${rt ? `\n--- runtime ---\n${rt.output().split('\n').slice(-20).join('\n')}` : ''}`).to.equal(false);
        });
      }
    });
  }
});
