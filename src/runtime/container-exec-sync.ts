import type { ExecSyncRequest__Output } from '../generated/runtime/v1/ExecSyncRequest.js';
import type { ExecSyncResponse } from '../generated/runtime/v1/ExecSyncResponse.js';
import { executionTarget, processEnvironment } from './container-process.js';
import { RuntimeError } from './errors.js';
import { CommandNotFoundError, SimulatedProcess } from '../emulator/simulated-process.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerState, containerStateName } from './store/container-store.js';
import type { RpcHandlers } from './rpc.js';
import { nonNegativeSeconds, requireElements, requireField } from './validation/request.js';

/** The most output ExecSync keeps per stream (the kubelet's limit is 16 MiB). */
export const MAX_EXEC_OUTPUT_BYTES = 16 * 1024 * 1024;

/** Nominal CPU an exec'd command uses while it runs, in cores (stats). */
const EXEC_CPU_LOAD = 0.05;

/**
 * ExecSync: runs the command in the container through the same emulator as the init process,
 * capturing stdout and stderr. The runtime enforces the timeout itself: the process is killed
 * and the call fails with DeadlineExceeded.
 */
export async function execSync(ctx: RuntimeContext, req: ExecSyncRequest__Output): Promise<ExecSyncResponse> {
  requireField(req.container_id, 'container_id');
  requireElements(req.cmd, 'cmd');
  const timeoutSeconds = nonNegativeSeconds(req.timeout, 'timeout');
  const container = ctx.containers.mustFind(req.container_id);
  if (container.status.state !== ContainerState.RUNNING) {
    throw new RuntimeError('FailedPrecondition', `container ${container.id} is in ${containerStateName(container.status.state)} state: exec needs a running container`);
  }

  const stdout = new BoundedBuffer(MAX_EXEC_OUTPUT_BYTES);
  const stderr = new BoundedBuffer(MAX_EXEC_OUTPUT_BYTES);
  let process: SimulatedProcess;
  try {
    process = SimulatedProcess.start({
      registry: ctx.commands,
      clock: ctx.clock,
      target: executionTarget(ctx, container),
      argv: req.cmd,
      env: processEnvironment(ctx, container),
      io: { stdout: (t) => stdout.append(t), stderr: (t) => stderr.append(t) },
    });
  } catch (err) {
    if (err instanceof CommandNotFoundError) {
      throw new RuntimeError('Unknown', `failed to exec in container ${container.id}: OCI runtime exec failed: unable to start container process: ${err.message}: unknown`);
    }
    throw err;
  }
  (container.live.execs ??= new Set()).add(process);
  let timer: NodeJS.Timeout | undefined;
  try {
    const outcome = await Promise.race([
      process.exited,
      ...(timeoutSeconds > 0
        ? [new Promise<'timeout'>((resolve) => {
            timer = setTimeout(() => resolve('timeout'), Math.min(timeoutSeconds * 1000, 2_000_000_000));
          })]
        : []),
    ]);
    if (outcome === 'timeout') {
      process.kill('SIGKILL');
      await process.exited;
      throw new RuntimeError(
        'DeadlineExceeded',
        `command ${JSON.stringify(req.cmd.join(' '))} in container ${container.id} timed out after ${timeoutSeconds}s: the runtime killed it`,
      );
    }
    return { stdout: stdout.toBuffer(), stderr: stderr.toBuffer(), exit_code: outcome.exitCode };
  } finally {
    clearTimeout(timer);
    container.live.execs?.delete(process);
    const ran = (process.exit?.finishedAtNanos ?? ctx.clock.nowNanos()) - process.startedAtNanos;
    container.live.execCpuNanos += BigInt(Math.round(Number(ran) * EXEC_CPU_LOAD));
  }
}

/** Collects text up to a byte limit, dropping the rest. */
class BoundedBuffer {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit: number) {}

  append(text: string): void {
    if (this.size >= this.limit) return;
    const chunk = Buffer.from(text, 'utf8');
    const kept = chunk.subarray(0, this.limit - this.size);
    this.chunks.push(kept);
    this.size += kept.length;
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** The RPCs this file serves (see rpc.ts). */
export const execSyncRpcs = { ExecSync: execSync } satisfies RpcHandlers;
