/**
 * The kubelet commands' connection to the runtime: probe with Version as the kubelet does at
 * start-up, and turn gRPC failures into one line that names the endpoint and what to do.
 */
import { createCriClient, unaryCall, type CriClient } from '../cri/proto.js';
import { runtimeCallFailedText, unreachableRuntimeText } from './cli-errors.js';
import type { NodeSettings } from './kubelet-flags.js';

/** A failure the user gets as one line; `cause` holds the details --v=4 prints. */
export class RuntimeError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'RuntimeError';
  }
}

export async function connectRuntime(settings: NodeSettings): Promise<CriClient> {
  const cri = createCriClient(settings.endpoint);
  try {
    await unaryCall(cri.runtime, 'Version', { version: '' }, { timeoutMs: settings.callTimeoutMs });
  } catch (err) {
    cri.close();
    throw new RuntimeError(unreachableRuntimeText(err, { endpoint: settings.endpoint, socketPath: settings.socketPath, timeoutNs: settings.requestTimeoutNs }), err);
  }
  return cri;
}

/** Runs `work` with a connected client, closing it after; a gRPC failure becomes a RuntimeError. */
export async function withRuntime<T>(settings: NodeSettings, work: (cri: CriClient) => Promise<T>): Promise<T> {
  const cri = await connectRuntime(settings);
  try {
    return await work(cri);
  } catch (err) {
    const text = runtimeCallFailedText(err, settings.endpoint);
    if (text !== undefined) throw new RuntimeError(text, err);
    throw err;
  } finally {
    cri.close();
  }
}
