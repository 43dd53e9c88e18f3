import type { StopContainerRequest__Output } from '../generated/runtime/v1/StopContainerRequest.js';
import type { StopContainerResponse } from '../generated/runtime/v1/StopContainerResponse.js';
import { isKnownSignal, normaliseSignal } from '../emulator/signals.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerState, type ContainerRecord } from './store/container-store.js';
import type { RpcHandlers } from './rpc.js';
import { nonNegativeSeconds, requireField } from './validation/request.js';

/** runtime.v1.Signal names by number (0 is RUNTIME_DEFAULT). */
const CRI_SIGNALS = [
  '', 'SIGABRT', 'SIGALRM', 'SIGBUS', 'SIGCHLD', 'SIGCLD', 'SIGCONT', 'SIGFPE', 'SIGHUP', 'SIGILL', 'SIGINT', 'SIGIO',
  'SIGIOT', 'SIGKILL', 'SIGPIPE', 'SIGPOLL', 'SIGPROF', 'SIGPWR', 'SIGQUIT', 'SIGSEGV', 'SIGSTKFLT', 'SIGSTOP', 'SIGSYS',
  'SIGTERM', 'SIGTRAP', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU', 'SIGURG', 'SIGUSR1', 'SIGUSR2', 'SIGVTALRM', 'SIGWINCH',
  'SIGXCPU', 'SIGXFSZ',
];

/** The stop signal: the config's stop_signal, else the image's STOPSIGNAL, else SIGTERM. */
export function stopSignalOf(ctx: RuntimeContext, container: ContainerRecord): string {
  const configured = CRI_SIGNALS[ctx.containers.configOf(container).stop_signal] ?? '';
  if (configured !== '') return configured;
  const fromImage = container.imageConfig.stopSignal;
  if (fromImage !== undefined && isKnownSignal(fromImage)) return normaliseSignal(fromImage);
  return 'SIGTERM';
}

/**
 * StopContainer: sends the stop signal, waits up to `timeout` seconds for the process to exit,
 * then kills it. Idempotent: unknown, created and exited containers succeed unchanged.
 */
export async function stopContainer(ctx: RuntimeContext, req: StopContainerRequest__Output): Promise<StopContainerResponse> {
  requireField(req.container_id, 'container_id');
  const timeoutSeconds = nonNegativeSeconds(req.timeout, 'timeout');
  const container = ctx.containers.find(req.container_id);
  if (container === undefined) return {};
  await stopWithTimeout(ctx, container, timeoutSeconds);
  return {};
}

export async function stopWithTimeout(ctx: RuntimeContext, container: ContainerRecord, timeoutSeconds: number): Promise<void> {
  const process = container.live.process;
  const exitHandled = container.live.exitHandled();
  if (container.status.state !== ContainerState.RUNNING || process === undefined || exitHandled === undefined) {
    await exitHandled;
    return;
  }
  if (timeoutSeconds > 0) {
    const signal = stopSignalOf(ctx, container);
    ctx.logger.debug({ containerId: container.id, signal, timeoutSeconds }, 'stopping container');
    process.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      exitHandled.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), Math.min(timeoutSeconds * 1000, 2_000_000_000));
      }),
    ]);
    clearTimeout(timer);
    if (!timedOut) return;
    ctx.logger.info({ containerId: container.id, timeoutSeconds }, 'container did not stop in time: killing it');
  }
  process.kill('SIGKILL');
  await exitHandled;
}

/** Stops at once (SIGKILL), as StopPodSandbox and RemoveContainer do with running containers. */
export function forceStop(ctx: RuntimeContext, container: ContainerRecord): Promise<void> {
  return stopWithTimeout(ctx, container, 0);
}

/** The RPCs this file serves (see rpc.ts). */
export const containerStopRpcs = { StopContainer: stopContainer } satisfies RpcHandlers;
