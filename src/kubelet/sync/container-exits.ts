/**
 * Container exits as the runtime reports them on its GetContainerEvents stream (the kubelet's
 * evented PLEG): each CONTAINER_STOPPED_EVENT names the pod whose sync should run. Creations and
 * starts are the kubelet's own doing and are not followed. A runtime without the stream
 * (UNIMPLEMENTED) leaves the callers' resync to notice exits.
 */
import type * as grpc from '@grpc/grpc-js';
import type { CriClient } from '../../cri/proto.js';

/** ContainerEventType.CONTAINER_STOPPED_EVENT. */
const containerStoppedEvent = 2;
const cancelled = 1;
const unimplemented = 12;

interface ContainerEvent {
  container_event_type?: number;
  pod_sandbox_status?: { metadata?: { uid?: string } };
}

/** Follows the stream until cancel(); `onExit` gets the UID of the pod whose container stopped. */
export function watchContainerExits(cri: CriClient, onExit: (podUid: string | undefined) => void, onError: (err: Error) => void): { cancel(): void } {
  let stream: grpc.ClientReadableStream<unknown>;
  let ended = false;
  try {
    stream = cri.runtime.GetContainerEvents({}) as unknown as grpc.ClientReadableStream<unknown>;
  } catch (err) {
    onError(new Error(`GetContainerEvents: ${(err as Error).message}`));
    return { cancel() {} };
  }
  stream.on('data', (event: ContainerEvent) => {
    if (event.container_event_type === containerStoppedEvent) onExit(event.pod_sandbox_status?.metadata?.uid);
  });
  stream.on('error', (err: grpc.ServiceError) => {
    // CANCELLED is our own cancel; UNIMPLEMENTED: the runtime has no stream.
    if (!ended && err.code !== cancelled && err.code !== unimplemented) onError(new Error(`GetContainerEvents: ${err.message}`));
  });
  return {
    cancel() {
      ended = true;
      stream.cancel();
    },
  };
}
