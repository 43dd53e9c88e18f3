import { performance } from 'node:perf_hooks';
import { status, type ServerWritableStream } from '@grpc/grpc-js';
import type { ContainerEventResponse } from '../generated/runtime/v1/ContainerEventResponse.js';
import type { GetEventsRequest__Output } from '../generated/runtime/v1/GetEventsRequest.js';
import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriBackend } from './backend.js';
import { observeCall, type CallContext } from './call.js';
import { invalidRequestStatus } from './request-decoding.js';
import { statusError, toStatusError } from './status.js';

type EventStream = ServerWritableStream<GetEventsRequest__Output, ContainerEventResponse>;

/** Events queued for a client that does not read; past this the stream is ended, not grown. */
const MAX_QUEUED_EVENTS = 10_000;

/**
 * GetContainerEvents: one runtime subscription per open stream (the kubelet's evented PLEG keeps
 * one open for its lifetime). The server ends every open stream on shutdown, so a graceful
 * close is not held up by subscribers.
 */
export class ContainerEventStreams {
  private readonly open = new Map<EventStream, () => void>();

  constructor(
    private readonly runtime: CriBackend,
    private readonly ctx: CallContext,
  ) {}

  get size(): number {
    return this.open.size;
  }

  handlers(): Pick<RuntimeServiceHandlers, 'GetContainerEvents'> {
    return { GetContainerEvents: (call) => this.serve(call) };
  }

  private serve(call: EventStream): void {
    const startedAt = performance.now();
    const undecodable = invalidRequestStatus(call.request, true);
    if (undecodable !== undefined) {
      observeCall(this.ctx, 'GetContainerEvents', startedAt, undecodable.code);
      call.emit('error', undecodable);
      return;
    }
    let finished = false;
    const finish = (code: status): void => {
      if (finished) return;
      finished = true;
      const cleanup = this.open.get(call);
      this.open.delete(call);
      cleanup?.();
      observeCall(this.ctx, 'GetContainerEvents', startedAt, code);
      this.ctx.logger.debug({ method: 'GetContainerEvents', code }, 'event stream closed');
    };
    let unsubscribe: () => void;
    try {
      unsubscribe = this.runtime.subscribeContainerEvents((event) => {
        if (finished || call.cancelled) return;
        if (call.writableLength >= MAX_QUEUED_EVENTS) {
          this.ctx.logger.warn({ method: 'GetContainerEvents', queued: call.writableLength }, 'event stream client is not reading; ending the stream');
          finish(status.RESOURCE_EXHAUSTED);
          call.emit('error', statusError(status.RESOURCE_EXHAUSTED, `GetContainerEvents: client fell ${MAX_QUEUED_EVENTS} events behind`));
          return;
        }
        call.write(event);
      });
    } catch (err) {
      const sent = toStatusError(err);
      this.ctx.logger.error({ method: 'GetContainerEvents', err }, 'cannot subscribe to container events');
      finished = true;
      observeCall(this.ctx, 'GetContainerEvents', startedAt, sent.code);
      call.emit('error', sent);
      return;
    }
    this.open.set(call, unsubscribe);
    call.on('cancelled', () => finish(status.CANCELLED));
    call.on('error', () => finish(status.UNKNOWN));
    call.on('finish', () => finish(status.OK));
    this.ctx.logger.debug({ method: 'GetContainerEvents' }, 'event stream opened');
  }

  /** Ends every open stream with OK and drops its subscription. */
  endAll(): void {
    for (const [call, unsubscribe] of [...this.open]) {
      this.open.delete(call);
      unsubscribe();
      call.end();
    }
  }
}
