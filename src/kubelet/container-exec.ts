/**
 * `kubelet exec`: a command in a running container. Today over ExecSync (the output comes back
 * when the command ends; no stdin, no TTY); the one place to switch to the runtime's streaming
 * Exec once it exists, so the command line does not change.
 */
import { unaryCall, type CriClient } from '../cri/proto.js';
import { CommandTimedOutError, type ExecInContainer } from './probes.js';
import { grpcErrorString } from './cri-errors.js';

export interface ExecRequest {
  readonly containerId: string;
  readonly command: readonly string[];
  /** ExecSync's own timeout, in seconds (0: none). */
  readonly timeoutSeconds?: number;
  /** Deadline of the call itself. */
  readonly callTimeoutMs?: number;
}

export interface ExecOutcome {
  readonly exitCode: number;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
}

export async function execInContainer(cri: CriClient, request: ExecRequest): Promise<ExecOutcome> {
  const timeout = request.timeoutSeconds ?? 0;
  const response = await unaryCall(
    cri.runtime,
    'ExecSync',
    { container_id: request.containerId, cmd: [...request.command], timeout },
    // The call waits for the command: its deadline is the command's plus the call's own.
    { timeoutMs: (timeout > 0 ? timeout * 1000 : 3_600_000) + (request.callTimeoutMs ?? 30_000) },
  );
  return { exitCode: response.exit_code, stdout: Buffer.from(response.stdout), stderr: Buffer.from(response.stderr) };
}

/**
 * The kubelet's RunInContainer for exec probes (kuberuntime_container.go): ExecSync with the probe's
 * timeout, stdout then stderr as one output. A command that outlives its timeout (the runtime's
 * DeadlineExceeded) is cri-client's ErrCommandTimedOut, with its text.
 */
export function runInContainer(cri: CriClient, callTimeoutMs: number): ExecInContainer {
  return async (containerId, command, timeoutSeconds) => {
    try {
      const out = await execInContainer(cri, { containerId, command, timeoutSeconds, callTimeoutMs });
      return { exitCode: out.exitCode, output: Buffer.concat([out.stdout, out.stderr]) };
    } catch (err) {
      if ((err as { code?: number }).code === 4) throw new CommandTimedOutError(`command timed out: ${JSON.stringify(command.join(' '))} timed out after ${timeoutSeconds}s`);
      // Any other refusal is an error of the probe, worded as Go prints a gRPC status.
      if (typeof (err as { code?: unknown }).code === 'number') throw new Error(grpcErrorString(err), { cause: err });
      throw err;
    }
  };
}
