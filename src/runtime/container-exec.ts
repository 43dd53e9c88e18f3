import type { ExecRequest__Output } from '../generated/runtime/v1/ExecRequest.js';
import type { ExecResponse } from '../generated/runtime/v1/ExecResponse.js';
import { RuntimeError } from './errors.js';
import type { RpcHandlers } from './rpc.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerState, containerStateName } from './store/container-store.js';
import { runExecSession } from './streaming/exec-session.js';
import type { RemoteCommandOptions } from './streaming/remote-command.js';

/**
 * The checks of the kubelet streaming server's GetExec/GetAttach
 * (k8s.io/kubelet pkg/cri/streaming/server.go, v0.34), texts included.
 */
export function streamOptions(req: { container_id: string; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }, rpc: 'exec' | 'attach'): RemoteCommandOptions {
  if (req.container_id === '') throw new RuntimeError('InvalidArgument', 'missing required container_id');
  if (req.tty && req.stderr) throw new RuntimeError('InvalidArgument', 'tty and stderr cannot both be true');
  if (!req.stdin && !req.stdout && !req.stderr) {
    throw new RuntimeError('InvalidArgument', rpc === 'exec' ? 'one of stdin, stdout, or stderr must be set' : 'one of stdin, stdout, and stderr must be set');
  }
  return { stdin: req.stdin, stdout: req.stdout, stderr: req.stderr, tty: req.tty };
}

/** Exec: checks the container runs and hands out a streaming URL; the session runs when the client comes. */
export async function exec(ctx: RuntimeContext, req: ExecRequest__Output): Promise<ExecResponse> {
  const options = streamOptions(req, 'exec');
  if (req.cmd.length === 0) throw new RuntimeError('InvalidArgument', 'cmd must not be empty');
  const container = ctx.containers.mustFind(req.container_id);
  if (container.status.state !== ContainerState.RUNNING) {
    // containerd's check (internal/cri/server/container_exec.go).
    throw new RuntimeError('FailedPrecondition', `container is in ${containerStateName(container.status.state)} state`);
  }
  const id = container.id;
  const cmd = [...req.cmd];
  return { url: await ctx.streaming.register({ kind: 'exec', options, start: (session) => runExecSession(ctx, id, cmd, session) }) };
}

export const containerExecRpcs = { Exec: exec } satisfies RpcHandlers;
