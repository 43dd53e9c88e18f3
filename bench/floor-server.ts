/**
 * The floor: a gRPC server on a unix socket with the runtime's own service definitions that does
 * no work — every RPC answers at once with a minimal valid response. The same client drives it
 * with the same messages, so ours/floor isolates what the runtime adds on top of grpc-js and
 * protobuf encoding on this machine.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import {
  CRI_MAX_MESSAGE_BYTES,
  imageServiceDefinition,
  runtimeServiceDefinition,
} from '../src/cri/proto.js';
import { unixEndpoint } from '../src/cri/endpoint.js';

export interface FloorServer {
  readonly endpoint: string;
  /**
   * The response a unary method answers with from now on, e.g. a ListContainers response captured
   * from the runtime at the same object count, so both sides serialise the same message.
   */
  setResponse(method: string, response: object): void;
  /** Calls answered per method since start. */
  calls(method: string): number;
  close(): Promise<void>;
}

let idCounter = 0;
/** A 64-hex id like the runtime's; cheap (counter-based) so the floor stays a floor. */
function nextId(): string {
  idCounter++;
  return idCounter.toString(16).padStart(64, '0');
}

const FIXED_RESPONSES: Readonly<Record<string, () => object>> = {
  Version: () => ({ version: '0.1.0', runtime_name: 'floor', runtime_version: '0.0.0', runtime_api_version: 'v1' }),
  Status: () => ({
    status: {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: true, reason: '', message: '' },
      ],
    },
    info: {},
  }),
  RunPodSandbox: () => ({ pod_sandbox_id: nextId() }),
  CreateContainer: () => ({ container_id: nextId() }),
  ExecSync: () => ({ stdout: Buffer.from('demo\\webapplication1$\r\n'), stderr: Buffer.alloc(0), exit_code: 0 }),
  PullImage: () => ({ image_ref: `sha256:${randomBytes(32).toString('hex')}` }),
  ListContainers: () => ({ containers: [] }),
  ListPodSandbox: () => ({ items: [] }),
};

/** Starts the floor server on socketPath (an absolute path; a stale socket file is replaced). */
export async function startFloorServer(socketPath: string): Promise<FloorServer> {
  const overrides = new Map<string, object>();
  const counts = new Map<string, number>();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': CRI_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': CRI_MAX_MESSAGE_BYTES,
  });

  const addService = (definition: grpc.ServiceDefinition): void => {
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const [method, spec] of Object.entries(definition)) {
      counts.set(method, 0);
      if (spec.responseStream) {
        // Server-streaming RPCs: an empty stream is a valid answer.
        handlers[method] = (call: grpc.ServerWritableStream<unknown, unknown>) => {
          counts.set(method, (counts.get(method) ?? 0) + 1);
          call.end();
        };
        continue;
      }
      const fixed = FIXED_RESPONSES[method];
      handlers[method] = (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        counts.set(method, (counts.get(method) ?? 0) + 1);
        callback(null, overrides.get(method) ?? (fixed ? fixed() : {}));
      };
    }
    server.addService(definition, handlers);
  };
  addService(runtimeServiceDefinition() as unknown as grpc.ServiceDefinition);
  addService(imageServiceDefinition() as unknown as grpc.ServiceDefinition);

  rmSync(socketPath, { force: true });
  const endpoint = unixEndpoint(socketPath);
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
  });

  return {
    endpoint,
    setResponse(method, response) {
      overrides.set(method, response);
    },
    calls(method) {
      return counts.get(method) ?? 0;
    },
    close() {
      return new Promise<void>((resolve) => {
        server.tryShutdown(() => {
          rmSync(socketPath, { force: true });
          resolve();
        });
        // Bounded: in-flight calls get a second, then the server is forced down.
        setTimeout(() => server.forceShutdown(), 1000).unref();
      });
    },
  };
}
