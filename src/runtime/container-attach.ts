import type { AttachRequest__Output } from '../generated/runtime/v1/AttachRequest.js';
import type { AttachResponse } from '../generated/runtime/v1/AttachResponse.js';
import { streamOptions } from './container-exec.js';
import { RuntimeError } from './errors.js';
import type { RpcHandlers } from './rpc.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerState, containerStateName } from './store/container-store.js';
import type { RemoteCommandSession } from './streaming/remote-command.js';

/** Attach: hands out a streaming URL to the main process's stdio of a running container. */
export async function attach(ctx: RuntimeContext, req: AttachRequest__Output): Promise<AttachResponse> {
  const options = streamOptions(req, 'attach');
  const container = ctx.containers.mustFind(req.container_id);
  if (container.status.state !== ContainerState.RUNNING) {
    throw new RuntimeError('FailedPrecondition', `container is in ${containerStateName(container.status.state)} state`);
  }
  const id = container.id;
  return { url: await ctx.streaming.register({ kind: 'attach', options, start: (session) => runAttachSession(ctx, id, session) }) };
}

/**
 * Streams what the main process writes from now on (as containerd's attach does; earlier output
 * is in the log) until it exits, then reports its exit code. Input goes to the main process's
 * stdin when its config has `stdin: true` (an interactive sh, cmd or powershell reads it line by
 * line); otherwise it is dropped. The client detaching leaves the container running.
 */
export function runAttachSession(ctx: RuntimeContext, containerId: string, session: RemoteCommandSession): void {
  const container = ctx.containers.get(containerId);
  const writer = container?.live.logWriter;
  const process = container?.live.process;
  if (container === undefined || writer === undefined || process === undefined || container.status.state !== ContainerState.RUNNING) {
    session.finish({ error: `container ${containerId} is not running` });
    return;
  }
  const tty = session.options.tty;
  const previous = writer.tap;
  const tap = (stream: 'stdout' | 'stderr', text: string): void => {
    previous?.(stream, text);
    if (session.backlog > 16 * 1024 * 1024) {
      session.abort();
      return;
    }
    const shown = tty ? text.replace(/\r?\n/g, '\r\n') : text;
    if (stream === 'stdout' || tty) session.writeStdout(shown);
    else session.writeStderr(shown);
  };
  writer.tap = tap;
  const detach = (): void => {
    if (writer.tap === tap) writer.tap = previous;
  };
  session.once('close', detach);
  const stdin = container.live.stdin;
  if (session.options.stdin && stdin !== undefined) {
    session.on('stdin', (data: Buffer) => stdin.write(data.toString('utf8')));
    // With `stdin_once` the main process's input ends when the first attached client closes it.
    session.once('stdin-end', () => {
      if (ctx.containers.configOf(container).stdin_once) stdin.close();
    });
  }
  process.onExit((exit) => {
    detach();
    if (!session.closed) session.finish({ exitCode: exit.exitCode, command: container.args });
  });
}

export const containerAttachRpcs = { Attach: attach } satisfies RpcHandlers;
