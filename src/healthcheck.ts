/**
 * The container image's HEALTHCHECK: one CRI Version call to the runtime's socket, as
 * `crictl version` makes, so a stale socket file left by an earlier run does not count as healthy.
 *
 *   node dist/src/healthcheck.js [unix:///run/cri-winsim/cri.sock]
 *
 * The endpoint is the argument, else CRI_WINSIM_HEALTH_ENDPOINT, else the runtime's default
 * `--listen`. Prints `<RuntimeName> <RuntimeVersion>` and exits 0, or prints why and exits 1
 * (Docker reads only the exit code and keeps the output in `docker inspect`).
 * A `kubelet` container that shares the runtime's socket reports its runtime's health.
 */
import { createCriClient, unaryCall } from './cri/proto.js';
import { DEFAULT_ENDPOINT } from './commands/runtime-defaults.js';

/** Below Docker's timeout (the image sets 5 s): a hung runtime fails the check itself. */
const CALL_TIMEOUT_MS = 3000;

async function main(): Promise<void> {
  const endpoint = process.argv[2] ?? process.env.CRI_WINSIM_HEALTH_ENDPOINT ?? DEFAULT_ENDPOINT;
  const cri = createCriClient(endpoint);
  try {
    const v = await unaryCall(cri.runtime, 'Version', { version: '' }, { timeoutMs: CALL_TIMEOUT_MS });
    process.stdout.write(`${v.runtime_name} ${v.runtime_version}\n`);
  } finally {
    cri.close();
  }
}

main().catch((err: unknown) => {
  const text = err instanceof Error ? err.message : String(err);
  process.stderr.write(`cri-winsim healthcheck: ${text}\n`);
  process.exitCode = 1;
});
