import { performance } from 'node:perf_hooks';
import { status, type handleServerStreamingCall, type handleUnaryCall, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { Logger } from '../log.js';
import { invalidRequestStatus } from './request-decoding.js';
import { isExpectedError, statusName, toStatusError, unimplemented, type CriStatusError } from './status.js';

/**
 * Hook around every handler: method name as in the proto ('RunPodSandbox'), duration in
 * seconds, and the numeric gRPC status code (0 = OK). The Prometheus metrics (src/cri/metrics.ts,
 * RuntimeMetrics.onCall) plug in here.
 */
export interface CallObserver {
  onCall(method: string, durationSeconds: number, code: status): void;
  /**
   * A unary call reached its handler and is in flight until onCallEnded (the in-flight gauge);
   * streams are not counted, they stay open for as long as their client listens.
   */
  onCallStarted?(method: string): void;
  onCallEnded?(method: string): void;
}

/** What every handler shares: the server's logger and the optional observer. */
export interface CallContext {
  readonly logger: Logger;
  readonly observer: CallObserver | undefined;
}

/** Ids worth a log binding, picked from the request only when debug logging is on. */
export type IdsOf<Req> = (request: Req) => Record<string, unknown>;

function observe(ctx: CallContext, method: string, startedAt: number, code: status): void {
  const observer = ctx.observer;
  if (observer === undefined) return;
  try {
    observer.onCall(method, (performance.now() - startedAt) / 1000, code);
  } catch (err) {
    ctx.logger.warn({ method, err }, 'call observer failed');
  }
}

function reportFailure(ctx: CallContext, log: Logger | undefined, method: string, err: unknown, sent: CriStatusError): void {
  if (isExpectedError(err)) {
    log?.debug({ code: statusName(sent.code), error: sent.details }, 'call failed');
  } else {
    // A bug or an unmapped failure: the stack stays in the server log, never on the wire.
    (log ?? ctx.logger).error({ method, err }, 'unexpected error in CRI handler');
  }
}

/** The call's deadline in milliseconds since the epoch; undefined when the client set none. */
function deadlineOf(call: ServerUnaryCall<unknown, unknown>): number | undefined {
  const deadline = call.getDeadline();
  const ms = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Answers a request whose string fields were not UTF-8 (request-decoding.ts) with the upstream
 * INTERNAL status; false for a decoded request, which the handler then serves.
 */
function refuseUndecodable<Res>(ctx: CallContext, method: string, startedAt: number, request: unknown, streaming: boolean, callback: sendUnaryData<Res>): boolean {
  const error = invalidRequestStatus(request, streaming);
  if (error === undefined) return false;
  ctx.logger.debug({ method, error: error.details }, 'request did not decode');
  observe(ctx, method, startedAt, error.code);
  callback(error);
  return true;
}

/**
 * A unary handler: runs `run`, sends its result or the mapped status, and reports to the
 * observer. `run` validates its request and calls the runtime; it may throw or reject. It gets
 * the call's deadline, for the runtime's simulated latency.
 */
export function unary<Req, Res>(
  ctx: CallContext,
  method: string,
  run: (request: Req, deadlineMs: number | undefined) => Promise<Res>,
  ids?: IdsOf<NoInfer<Req>>,
): handleUnaryCall<Req, Res> {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    const startedAt = performance.now();
    if (refuseUndecodable(ctx, method, startedAt, call.request, false, callback)) return;
    let log: Logger | undefined;
    if (ctx.logger.isLevelEnabled('debug')) {
      log = ctx.logger.child(ids === undefined ? { method } : { method, ...ids(call.request) });
      log.debug('call');
    }
    const observer = ctx.observer;
    observer?.onCallStarted?.(method);
    let pending: Promise<Res>;
    try {
      pending = run(call.request, deadlineOf(call));
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending.then(
      (response) => {
        observer?.onCallEnded?.(method);
        observe(ctx, method, startedAt, status.OK);
        log?.debug('call done');
        callback(null, response);
      },
      (err: unknown) => {
        observer?.onCallEnded?.(method);
        const sent = toStatusError(err);
        reportFailure(ctx, log, method, err, sent);
        observe(ctx, method, startedAt, sent.code);
        callback(sent);
      },
    );
  };
}

/** A unary RPC the simulator does not offer: UNIMPLEMENTED with a message naming it. */
export function unaryUnimplemented<Req, Res>(ctx: CallContext, method: string, why: string): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const startedAt = performance.now();
    // containerd's generated handlers decode the request before the server's method says
    // Unimplemented: a request that does not decode fails as such first.
    if (refuseUndecodable(ctx, method, startedAt, call.request, false, callback)) return;
    const error = unimplemented(method, why);
    observe(ctx, method, startedAt, error.code);
    callback(error);
  };
}

/**
 * A server-streaming RPC the simulator does not offer. For the v1.36 Stream* RPCs this is the
 * answer clients expect: on UNIMPLEMENTED they fall back to the List* RPC.
 */
export function streamUnimplemented<Req, Res>(ctx: CallContext, method: string, why: string): handleServerStreamingCall<Req, Res> {
  return (call) => {
    const startedAt = performance.now();
    const error = invalidRequestStatus(call.request, true) ?? unimplemented(method, why);
    observe(ctx, method, startedAt, error.code);
    call.emit('error', error);
  };
}

export { observe as observeCall };

/** Calls every observer (metrics, idle collection) for each RPC. */
export function combineObservers(...observers: (CallObserver | undefined)[]): CallObserver | undefined {
  const present = observers.filter((o): o is CallObserver => o !== undefined);
  if (present.length <= 1) return present[0];
  return {
    onCall(method: string, durationSeconds: number, code: status): void {
      for (const observer of present) observer.onCall(method, durationSeconds, code);
    },
    onCallStarted(method: string): void {
      for (const observer of present) observer.onCallStarted?.(method);
    },
    onCallEnded(method: string): void {
      for (const observer of present) observer.onCallEnded?.(method);
    },
  };
}
