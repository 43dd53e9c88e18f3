import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import type { ProtoGrpcType } from '../generated/api.js';
import type { ImageServiceClient, ImageServiceDefinition } from '../generated/runtime/v1/ImageService.js';
import type { RuntimeServiceClient, RuntimeServiceDefinition } from '../generated/runtime/v1/RuntimeService.js';
import { unixEndpoint, unixSocketPath } from './endpoint.js';
import { withCachedListDecoding } from './list-decoding.js';

export type { ImageServiceClient, RuntimeServiceClient };

/** The same options scripts/gen-proto-types.mjs gives the type generator, so values match the types. */
export const CRI_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: Number,
  defaults: true,
  oneofs: true,
};

const PROTO_FILE = join('runtime', 'v1', 'api.proto');

/**
 * The proto directory of the package. This module runs from src/cri (ts-node, tests) or from
 * dist/src/cri (built), so walk up a bounded number of levels to the package root.
 */
function findProtoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < 6; level++) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, PROTO_FILE))) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`cannot find proto/${PROTO_FILE} above ${dirname(fileURLToPath(import.meta.url))}`);
}

interface LoadedProtos {
  /** The parsed api.proto: the server's request decoding reads with it (request-decoding.ts). */
  readonly root: protobuf.Root;
  readonly pkg: ProtoGrpcType['runtime']['v1'];
}

/** The package's proto/ directory (the other services on the CRI socket load their files from it). */
export function protoRootDirectory(): string {
  return findProtoRoot();
}

/** The runtime.v1 package, loaded once when this module is first imported (read-only after). */
const loaded: LoadedProtos = loadCriProtos();

/**
 * Parses api.proto once with protobufjs (as proto-loader's loadSync does, with `keepCase`) and
 * builds the package definition from that root's JSON, so the server's decoder and grpc-js's
 * definitions come from one parse.
 */
function loadCriProtos(): LoadedProtos {
  const dir = findProtoRoot();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => (isAbsolute(target) ? target : join(dir, target));
  root.loadSync(PROTO_FILE, { keepCase: CRI_LOADER_OPTIONS.keepCase === true });
  root.resolveAll();
  const definition = protoLoader.fromJSON(root.toJSON(), CRI_LOADER_OPTIONS);
  const grpcObject = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  return { root, pkg: grpcObject.runtime.v1 };
}

/** The parsed api.proto (read-only): message types by their full name, `runtime.v1.…`. */
export function criProtoRoot(): protobuf.Root {
  return loaded.root;
}

/** The runtime.v1 package. */
export function criPackage(): ProtoGrpcType['runtime']['v1'] {
  return loaded.pkg;
}

export function runtimeServiceDefinition(): RuntimeServiceDefinition {
  return criPackage().RuntimeService.service;
}

export function imageServiceDefinition(): ImageServiceDefinition {
  return criPackage().ImageService.service;
}

/** Message size limit on both sides; the kubelet uses 16 MiB for CRI too (large list responses). */
export const CRI_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface CriClientOptions {
  /** Extra grpc-js channel options. */
  channelOptions?: grpc.ChannelOptions;
}

export interface CriClient {
  readonly endpoint: string;
  readonly runtime: RuntimeServiceClient;
  readonly image: ImageServiceClient;
  /** Closes the shared channel; pending calls fail with CANCELLED. */
  close(): void;
}

/**
 * A RuntimeService and an ImageService client sharing one channel to a `unix:///path` endpoint.
 * The RuntimeService client decodes ListContainers and ListPodSandbox with an element cache of
 * its own (list-decoding.ts): responses equal the default deserializer's, but their elements are
 * deep-frozen and shared with earlier responses (copy one before changing it).
 */
export function createCriClient(endpoint: string, options: CriClientOptions = {}): CriClient {
  const target = unixEndpoint(unixSocketPath(endpoint));
  const pkg = criPackage();
  const channelOptions: grpc.ChannelOptions = {
    'grpc.max_receive_message_length': CRI_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': CRI_MAX_MESSAGE_BYTES,
    // HTTP/2's default receive window is 64 KiB: a large list response (megabytes for 10,000
    // containers) would arrive in window-sized steps, each waiting for a WINDOW_UPDATE round trip
    // to the server (bench/README.md, "Tuning tricks"). grpc-go clients grow
    // their window towards 16 MiB (BDP estimation); ours starts there, so one maximal message
    // flows without a stall.
    'grpc-node.flow_control_window': CRI_MAX_MESSAGE_BYTES,
    ...options.channelOptions,
  };
  const credentials = grpc.credentials.createInsecure();
  const RuntimeService = grpc.makeGenericClientConstructor(
    withCachedListDecoding(pkg.RuntimeService.service) as unknown as grpc.ServiceDefinition,
    'RuntimeService',
  ) as unknown as typeof pkg.RuntimeService;
  const runtime = new RuntimeService(target, credentials, channelOptions);
  const image = new pkg.ImageService(target, credentials, {
    ...channelOptions,
    channelOverride: runtime.getChannel(),
  });
  return {
    endpoint: target,
    runtime,
    image,
    close() {
      runtime.close();
    },
  };
}

/** The unary RPC names of a generated client (the capitalised ones, as in the proto). */
export type UnaryMethodName<C> = {
  [K in keyof C & string]: K extends Capitalize<K>
    ? C[K] extends (argument: infer _Req, callback: grpc.requestCallback<infer _Res>) => grpc.ClientUnaryCall
      ? K
      : never
    : never;
}[keyof C & string];

export type UnaryRequest<C, K extends keyof C> = C[K] extends (argument: infer Req, callback: grpc.requestCallback<infer _Res>) => grpc.ClientUnaryCall ? Req : never;
export type UnaryResponse<C, K extends keyof C> = C[K] extends (argument: infer _Req, callback: grpc.requestCallback<infer Res>) => grpc.ClientUnaryCall ? Res : never;

export interface UnaryCallOptions {
  /** Deadline of the call in milliseconds from now (default 2000, crictl's default timeout). */
  timeoutMs?: number;
  metadata?: grpc.Metadata;
}

export const DEFAULT_CALL_TIMEOUT_MS = 2000;

/**
 * Calls a unary RPC and resolves to its response. Rejects with the grpc-js `ServiceError`
 * (`code`, `details`), including DEADLINE_EXCEEDED when the deadline passes.
 *
 *   const v = await unaryCall(cri.runtime, 'Version', {});
 */
export function unaryCall<C extends grpc.Client, K extends UnaryMethodName<C>>(
  client: C,
  method: K,
  request: UnaryRequest<C, K>,
  options: UnaryCallOptions = {},
): Promise<NonNullable<UnaryResponse<C, K>>> {
  const fn = client[method] as unknown as (
    argument: unknown,
    metadata: grpc.Metadata,
    callOptions: grpc.CallOptions,
    callback: grpc.requestCallback<unknown>,
  ) => grpc.ClientUnaryCall;
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    fn.call(client, request, options.metadata ?? new grpc.Metadata(), { deadline }, (err, response) => {
      if (err) reject(err);
      else resolve(response as NonNullable<UnaryResponse<C, K>>);
    });
  });
}
