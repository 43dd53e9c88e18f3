// Runnable code blocks in the documentation (README.md, docs/*.md), and a runner that executes
// them as a reader would. The convention (documented at the top of docs/crictl.md):
//
//   <!-- runnable: needs-runtime -->      optional, on the line(s) just before the fence
//   ```sh runnable
//   crictl version
//   ```
//
// - Only fences opened with exactly "```sh runnable" run; other blocks are illustrations.
// - The blocks of one document run in order in one bash session (`set -euo pipefail`), so
//   variables and files carry from block to block, in a temporary copy of the repository.
// - `cri-winsim` and `crictl` are on PATH. `needs-runtime`: a `cri-winsim runtime` is running
//   and CONTAINER_RUNTIME_ENDPOINT / IMAGE_SERVICE_ENDPOINT point at it (one per document).
//   `needs-crictl`: the block calls crictl (implied by needs-runtime); without crictl the block
//   is skipped, or fails in CI.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, lstatSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { NODE_FLAGS } from '../../src/tuning/node-flags.js';
import { cliPath, repoRoot, toolsBinDir } from '../support/paths.js';

export type Need = 'needs-runtime' | 'needs-crictl';
const NEEDS: readonly Need[] = ['needs-runtime', 'needs-crictl'];

export interface RunnableBlock {
  /** The document, relative to the repository (`docs/crictl.md`). */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  needs: ReadonlySet<Need>;
  code: string;
}

const FENCE_OPEN = /^(`{3,}|~{3,})(.*)$/;
const MARKER = /^<!--\s*runnable:(.*?)-->\s*$/;

/**
 * The runnable blocks of a markdown document. Throws, naming file and line, on a marker with an
 * unknown need, a marker not followed by a runnable block, or an unterminated fence.
 */
export function extractRunnableBlocks(markdown: string, file: string): RunnableBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: RunnableBlock[] = [];
  let pending: { needs: Set<Need>; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    const marker = MARKER.exec(text.trim());
    if (marker) {
      const needs = new Set<Need>();
      for (const word of marker[1]!.trim().split(/\s+/).filter((w) => w !== '')) {
        if (!NEEDS.includes(word as Need)) {
          throw new Error(`${file}:${i + 1}: unknown runnable need "${word}" (known: ${NEEDS.join(', ')})`);
        }
        needs.add(word as Need);
      }
      pending = { needs, line: i + 1 };
      continue;
    }
    const fence = FENCE_OPEN.exec(text);
    if (fence) {
      const info = fence[2]!.trim();
      const close = lines.findIndex((l, j) => j > i && l.trim() === fence[1]);
      if (close < 0) throw new Error(`${file}:${i + 1}: code block is never closed`);
      const runnable = info === 'sh runnable';
      if (pending !== undefined && !runnable) {
        throw new Error(`${file}:${pending.line}: runnable marker is followed by a block that is not "sh runnable"`);
      }
      if (runnable) {
        const needs = new Set<Need>(pending?.needs ?? []);
        if (needs.has('needs-runtime')) needs.add('needs-crictl');
        blocks.push({ file, line: i + 1, needs, code: lines.slice(i + 1, close).join('\n') });
      } else if (/\brunnable\b/.test(info)) {
        throw new Error(`${file}:${i + 1}: "${info}": runnable blocks are opened with exactly "sh runnable"`);
      }
      pending = undefined;
      i = close;
      continue;
    }
    if (pending !== undefined && text.trim() !== '') {
      throw new Error(`${file}:${pending.line}: runnable marker is not directly followed by a code block`);
    }
  }
  if (pending !== undefined) throw new Error(`${file}:${pending.line}: runnable marker at the end of the document`);
  return blocks;
}

/** README.md (when it exists) and docs/*.md, relative to the repository. */
export function documentationFiles(): string[] {
  const files: string[] = [];
  if (readdirSync(repoRoot).includes('README.md')) files.push('README.md');
  for (const f of readdirSync(join(repoRoot, 'docs')).sort()) if (f.endsWith('.md')) files.push(`docs/${f}`);
  return files;
}

/** Top-level entries that are linked into the working copy rather than copied (large or built). */
const LINKED = ['node_modules', 'dist', '.tools'];
const SKIPPED = ['.git'];

function isPlain(path: string): boolean {
  const st = lstatSync(path);
  return st.isFile() || st.isDirectory() || st.isSymbolicLink();
}

/** A temporary copy of the repository for the blocks to work in; build output is linked. */
export async function makeWorkingCopy(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-docs-'));
  try {
    for (const entry of readdirSync(repoRoot)) {
      if (SKIPPED.includes(entry)) continue;
      if (LINKED.includes(entry)) {
        symlinkSync(join(repoRoot, entry), join(dir, entry));
        continue;
      }
      // Sockets, FIFOs and devices (a runtime someone left running in the tree) are left out.
      cpSync(join(repoRoot, entry), join(dir, entry), { recursive: true, filter: (src) => isPlain(src) });
    }
    // `cri-winsim` as an installed package would provide it (package.json "bin"): this node, with
    // the flags of the command's #! line.
    const bin = join(dir, '.docs-bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'cri-winsim'), `#!/bin/sh\nexec "${process.execPath}" ${NODE_FLAGS.join(' ')} "${cliPath}" "$@"\n`);
    chmodSync(join(bin, 'cri-winsim'), 0o755);
    return dir;
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

export interface BlockResult {
  exitCode: number | null;
  timedOut: boolean;
  output: string;
}

const DONE = '__cri_winsim_docs_block_done__';

/**
 * One bash session for a document's blocks. Each block is sourced from a file with its output
 * captured; `set -e` ends the session on the first failing command, which is that block's failure.
 * The session is its own process group, so stop() also ends anything a block left running.
 */
export class BlockSession {
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  private stdoutBuffer = '';
  private waiting: ((line: string) => void) | undefined;
  private count = 0;

  constructor(readonly workDir: string, env: NodeJS.ProcessEnv) {
    const path = [join(workDir, '.docs-bin'), toolsBinDir, process.env.PATH ?? ''].join(delimiter);
    this.child = spawn('bash', ['--noprofile', '--norc'], {
      cwd: workDir,
      env: { ...process.env, ...env, PATH: path },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code) => resolve(code));
      this.child.once('error', () => resolve(null));
    });
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdoutBuffer += chunk;
      const at = this.stdoutBuffer.indexOf(`${DONE}\n`);
      if (at >= 0 && this.waiting) {
        this.stdoutBuffer = this.stdoutBuffer.slice(at + DONE.length + 1);
        this.waiting(DONE);
      }
    });
    this.child.stderr!.resume();
    this.child.stdin!.write('set -euo pipefail\n');
  }

  async run(code: string, timeoutMs: number): Promise<BlockResult> {
    const n = ++this.count;
    const script = join(this.workDir, `.docs-block-${n}.sh`);
    const log = join(this.workDir, `.docs-block-${n}.log`);
    writeFileSync(script, `${code}\n`);
    const readLog = () => readFile(log, 'utf8').catch(() => '');
    let timer: NodeJS.Timeout | undefined;
    const done = new Promise<'done'>((resolve) => { this.waiting = () => resolve('done'); });
    // stdin from /dev/null: a command that reads stdin must not eat the session's next commands.
    this.child.stdin!.write(`source '${script}' > '${log}' 2>&1 < /dev/null\necho ${DONE}\n`);
    const outcome = await Promise.race([
      done,
      this.exited.then(() => 'exited' as const),
      new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs); }),
    ]).finally(() => { clearTimeout(timer); this.waiting = undefined; });
    if (outcome === 'timeout') {
      await this.stop();
      return { exitCode: null, timedOut: true, output: await readLog() };
    }
    if (outcome === 'exited') return { exitCode: (await this.exited) ?? 1, timedOut: false, output: await readLog() };
    return { exitCode: 0, timedOut: false, output: await readLog() };
  }

  /** Ends the session and every process it started. */
  async stop(): Promise<void> {
    const pid = this.child.pid;
    if (pid !== undefined) {
      try { process.kill(-pid, 'SIGTERM'); } catch { /* already gone */ }
      const timer = setTimeout(() => { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }, 3000);
      await this.exited;
      clearTimeout(timer);
      // Background jobs of the group that outlived bash.
      try { process.kill(-pid, 'SIGKILL'); } catch { /* none left */ }
    }
  }
}
