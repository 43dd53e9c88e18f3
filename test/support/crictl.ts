// Runs the real crictl against a runtime started by startRuntime(). Each call names the endpoint,
// the per-call timeout and a config file in the runtime's temp dir, and drops crictl's
// environment variables, so neither /etc/crictl.yaml nor the caller's environment matters.
import { runProcess, type ProcessResult } from './process.js';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { criToolPath } from './paths.js';
import type { RuntimeHandle } from './runtime.js';

export interface CrictlOptions {
  /** crictl's own per-RPC timeout (its --timeout), default '10s'. */
  callTimeout?: string;
  /** Kill crictl after this long (default 30 s); a killed run is reported as such. */
  killAfterMs?: number;
  /** When true (default), a non-zero exit throws with the command and its output. */
  check?: boolean;
  /** Called with every chunk of stdout as it arrives (for `logs -f`). */
  onStdout?: (chunk: string) => void;
}

export type CrictlResult = ProcessResult;

type Target = Pick<RuntimeHandle, 'endpoint' | 'dir'>;

/** The config file crictl reads instead of /etc/crictl.yaml (written once per runtime dir). */
export function crictlConfigFile(rt: Target, callTimeoutSeconds = 10): string {
  const file = join(rt.dir, 'crictl.yaml');
  if (!existsSync(file)) {
    writeFileSync(file, [
      `runtime-endpoint: ${rt.endpoint}`,
      `image-endpoint: ${rt.endpoint}`,
      `timeout: ${callTimeoutSeconds}`,
      'debug: false',
      'pull-image-on-create: false',
      '',
    ].join('\n'));
  }
  return file;
}

/** The crictl binary; throws when it is missing (suites check with requireCriTool first). */
function crictlBinary(): string {
  const bin = criToolPath('crictl');
  if (!bin) throw new Error('crictl is not installed in .tools/bin (run `node scripts/install-tools.mjs`)');
  return bin;
}

export async function runCrictl(rt: Target, args: string[], opts: CrictlOptions = {}): Promise<CrictlResult> {
  const bin = crictlBinary();
  const callTimeout = opts.callTimeout ?? '10s';
  const killAfterMs = opts.killAfterMs ?? 30_000;
  const check = opts.check ?? true;
  const fullArgs = ['--config', crictlConfigFile(rt), '-r', rt.endpoint, '-i', rt.endpoint, '--timeout', callTimeout, ...args];
  const command = `crictl ${args.join(' ')}`;
  const env = { ...process.env };
  for (const v of ['CRI_CONFIG_FILE', 'CONTAINER_RUNTIME_ENDPOINT', 'IMAGE_SERVICE_ENDPOINT']) delete env[v];

  const result = await runProcess(bin, fullArgs, { cwd: rt.dir, env, killAfterMs, command, ...(opts.onStdout ? { onStdout: opts.onStdout } : {}) });
  if (check && (result.code !== 0 || result.timedOut)) {
    throw new Error(`\`${command}\` ${result.timedOut ? `was killed after ${killAfterMs} ms` : `exited ${result.code ?? result.signal}`}\n` +
      `stdout: ${result.stdout.trim() || '(empty)'}\nstderr: ${result.stderr.trim() || '(empty)'}`);
  }
  return result;
}

/** Runs crictl and parses its stdout as JSON (for `-o json` and the inspect commands). */
export async function crictlJson<T = any>(rt: Target, args: string[], opts: CrictlOptions = {}): Promise<T> {
  const res = await runCrictl(rt, args, opts);
  try {
    return JSON.parse(res.stdout) as T;
  } catch {
    throw new Error(`\`${res.command}\` did not print JSON:\n${res.stdout}\nstderr: ${res.stderr}`);
  }
}
