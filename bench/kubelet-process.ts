/**
 * The fake kubelet's throughput run in a process of its own, started with the Node flags the
 * `cri-winsim` command starts with (src/tuning/node-flags.ts), as users start `cri-winsim kubelet`: the
 * bench's own process runs with the load generator's V8 flags (load-generator.ts).
 *
 * Child side: `node dist/bench/kubelet-process.js <endpoint> <work dir> <pods>` (forked by
 * kubeletThroughputInChild; it sends one result or error over IPC and exits).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../src/tuning/node-flags.js';
import { kubeletThroughput, type KubeletRun } from './kubelet-throughput.js';

type ToParent = { kind: 'result'; run: KubeletRun } | { kind: 'error'; message: string };

/** Longest a run may take, fixtures included, before the child is killed. */
const DEFAULT_TIMEOUT_MS = 120_000;

export async function kubeletThroughputInChild(endpoint: string, workDir: string, count: number, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<KubeletRun> {
  const child = fork(fileURLToPath(import.meta.url), [endpoint, workDir, String(count)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [...NODE_FLAGS],
  });
  // 'close' comes after the IPC channel has closed, so after any message the child sent.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  let timer: NodeJS.Timeout | undefined;
  try {
    const answer = await new Promise<ToParent>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`the kubelet run of ${count} pods did not finish within ${timeoutMs} ms`)), timeoutMs);
      child.once('message', (m: ToParent) => resolve(m));
      child.once('error', reject);
      void exited.then((code) => reject(new Error(`the kubelet process exited with code ${code} before it reported`)));
    });
    if (answer.kind === 'error') throw new Error(answer.message);
    return answer.run;
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  }
}

async function childMain(endpoint: string, workDir: string, count: number): Promise<void> {
  let answer: ToParent;
  try {
    answer = { kind: 'result', run: await kubeletThroughput(endpoint, workDir, count) };
  } catch (err) {
    answer = { kind: 'error', message: err instanceof Error ? err.message : String(err) };
  }
  process.send?.(answer, () => process.disconnect());
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send !== undefined) {
  const [endpoint, workDir, pods] = process.argv.slice(2);
  const count = Number(pods);
  if (!endpoint || !workDir || !Number.isInteger(count) || count < 1) {
    process.stderr.write('usage: kubelet-process.js <endpoint> <work dir> <pods>\n');
    process.exit(2);
  }
  void childMain(endpoint, workDir, count);
}
