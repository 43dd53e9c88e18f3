/**
 * /containerLogs/{namespace}/{pod}/{container} (server.go getContainerLogs and the kubelet's
 * validateContainerLogStatus, v1.34): the CRI log file of the container, or of the previous one.
 */
import type { ServerResponse } from 'node:http';
import { unaryCall } from '../../../cri/proto.js';
import { parseLogOptions, readLogs, type LogSink } from '../container-logs.js';
import { text } from '../http-replies.js';
import { containerSpec, findPod, type Route, type RouteContext } from '../route-context.js';

export const containerLogsRoute: Route = {
  root: 'containerLogs',
  methods: ['GET'],
  matches: (rest) => rest.length === 3,
  handle: (ctx, { res, rest, query }) => containerLogs(ctx, res, rest[0]!, rest[1]!, rest[2]!, query),
};

async function containerLogs(ctx: RouteContext, res: ServerResponse, namespace: string, podName: string, containerName: string, query: URLSearchParams): Promise<void> {
  if (podName === '') return text(res, 400, '{"message": "Missing podID."}');
  if (containerName === '') return text(res, 400, '{"message": "Missing container name."}');
  if (namespace === '') return text(res, 400, '{"message": "Missing podNamespace."}');
  const parsed = parseLogOptions(query);
  if (!parsed.ok) return text(res, parsed.status, parsed.message);
  const pod = findPod(ctx.pods(), namespace, podName);
  if (pod === undefined) return text(res, 404, `pod "${podName}" does not exist`);
  if (containerSpec(pod, containerName) === undefined) return text(res, 404, `container "${containerName}" not found in pod "${podName}"`);

  // validateContainerLogStatus, from the runtime's containers of this name (newest first).
  const candidates = await ctx.runtimePods.containersByName(pod.metadata?.uid ?? '', containerName);
  let containerId: string | undefined;
  if (parsed.options.previous) {
    containerId = candidates[1]?.id;
    if (containerId === undefined) return text(res, 400, `previous terminated container "${containerName}" in pod "${podName}" not found`);
  } else {
    const current = candidates[0];
    if (current === undefined || current.state === 0) {
      const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
      const reason = statuses.find((s) => s.name === containerName)?.state?.waiting?.reason ?? (current !== undefined ? 'ContainerCreating' : undefined);
      if (reason === 'ErrImagePull') return text(res, 400, `container "${containerName}" in pod "${podName}" is waiting to start: image can't be pulled`);
      if (reason === 'ImagePullBackOff') return text(res, 400, `container "${containerName}" in pod "${podName}" is waiting to start: trying and failing to pull image`);
      if (reason !== undefined) return text(res, 400, `container "${containerName}" in pod "${podName}" is waiting to start: ${reason}`);
      return text(res, 400, `container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`);
    }
    containerId = current.id;
  }

  // From here the kubelet has written a zero-byte chunk: the status is 200 and later errors
  // end up in the body.
  res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Transfer-Encoding': 'chunked' });
  res.flushHeaders();
  const sink = responseSink(res);
  const callOptions = { timeoutMs: ctx.callTimeoutMs };
  try {
    let logPath: string;
    try {
      const { status } = await unaryCall(ctx.cri.runtime, 'ContainerStatus', { container_id: containerId, verbose: false }, callOptions);
      if (status === null) throw new Error('status is nil');
      logPath = status.log_path;
    } catch {
      throw new Error(`unable to retrieve container logs for ${await ctx.runtimeName()}://${containerId}`);
    }
    await readLogs(logPath, sink, {
      options: parsed.options,
      nowNanos: BigInt(Date.now()) * 1_000_000n,
      isRunning: async () => {
        try {
          const { status } = await unaryCall(ctx.cri.runtime, 'ContainerStatus', { container_id: containerId, verbose: false }, callOptions);
          return status?.state === 1;
        } catch (err) {
          // Unavailable: assume still running, as cri-client does.
          if ((err as { code?: number }).code === 14) return true;
          throw err;
        }
      },
    });
  } catch (err) {
    ctx.log.warn({ err, namespace, pod: podName, container: containerName }, 'container logs failed');
    if (!sink.closed) res.write((err as Error).message);
  }
  res.end();
}

/** The response as the log reader's sink: writes wait for 'drain', and it is closed with the client. */
function responseSink(res: ServerResponse): LogSink {
  let clientGone = false;
  res.on('close', () => { clientGone = true; });
  return {
    get closed() { return clientGone || res.destroyed; },
    onClose: (listener) => res.on('close', listener),
    write: (_stream, data) => new Promise((resolve) => {
      if (res.write(data)) resolve();
      else {
        const go = (): void => { res.off('drain', go); res.off('close', go); resolve(); };
        res.on('drain', go);
        res.on('close', go);
      }
    }),
  };
}
