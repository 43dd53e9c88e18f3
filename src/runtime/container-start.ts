import type { StartContainerRequest__Output } from '../generated/runtime/v1/StartContainerRequest.js';
import type { StartContainerResponse } from '../generated/runtime/v1/StartContainerResponse.js';
import { CleanupStack } from './cleanup.js';
import { executionTarget, processEnvironment } from './container-process.js';
import { ContainerStdin } from '../emulator/container-stdin.js';
import { prepareWindowsStart } from './container-start-windows.js';
import { RuntimeError, withContext } from './errors.js';
import { ContainerEventType, publishEvent } from './events.js';
import { CriLogWriter } from './logging/cri-log-writer.js';
import { CONTAINER_PORTS_ANNOTATION, imageProgramCommand, imageProgramPorts } from '../emulator/image-program-process.js';
import type { RegisteredCommand } from '../emulator/command-registry.js';
import { CommandNotFoundError, SimulatedProcess, type ProcessExit } from '../emulator/simulated-process.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerState, containerStateName, type ContainerRecord } from './store/container-store.js';
import { SandboxState } from './store/sandbox-store.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

/** containerd's status for a container whose start failed. */
export const START_ERROR_EXIT_CODE = 128;
export const START_ERROR_REASON = 'StartError';

/**
 * StartContainer: opens the CRI log file, starts the init process in the command emulator and
 * marks the container RUNNING. When the start fails the container becomes EXITED with reason
 * StartError (as in containerd) and the error is returned.
 */
export async function startContainer(ctx: RuntimeContext, req: StartContainerRequest__Output): Promise<StartContainerResponse> {
  requireField(req.container_id, 'container_id');
  const container = ctx.containers.mustFind(req.container_id);
  const { status } = container;
  if (status.removing) throw new RuntimeError('FailedPrecondition', `container ${container.id} is being removed`);
  if (status.starting) throw new RuntimeError('FailedPrecondition', `container ${container.id} is already starting`);
  if (status.state !== ContainerState.CREATED) {
    throw new RuntimeError('FailedPrecondition', `container ${container.id} is in ${containerStateName(status.state)} state: only a created container can be started`);
  }
  const sandbox = ctx.sandboxes.get(container.sandboxId);
  if (sandbox === undefined || sandbox.status.state !== SandboxState.READY) {
    throw new RuntimeError('FailedPrecondition', `pod sandbox ${container.sandboxId} of container ${container.id} is not ready`);
  }
  ctx.containers.updateStatus(container.id, (s) => ({ ...s, starting: true }));

  const cleanup = new CleanupStack();
  // Resets `starting` too: a failed start leaves the container removable.
  cleanup.defer('record the failed start', (err) => markStartFailed(ctx, container, err));
  let writer: CriLogWriter | undefined;
  try {
    // Windows: the mock HCS reads and checks the credential spec and decides the identity; the
    // spec's removal is declared on `cleanup` (the KEP: gone once StartContainer returns).
    if (container.os === 'windows') await prepareWindowsStart(ctx, container, cleanup);
    writer = await CriLogWriter.open(container.logPath, ctx.clock, ctx.onLogError, ctx.logFiles, ctx.load);
    const opened = writer;
    cleanup.defer('close the log file', () => opened.close());
    const process = startInitProcess(ctx, container, writer);
    cleanup.defer('kill the init process', () => process.kill('SIGKILL'));
    container.live.logWriter = writer;
    container.live.process = process;
    const hostPid = ctx.nextHostPid();
    ctx.containers.updateStatus(container.id, (s) => ({
      ...s,
      state: ContainerState.RUNNING,
      startedAtNanos: process.startedAtNanos,
      pid: hostPid,
      starting: false,
    }));
    container.live.watch(process, container, ctx.onContainerExit);
    // Before any await: a process that exits at once must not have its STOPPED event first.
    ctx.logger.info({ containerId: container.id }, 'container started');
    publishEvent(ctx, container.id, container.sandboxId, ContainerEventType.STARTED);
    // RUNNING is durable before what follows the start (the credential spec's removal) is done.
    await ctx.committed();
    await cleanup.done(ctx.logger);
  } catch (err) {
    await cleanup.unwind(ctx.logger, err);
    writer?.settleStart();
    if (err instanceof RuntimeError) throw err;
    throw withContext(err, `failed to start container ${container.id}`);
  }
  // A lone call's writer still holds the descriptor that created the file. The process started
  // on a microtask queued before these awaits, so what it printed at once (a banner) is queued in
  // the writer by now and goes out through that descriptor, before the response.
  writer.settleStart();
  return {};
}

/**
 * The container's main process in the command emulator. `startedAtNanos`: a container resumed
 * after a runtime restart keeps its original start time (recovery.ts).
 */
export function startInitProcess(ctx: RuntimeContext, container: ContainerRecord, writer: CriLogWriter, startedAtNanos?: bigint): SimulatedProcess {
  // A config with `stdin: true` gives the main process an input that attached clients write to.
  const stdin = ctx.containers.configOf(container).stdin ? new ContainerStdin() : undefined;
  container.live.stdin = stdin;
  const imageProgram = imageProgramOf(ctx, container);
  try {
    return SimulatedProcess.start({
      registry: ctx.commands,
      clock: ctx.clock,
      target: executionTarget(ctx, container, stdin),
      argv: container.args,
      env: processEnvironment(ctx, container),
      io: writer,
      // In the pod's PID namespace the pause process is PID 1, not the container's command.
      init: !container.sharesPodPid,
      ...(imageProgram === undefined ? {} : { imageProgram }),
      ...(startedAtNanos === undefined ? {} : { startedAtNanos }),
    });
  } catch (err) {
    if (err instanceof CommandNotFoundError) {
      // The text runc gives through containerd, so users recognise it.
      throw new RuntimeError(
        'Unknown',
        `failed to create containerd task: failed to create shim task: OCI runtime create failed: unable to start container process: ${err.message}: unknown`,
      );
    }
    throw err;
  }
}

/**
 * The image's own program, for a main process whose command the emulator does not know: images
 * the user declared and references nobody described have one; catalogue images (busybox, the
 * critest images) do not, and keep runc's "executable file not found".
 */
function imageProgramOf(ctx: RuntimeContext, container: ContainerRecord): RegisteredCommand | undefined {
  const { program, exposedPorts } = container.imageConfig;
  if (program === undefined) return undefined;
  const config = ctx.containers.configOf(container);
  // The kubelet creates containers from the image id; the reference the user wrote names it better.
  const image = config.image?.user_specified_image || ctx.images.resolve(container.imageName)?.repoTags[0] || container.imageName;
  const ports = imageProgramPorts(program, exposedPorts, config.annotations[CONTAINER_PORTS_ANNOTATION]);
  return imageProgramCommand(container.args[0] ?? '', { image, program, ports });
}

function markStartFailed(ctx: RuntimeContext, container: ContainerRecord, err: unknown): void {
  container.live.process = undefined;
  container.live.logWriter = undefined;
  if (ctx.containers.get(container.id) === undefined) return;
  ctx.containers.updateStatus(container.id, (s) => ({
    ...s,
    state: s.state === ContainerState.CREATED ? ContainerState.EXITED : s.state,
    starting: false,
    pid: 0,
    finishedAtNanos: ctx.clock.nowNanos(),
    exitCode: START_ERROR_EXIT_CODE,
    reason: START_ERROR_REASON,
    message: err instanceof Error ? err.message : String(err),
  }));
}

/**
 * The init process exited: every other process of the container dies with it, the log is
 * flushed and closed, and only then is the container EXITED (so a reader who sees EXITED finds
 * all output in the file). The runtime's `onContainerExit` (one handler for all its containers).
 */
export async function handleContainerExit(ctx: RuntimeContext, container: ContainerRecord, exit: ProcessExit): Promise<void> {
  container.processes.killAll('SIGKILL', container.id);
  for (const exec of container.live.execs ?? []) exec.kill('SIGKILL');
  const writer = container.live.logWriter;
  container.live.logWriter = undefined;
  // Everything the container wrote is in the file before it is EXITED; the descriptor closes after.
  await writer?.close({ waitForClose: false });
  if (ctx.containers.get(container.id) === undefined) return;
  ctx.containers.updateStatus(container.id, (s) => ({
    ...s,
    state: ContainerState.EXITED,
    finishedAtNanos: exit.finishedAtNanos,
    exitCode: exit.exitCode,
    reason: exit.exitCode === 0 ? 'Completed' : 'Error',
    pid: 0,
  }));
  ctx.logger.info({ containerId: container.id, exitCode: exit.exitCode, signal: exit.signal }, 'container exited');
  publishEvent(ctx, container.id, container.sandboxId, ContainerEventType.STOPPED);
}

/** The RPCs this file serves (see rpc.ts). */
export const containerStartRpcs = { StartContainer: startContainer } satisfies RpcHandlers;
