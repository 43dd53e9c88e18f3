import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import { deepFreeze } from '../deep-freeze.js';
import { silentLogger, type Logger } from '../log.js';
import type { CriBackend } from './backend.js';
import type { CallContext, CallObserver } from './call.js';
import { ContainerEventStreams } from './events.js';
import { rpcCopies, WireCopy, type RpcCopies } from './in-process-codec.js';
import { criProtoRoot, imageServiceDefinition, runtimeServiceDefinition, type CriClient, type ImageServiceClient, type RuntimeServiceClient } from './proto.js';
import { withUtf8CheckedRequests } from './request-decoding.js';
import { serviceHandlers } from './service-handlers.js';

/**
 * A CRI client that calls a runtime in the same process: the kubelet of a node in node mode talks
 * to its own runtime through the same `CriClient` it would use over the socket, without gRPC's
 * serialization, HTTP/2 framing or socket. The calls go through the very handlers the gRPC server
 * registers (service-handlers.ts, events.ts: logging, the observer, UNIMPLEMENTED answers, errors
 * mapped once by status.ts), and only the transport is replaced:
 *
 * - requests reach the handler as the server's decoder gives them (defaults filled in, int64 as
 *   strings; in-process-codec.ts), so the runtime validates the same objects;
 * - responses reach the caller as the client's decoder gives them: fresh objects that share
 *   nothing with the runtime, list elements deep-frozen and reused between responses as the
 *   socket client's cached list decoding does (list-decoding.ts);
 * - failures are grpc-js ServiceErrors (`code`, `details`, `metadata`, message "5 NOT_FOUND: …");
 *   a deadline that passes first ends the call with DEADLINE_EXCEEDED and the handler's late answer
 *   is dropped, as grpc-js does; `cancel()` ends it with CANCELLED "Cancelled on client";
 * - callbacks and stream events arrive asynchronously, never inside the caller's or the runtime's
 *   own stack; after close() a call throws grpc-js's "Channel has been shut down".
 *
 * The transport's own limits (the 16 MiB message size) are not checked: no CRI response the
 * simulator makes comes near them.
 */

export interface InProcessCriClientOptions {
  readonly runtime: CriBackend;
  /** The runtime's CRI logger (its gRPC server's, when it has one): the handlers log to it. */
  readonly logger?: Logger;
  /** Called around every handler, as the gRPC server's observer is. */
  readonly observer?: CallObserver;
  /** What `endpoint` and `getPeer()` say (default `inprocess`; node mode gives the runtime's socket). */
  readonly endpoint?: string;
}

type Definition = Readonly<Record<string, MethodDefinition<unknown, unknown>>>;

/** What serviceHandlers makes for a unary RPC, called here with a call object of our own. */
type UnaryHandler = (call: { request: unknown; getDeadline(): number; cancelled: boolean }, callback: (err: Partial<grpc.StatusObject> | null, value?: unknown) => void) => void;
type StreamHandler = (call: ServerSideStream) => void;

/** The wire copies of both services' RPCs, made once (read-only tables of the proto). */
const RUNTIME_COPIES = rpcCopies(runtimeServiceDefinition() as unknown as Definition, withUtf8CheckedRequests(runtimeServiceDefinition()) as unknown as Definition);
const IMAGE_COPIES = rpcCopies(imageServiceDefinition() as unknown as Definition, withUtf8CheckedRequests(imageServiceDefinition()) as unknown as Definition);

/**
 * The big lists whose elements are the runtime's stable views (service-handlers.ts CACHED_LISTS):
 * an element object is never changed once returned, so its copy is made once and shared.
 */
const CACHED_LISTS: Readonly<Record<string, { field: string; element: WireCopy }>> = {
  ListContainers: { field: 'containers', element: new WireCopy(criProtoRoot().lookupType('runtime.v1.Container')) },
  ListPodSandbox: { field: 'items', element: new WireCopy(criProtoRoot().lookupType('runtime.v1.PodSandbox')) },
};

/** A ServiceError as grpc-js's client makes it from a status (call.ts callErrorFromStatus, grpc-js 1.14). */
function clientError(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(`${code} ${grpc.status[code]}: ${details}`), { code, details, metadata: new grpc.Metadata() });
}

const CANCELLED_ON_CLIENT = 'Cancelled on client';

/** grpc-js's deadline text without the transport's parts (resolving-call.ts: "Deadline exceeded after 2.001s"). */
function deadlineText(startedAt: number): string {
  return `Deadline exceeded after ${((Date.now() - startedAt) / 1000).toFixed(3)}s`;
}

/** The deadline of grpc-js call options in milliseconds since the epoch, Infinity for none. */
function deadlineMs(options: grpc.CallOptions | undefined): number {
  const deadline = options?.deadline;
  if (deadline === undefined) return Infinity;
  const ms = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isNaN(ms) ? Infinity : ms;
}

/** grpc-js's argument forms of a unary call: (arg, [metadata], [options], callback). */
function unaryArguments(args: unknown[]): { options: grpc.CallOptions | undefined; callback: grpc.requestCallback<unknown> } {
  const callback = args[args.length - 1];
  if (typeof callback !== 'function') throw new Error('Argument mismatch in makeUnaryRequest');
  const rest = args.slice(0, -1);
  const options = rest.find((a) => a !== undefined && !(a instanceof grpc.Metadata)) as grpc.CallOptions | undefined;
  return { options, callback: callback as grpc.requestCallback<unknown> };
}

/** The client's side of a unary call: cancel() as grpc-js's ClientUnaryCall has it. */
class InProcessUnaryCall extends EventEmitter {
  constructor(
    private readonly peer: string,
    readonly cancel: () => void,
  ) {
    super();
  }

  getPeer(): string {
    return this.peer;
  }
}

/**
 * The server's side of a GetContainerEvents call, for ContainerEventStreams: what it writes is
 * copied and queued, and handed to the client's readable stream on a later turn of the loop.
 */
class ServerSideStream extends EventEmitter {
  cancelled = false;
  private queued: unknown[] = [];
  private scheduled = false;
  private ended = false;

  constructor(
    readonly request: unknown,
    private readonly client: InProcessEventStream,
    private readonly copy: WireCopy,
    private readonly throughBytes: (value: object) => unknown,
  ) {
    super();
    // Like grpc-js's server stream: an error emitted on it becomes the status the client gets.
    this.on('error', (err: { code?: number; details?: string }) => {
      this.ended = true;
      const code = typeof err.code === 'number' ? err.code : grpc.status.UNKNOWN;
      this.afterQueue(() => this.client.fail(clientError(code, err.details ?? '')));
    });
  }

  get writableLength(): number {
    return this.queued.length + this.client.readableLength;
  }

  write(event: object): boolean {
    if (this.ended || this.cancelled) return false;
    let copied: unknown;
    try {
      copied = this.copy.copy(event) ?? this.throughBytes(event);
    } catch {
      // grpc-js server-interceptors.ts sendMessage, as for a unary response.
      this.emit('error', { code: grpc.status.INTERNAL, details: 'Error serializing response' });
      return false;
    }
    this.queued.push(copied);
    this.schedule();
    return true;
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.afterQueue(() => this.client.deliver(null));
  }

  /** The client cancelled: the server's 'cancelled', as grpc-js emits it. */
  cancelFromClient(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.queued = [];
    this.emit('cancelled');
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const events = this.queued;
    this.queued = [];
    for (const event of events) this.client.deliver(event);
    for (const then of this.thens.splice(0)) then();
  };

  private readonly thens: (() => void)[] = [];

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  /** Runs `then` once the events written before it have been handed over. */
  private afterQueue(then: () => void): void {
    this.thens.push(then);
    this.schedule();
  }
}

/**
 * The client's side of a server stream: a readable of response objects with cancel(), ending as
 * grpc-js's ClientReadableStream ends (client.ts onReceiveStatus: end of data, then 'error' for
 * a status other than OK, then 'status').
 */
class InProcessEventStream extends Readable {
  private server: ServerSideStream | undefined;
  private done = false;

  constructor(private readonly peer: string) {
    super({ objectMode: true, read() {} });
  }

  attach(server: ServerSideStream): void {
    this.server = server;
  }

  getPeer(): string {
    return this.peer;
  }

  /** An event from the server; null: the server ended the stream with OK. */
  deliver(event: unknown): void {
    if (this.done) return;
    if (event !== null) {
      this.push(event);
      return;
    }
    this.done = true;
    this.push(null);
    this.emit('status', { code: grpc.status.OK, details: 'OK', metadata: new grpc.Metadata() });
  }

  fail(err: grpc.ServiceError): void {
    if (this.done) return;
    this.done = true;
    this.push(null);
    this.emit('error', err);
    this.emit('status', { code: err.code, details: err.details, metadata: err.metadata });
  }

  cancel(): void {
    if (this.done) return;
    this.server?.cancelFromClient();
    process.nextTick(() => this.fail(clientError(grpc.status.CANCELLED, CANCELLED_ON_CLIENT)));
  }
}

/** A service as the in-process clients serve it: its RPCs and their wire copies. */
interface Service {
  readonly definition: Definition;
  readonly copies: ReadonlyMap<string, RpcCopies>;
  /** Whether the edge's server streams (GetContainerEvents) are among its handlers. */
  readonly streams: boolean;
}

const RUNTIME_SERVICE: Service = { definition: runtimeServiceDefinition() as unknown as Definition, copies: RUNTIME_COPIES, streams: true };
const IMAGE_SERVICE: Service = { definition: imageServiceDefinition() as unknown as Definition, copies: IMAGE_COPIES, streams: false };

/**
 * The client class of a service: one method per RPC, named as grpc-js names them (and in
 * lowerCamelCase, as grpc-js also does), on the prototype, made once per process; an instance
 * holds only its transport. A process of a thousand nodes has a thousand small instances, not a
 * thousand tables of closures.
 */
function serviceClientClass(service: Service): new (transport: InProcessTransport) => object {
  class ServiceClient {
    constructor(readonly transport: InProcessTransport) {}
  }
  for (const [rpc, method] of Object.entries(service.definition)) {
    const copies = service.copies.get(rpc);
    if (copies === undefined) throw new Error(`${rpc}: no wire copies`);
    const call = method.responseStream
      ? function serverStream(this: ServiceClient, request: object): InProcessEventStream {
        return this.transport.serverStream(service, rpc, copies, request);
      }
      : function unary(this: ServiceClient, request: object, ...rest: unknown[]): InProcessUnaryCall {
        return this.transport.unary(service, rpc, copies, request, rest);
      };
    for (const name of [rpc, rpc.charAt(0).toLowerCase() + rpc.slice(1)]) {
      Object.defineProperty(ServiceClient.prototype, name, { value: call, writable: false, enumerable: false, configurable: false });
    }
  }
  return ServiceClient;
}

const RuntimeServiceInProcess = serviceClientClass(RUNTIME_SERVICE);
const ImageServiceInProcess = serviceClientClass(IMAGE_SERVICE);

/**
 * One per runtime (per node): the edge's handlers of the RPCs called so far, the event streams
 * and the list-element copies. A handler is made on an RPC's first call (most nodes call a dozen
 * of the RPCs), by the same serviceHandlers the gRPC server uses.
 */
class InProcessTransport {
  private closed = false;
  /** Copies of list elements by the runtime's element object (see CACHED_LISTS). */
  private readonly elementCopies = new WeakMap<object, unknown>();
  private readonly handlers = new Map<string, unknown>();
  private events: ContainerEventStreams | undefined;

  constructor(
    readonly endpoint: string,
    private readonly runtime: CriBackend,
    private readonly ctx: CallContext,
  ) {}

  close(): void {
    this.closed = true;
    this.events?.endAll();
  }

  /** The edge's handler of `rpc` for this runtime. */
  private handler(service: Service, rpc: string): unknown {
    let handler = this.handlers.get(rpc);
    if (handler === undefined) {
      const streams = service.streams ? (this.events ??= new ContainerEventStreams(this.runtime, this.ctx)).handlers() : {};
      const one = { [rpc]: service.definition[rpc] } as unknown as grpc.ServiceDefinition;
      handler = serviceHandlers(one, this.runtime, this.ctx, streams)[rpc];
      this.handlers.set(rpc, handler);
    }
    return handler;
  }

  private checkOpen(): void {
    // grpc-js internal-channel.ts createCall on a closed channel.
    if (this.closed) throw new Error('Channel has been shut down');
  }

  unary(service: Service, rpc: string, copies: RpcCopies, request: object, rest: unknown[]): InProcessUnaryCall {
    const { options, callback } = unaryArguments(rest);
    this.checkOpen();
    const handler = this.handler(service, rpc) as UnaryHandler;
    const startedAt = Date.now();
    const deadline = deadlineMs(options);
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    const serverCall = { request: undefined as unknown, getDeadline: () => deadline, cancelled: false };
    const finish = (err: grpc.ServiceError | null, response?: unknown): void => {
      if (finished) return;
      finished = true;
      if (timer !== undefined) clearTimeout(timer);
      if (err !== null) serverCall.cancelled = true;
      // Never inside the caller's own call or the handler's stack.
      queueMicrotask(() => (err === null ? callback(null, response) : callback(err)));
    };
    const call = new InProcessUnaryCall(this.endpoint, () => finish(clientError(grpc.status.CANCELLED, CANCELLED_ON_CLIENT)));
    if (deadline !== Infinity) {
      const onDeadline = (): void => finish(clientError(grpc.status.DEADLINE_EXCEEDED, deadlineText(startedAt)));
      const left = deadline - Date.now();
      if (left <= 0) process.nextTick(onDeadline);
      else timer = setTimeout(onDeadline, left);
    }
    try {
      serverCall.request = copies.request.copy(request) ?? copies.requestThroughBytes(request);
    } catch (err) {
      // grpc-js client-interceptors.ts: a request that does not serialize never leaves the client.
      finish(clientError(grpc.status.INTERNAL, `Request message serialization failure: ${err instanceof Error ? err.message : String(err)}`));
      return call;
    }
    handler(serverCall, (err, value) => {
      if (finished) return;
      if (err !== null) {
        finish(clientError(err.code ?? grpc.status.UNKNOWN, err.details ?? ''));
        return;
      }
      let response: unknown;
      try {
        response = this.copyResponse(rpc, copies, value as object);
      } catch {
        // grpc-js server-interceptors.ts sendMessage, without GRPC_NODE_DEBUG_SEND_ERROR_DETAILS.
        finish(clientError(grpc.status.INTERNAL, 'Error serializing response'));
        return;
      }
      finish(null, response);
    });
    return call;
  }

  private copyResponse(rpc: string, copies: RpcCopies, value: object): unknown {
    const list = CACHED_LISTS[rpc];
    if (list !== undefined) {
      const elements = (value as Record<string, unknown>)[list.field];
      if (Array.isArray(elements) && Object.keys(value).length === 1) {
        return { [list.field]: elements.map((element: object) => this.elementCopy(list, copies, element)) };
      }
    }
    return copies.response.copy(value) ?? copies.responseThroughBytes(value);
  }

  private elementCopy(list: { field: string; element: WireCopy }, copies: RpcCopies, element: object): unknown {
    let copied = this.elementCopies.get(element);
    if (copied === undefined) {
      const made = list.element.copy(element);
      // An element with a string that does not cross the wire unchanged: through the bytes, as a
      // list of one (rare; not kept).
      if (made === undefined) return (copies.responseThroughBytes({ [list.field]: [element] }) as Record<string, unknown[]>)[list.field]?.[0];
      copied = deepFreeze(made);
      this.elementCopies.set(element, copied);
    }
    return copied;
  }

  serverStream(service: Service, rpc: string, copies: RpcCopies, request: object): InProcessEventStream {
    this.checkOpen();
    const handler = this.handler(service, rpc) as StreamHandler;
    const client = new InProcessEventStream(this.endpoint);
    let decoded: unknown;
    try {
      decoded = copies.request.copy(request) ?? copies.requestThroughBytes(request);
    } catch (err) {
      const error = clientError(grpc.status.INTERNAL, `Request message serialization failure: ${err instanceof Error ? err.message : String(err)}`);
      setImmediate(() => client.fail(error));
      return client;
    }
    const server = new ServerSideStream(decoded, client, copies.response, copies.responseThroughBytes);
    client.attach(server);
    handler(server);
    return client;
  }
}

/**
 * A CriClient whose calls are served by `runtime` in this process (see the top of this file). Its
 * `close()` ends its event streams; the runtime is the caller's to close.
 */
export function createInProcessCriClient(options: InProcessCriClientOptions): CriClient {
  const ctx: CallContext = { logger: options.logger ?? silentLogger(), observer: options.observer };
  const transport = new InProcessTransport(options.endpoint ?? 'inprocess', options.runtime, ctx);
  return {
    endpoint: transport.endpoint,
    runtime: new RuntimeServiceInProcess(transport) as unknown as RuntimeServiceClient,
    image: new ImageServiceInProcess(transport) as unknown as ImageServiceClient,
    close() {
      transport.close();
    },
  };
}
