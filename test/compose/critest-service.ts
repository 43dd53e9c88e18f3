// The compose `tests` service: critest (the CRI validation suite) with the project's spec
// selection (test/e2e/critest-specs.ts) against an already running runtime, usually the shared
// socket of docker-compose.yml. Exits with critest's exit code.
//
//   node dist/test/compose/critest-service.js --runtime-endpoint unix:///run/cri-winsim/cri.sock
//
// critest creates pod log directories under TMPDIR that the runtime writes into, so TMPDIR must
// be a directory the runtime sees at the same path (compose: the shared pod-logs volume).
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { focusRegex } from '../e2e/critest-specs.js';
import { criToolPath } from '../support/paths.js';

/** The images critest uses for its containers; the runtime preloads them in its simulated registry. */
export const CRITEST_TEST_IMAGES = {
  defaultTestContainerImage: 'registry.k8s.io/e2e-test-images/busybox:1.29-2',
  webServerTestImage: 'registry.k8s.io/e2e-test-images/nginx:1.14-2',
};

/** Default ginkgo budget for the whole run. */
const DEFAULT_TIMEOUT_SECONDS = 360;

export interface CritestServiceOptions {
  runtimeEndpoint: string;
  /** The critest binary (default: .tools/bin/critest). */
  critest?: string;
  timeoutSeconds?: number;
}

/** critest's arguments for a run against `runtimeEndpoint`, with its images file at `imagesFile`. */
export function critestArguments(runtimeEndpoint: string, imagesFile: string, timeoutSeconds = DEFAULT_TIMEOUT_SECONDS): string[] {
  return [
    `-runtime-endpoint=${runtimeEndpoint}`,
    `-image-endpoint=${runtimeEndpoint}`,
    // Fail fast when the socket is not there instead of critest's 5-minute default.
    '-runtime-service-timeout=20s',
    '-image-service-timeout=20s',
    `-test-images-file=${imagesFile}`,
    `-ginkgo.focus=${focusRegex()}`,
    '-ginkgo.no-color',
    `-ginkgo.timeout=${timeoutSeconds}s`,
  ];
}

/** Runs critest once; resolves with its exit code (1 when it was killed by a signal). */
export async function runCritestService(options: CritestServiceOptions): Promise<number> {
  const bin = options.critest ?? criToolPath('critest');
  if (bin === undefined) throw new Error('critest is not installed in .tools/bin (run `node scripts/install-tools.mjs`; it needs Go)');
  if (!options.runtimeEndpoint.startsWith('unix://')) {
    throw new Error(`--runtime-endpoint must be unix:///path/to.sock, not ${JSON.stringify(options.runtimeEndpoint)}`);
  }
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  const workDir = await mkdtemp(join(tmpdir(), 'cri-winsim-critest-'));
  try {
    const imagesFile = join(workDir, 'critest-images.json');
    // critest reads the file as YAML, of which JSON is a subset.
    await writeFile(imagesFile, `${JSON.stringify(CRITEST_TEST_IMAGES, null, 2)}\n`);
    const args = critestArguments(options.runtimeEndpoint, imagesFile, timeoutSeconds);
    return await new Promise<number>((resolve, reject) => {
      // critest's own temp dirs (pod log directories) go inside the work dir, so they are removed with it.
      const child = spawn(bin, args, { cwd: workDir, env: { ...process.env, TMPDIR: workDir }, stdio: 'inherit' });
      // ginkgo enforces its timeout; this is the backstop if critest hangs anyway.
      const timer = setTimeout(() => child.kill('SIGKILL'), (timeoutSeconds + 30) * 1000);
      child.once('error', (err) => { clearTimeout(timer); reject(err); });
      child.once('close', (code) => { clearTimeout(timer); resolve(code ?? 1); });
    });
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'runtime-endpoint': { type: 'string' },
      critest: { type: 'string' },
      'timeout-seconds': { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  const runtimeEndpoint = values['runtime-endpoint'];
  if (runtimeEndpoint === undefined) throw new Error('--runtime-endpoint unix:///path/to.sock is required');
  const timeout = values['timeout-seconds'];
  const timeoutSeconds = timeout === undefined ? undefined : Number(timeout);
  if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && timeoutSeconds > 0)) {
    throw new Error(`--timeout-seconds must be a positive integer, not ${JSON.stringify(timeout)}`);
  }
  process.exitCode = await runCritestService({
    runtimeEndpoint,
    ...(values.critest === undefined ? {} : { critest: values.critest }),
    ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
  });
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`critest-service: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
