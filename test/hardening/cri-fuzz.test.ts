// Fuzzing every CRI RPC over the real socket. Requests are generated from the proto's own
// descriptors (every field of every request message: huge, empty and non-BMP strings, lone
// surrogates, ids of live objects, extreme int64 and uint64 values, unknown enum values, thousands
// of labels and annotations), then mutated at the wire level (random bytes, truncation, invalid
// bytes inside string fields). Each call has a deadline. Expected: the runtime never crashes or
// hangs, every answer is OK or a clear gRPC status (known code, a message, no JavaScript exception
// text, INTERNAL only for bytes that do not decode or a string field that is not UTF-8), it still
// answers Version afterwards,
// and once everything is removed no credential spec file is left.
import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import fc from 'fast-check';
import { join } from 'node:path';
import { CRI_LOADER_OPTIONS, imageServiceDefinition, runtimeServiceDefinition } from '../../src/cri/proto.js';
import { repoRoot } from '../support/paths.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from '../runtime/windows/kep-example.js';
import {
  BUSYBOX,
  IIS,
  codeName,
  crashLines,
  credentialSpecFiles,
  fcParameters,
  removeEverything,
  startHardeningRuntime,
  unclearStatus,
  type HardeningRuntime,
  type Service,
} from './support.js';

/** What grpc-js answers for bytes that do not decode as the request message. */
const UNDECODABLE = 'Error deserializing request';
/**
 * What the runtime answers for a string field that is not UTF-8, as containerd's grpc-go server
 * does (grpc-go v1.72.1 server.go, protobuf-go v1.36.6 internal/impl/codec_field.go).
 */
const INVALID_UTF8 = 'grpc: error unmarshalling request: string field contains invalid UTF-8';

/** Whether a request holds a string with a lone surrogate (protobufjs may encode it as bytes that are not UTF-8). */
function hasIllFormedString(value: unknown): boolean {
  // In a `u` regular expression a surrogate pair is one code point: only a lone surrogate is Cs.
  if (typeof value === 'string') return /\p{Cs}/u.test(value);
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return false;
  return Object.entries(value).some(([key, v]) => hasIllFormedString(key) || hasIllFormedString(v));
}
const CALL_DEADLINE_MS = 8_000;

interface FieldDescriptor {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName: string;
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: Array<MessageDescriptor & { options: { mapEntry?: boolean } | null }>;
}

const packageDefinition = protoLoader.loadSync(join('runtime', 'v1', 'api.proto'), { ...CRI_LOADER_OPTIONS, includeDirs: [join(repoRoot, 'proto')] });

function messageType(typeName: string): MessageDescriptor {
  const found = (packageDefinition[`runtime.v1.${typeName}`] ?? packageDefinition[typeName]) as { type?: MessageDescriptor } | undefined;
  if (found?.type === undefined) throw new Error(`no message type ${typeName} in the CRI proto`);
  return found.type;
}

const INT64_EXTREMES = ['-9223372036854775808', '9223372036854775807', '-1', '0', '1', '-86400', '315537897599'];
const UINT64_EXTREMES = ['0', '1', '18446744073709551615', '9223372036854775808'];
const INT32_EXTREMES = [-2147483648, 2147483647, -1, 0, 1];
const HUGE = 'x'.repeat(1 << 20);
const MANY_ENTRIES = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`hardening.example/key-${i}`, `value-${i}`]));
const NESTED_JSON = `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`;
const DEEP_ARRAY_JSON = `${'['.repeat(20000)}${']'.repeat(20000)}`;

/** Arbitrary values of every CRI request message, from its descriptor. `ids` are live object ids. */
function messageArbitrary(type: MessageDescriptor, ids: string[], depth: number): fc.Arbitrary<Record<string, unknown> | null> {
  if (depth <= 0) return fc.constant(null);
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of type.field) fields[field.name] = fieldArbitrary(type, field, ids, depth);
  const record = fc.record(fields, { requiredKeys: [] });
  return depth < 4 ? fc.option(record, { nil: null, freq: 3 }) : record;
}

function stringArbitrary(field: FieldDescriptor, ids: string[]): fc.Arbitrary<string> {
  const choices: Array<fc.WeightedArbitrary<string>> = [
    { arbitrary: fc.constant(''), weight: 3 },
    { arbitrary: fc.string({ maxLength: 40 }), weight: 4 },
    { arbitrary: fc.string({ unit: 'binary', maxLength: 20 }), weight: 2 },
    // Lone surrogates: protobufjs writes short ones as bytes that are not UTF-8 (refused, INTERNAL).
    { arbitrary: fc.constantFrom('\ud800', 'a\udfffb', '\u0000', '../../../etc/passwd', '/dev/null', 'C:\\Windows\\System32'), weight: 1 },
    { arbitrary: fc.constant(HUGE), weight: 1 },
  ];
  if (ids.length > 0 && /(^|_)id$/.test(field.name)) choices.push({ arbitrary: fc.constantFrom(...ids), weight: 6 });
  if (field.name === 'credential_spec') {
    choices.push({ arbitrary: fc.constantFrom(KEP_EXAMPLE_CREDENTIAL_SPEC, NESTED_JSON, DEEP_ARRAY_JSON, JSON.stringify({ Big: HUGE }), 'null', '[]', '{'), weight: 6 });
  }
  return fc.oneof(...choices);
}

function fieldArbitrary(parent: MessageDescriptor, field: FieldDescriptor, ids: string[], depth: number): fc.Arbitrary<unknown> {
  const repeated = field.label === 'LABEL_REPEATED';
  const mapEntry = parent.nestedType.find((n) => n.name === field.typeName && n.options?.mapEntry === true);
  if (mapEntry !== undefined) {
    const value = mapEntry.field.find((f) => f.name === 'value');
    if (value?.type !== 'TYPE_STRING') return fc.constant({});
    return fc.oneof(
      { arbitrary: fc.dictionary(fc.string({ maxLength: 20 }), fc.string({ maxLength: 40 }), { maxKeys: 5 }), weight: 8 },
      { arbitrary: fc.constant(MANY_ENTRIES), weight: 1 },
    );
  }
  let single: fc.Arbitrary<unknown>;
  switch (field.type) {
    case 'TYPE_STRING': single = stringArbitrary(field, ids); break;
    case 'TYPE_INT64': single = fc.oneof(fc.constantFrom(...INT64_EXTREMES), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String)); break;
    case 'TYPE_UINT64': single = fc.oneof(fc.constantFrom(...UINT64_EXTREMES), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String)); break;
    case 'TYPE_INT32': single = fc.oneof(fc.constantFrom(...INT32_EXTREMES), fc.integer()); break;
    case 'TYPE_UINT32': single = fc.oneof(fc.constantFrom(0, 1, 4294967295), fc.integer({ min: 0, max: 4294967295 })); break;
    // Unknown enum values arrive as numbers, as a newer client would send them.
    case 'TYPE_ENUM': single = fc.oneof(fc.integer({ min: 0, max: 4 }), fc.constantFrom(-1, 99, 2147483647)); break;
    case 'TYPE_BOOL': single = fc.boolean(); break;
    case 'TYPE_DOUBLE': single = fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0)); break;
    case 'TYPE_BYTES': single = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)); break;
    case 'TYPE_MESSAGE': single = messageArbitrary(messageType(field.typeName), ids, depth - 1); break;
    default: throw new Error(`no arbitrary for ${field.type} (${parent.name}.${field.name})`);
  }
  if (!repeated) return single;
  if (field.type !== 'TYPE_MESSAGE') return fc.array(single, { maxLength: 4 });
  // Elements of a repeated message are never null; below the depth limit there are none.
  if (depth <= 1) return fc.constant([]);
  return fc.array(single.filter((v) => v !== null), { maxLength: 4 });
}

/** The unary RPCs of both services, as [service, method, definition]. */
function unaryRpcs(): Array<[Service, string, grpc.MethodDefinition<unknown, unknown>]> {
  const out: Array<[Service, string, grpc.MethodDefinition<unknown, unknown>]> = [];
  for (const [service, definition] of [['runtime', runtimeServiceDefinition()], ['image', imageServiceDefinition()]] as const) {
    for (const [name, method] of Object.entries(definition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>)) {
      if (!method.requestStream && !method.responseStream) out.push([service, name, method]);
    }
  }
  return out;
}

/** Why an outcome is not acceptable for a fuzzed request, or undefined when it is. */
function badOutcome(err: grpc.ServiceError | undefined, wire: boolean, illFormed: boolean): string | undefined {
  if (err === undefined) return undefined;
  // A request over 16 MiB is refused by the client or the server: RESOURCE_EXHAUSTED either way.
  if (err.code === grpc.status.RESOURCE_EXHAUSTED && err.details !== '') return undefined;
  // The client's own deadline: the runtime never answered.
  if (err.code === grpc.status.DEADLINE_EXCEEDED && err.details.startsWith('Deadline exceeded')) return `no answer before the ${CALL_DEADLINE_MS} ms deadline (a hang)`;
  if (wire && err.code === grpc.status.INTERNAL && err.details === UNDECODABLE) return undefined;
  // Only a request that can carry bytes that are not UTF-8 may be refused for them.
  if ((wire || illFormed) && err.code === grpc.status.INTERNAL && err.details === INVALID_UTF8) return undefined;
  return unclearStatus(err);
}

describe('hardening: every CRI RPC fuzzed over the socket', function () {
  this.timeout(300_000);
  let h: HardeningRuntime | undefined;
  const ids: string[] = [];
  const runtime = (): HardeningRuntime => {
    if (h === undefined) throw new Error('no runtime (see the before all hook)');
    return h;
  };

  /** A ready pod with a running and a created container (with a credential spec): ids the fuzzer reuses. */
  async function seedObjects(): Promise<void> {
    const rt = runtime();
    ids.length = 0;
    await rt.call('image', 'PullImage', { image: { image: BUSYBOX } });
    await rt.call('image', 'PullImage', { image: { image: IIS } });
    const pod = { metadata: { name: 'fuzz', namespace: 'hardening', uid: `uid-fuzz-${Date.now()}`, attempt: 0 } };
    const { pod_sandbox_id: podId } = await rt.call('runtime', 'RunPodSandbox', { config: pod });
    const container = (name: string, image: string, extra: object) => ({
      pod_sandbox_id: podId,
      config: { metadata: { name }, image: { image }, command: ['sleep', '3600'], ...extra },
      sandbox_config: pod,
    });
    const { container_id: running } = await rt.call('runtime', 'CreateContainer', container('running', BUSYBOX, {}));
    await rt.call('runtime', 'StartContainer', { container_id: running });
    const { container_id: created } = await rt.call('runtime', 'CreateContainer', container('created', IIS, {
      windows: { security_context: { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC } },
    }));
    ids.push(podId, running, created, BUSYBOX, IIS);
  }

  before(async () => {
    h = await startHardeningRuntime('hardening-fuzz');
    await seedObjects();
  });

  after(async () => {
    const left = h === undefined ? [] : crashLines(h.rt.output());
    await h?.stop();
    expect(left, 'exceptions in the runtime output').to.deep.equal([]);
  });

  /** Healthy after the fuzzing: Version answers, everything can be removed, no credential spec is left. */
  async function checkHealthyAndClean(): Promise<void> {
    const rt = runtime();
    expect(rt.rt.running(), 'the runtime process is still running').to.equal(true);
    const version = await rt.call('runtime', 'Version', {}, 5_000);
    expect(version.runtime_name).to.equal('cri-winsim');
    await removeEverything(rt);
    expect(await credentialSpecFiles(rt.rt.stateDir), 'credential spec files after removing everything').to.deep.equal([]);
    await seedObjects();
  }

  for (const [service, rpc, method] of unaryRpcs()) {
    it(`${rpc}: random requests get OK or a clear status`, async () => {
      const requestType = (method as unknown as { requestType: { type: MessageDescriptor } }).requestType.type;
      const seen = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(messageArbitrary(requestType, ids, 4), async (request) => {
          const err = await runtime().outcome(service, rpc, request ?? {}, CALL_DEADLINE_MS);
          const key = err === undefined ? 'OK' : codeName(err.code);
          seen.set(key, (seen.get(key) ?? 0) + 1);
          const bad = badOutcome(err, false, hasIllFormedString(request));
          if (bad !== undefined) throw new Error(`${rpc}: ${bad}`);
        }),
        fcParameters(6),
      );
      await checkHealthyAndClean();
    });
  }

  it('answers bytes that are not the request message with a status, for every RPC', async () => {
    const rpcs = unaryRpcs();
    const raw = new grpc.Client(runtime().rt.endpoint, grpc.credentials.createInsecure());
    const send = (path: string, bytes: Buffer): Promise<grpc.ServiceError | undefined> =>
      new Promise((resolve) => {
        raw.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, bytes, { deadline: Date.now() + CALL_DEADLINE_MS }, (err) => resolve(err ?? undefined));
      });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: rpcs.length - 1 }),
          fc.uint8Array({ maxLength: 200 }),
          fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
          fc.option(fc.nat(), { nil: undefined }),
          async (index, prefix, flips, cut) => {
            const [service, rpc, method] = rpcs[index]!;
            // A mutated valid request (the seed objects' ids) or plain random bytes.
            const valid = method.requestSerialize({ pod_sandbox_id: ids[0], container_id: ids[1], image: { image: BUSYBOX } } as never);
            const bytes = Buffer.from(prefix.length % 2 === 0 ? Buffer.concat([valid, Buffer.from(prefix)]) : Buffer.from(prefix));
            for (const [at, value] of flips) if (bytes.length > 0) bytes[at % bytes.length] = value;
            const sent = cut === undefined || bytes.length === 0 ? bytes : bytes.subarray(0, cut % bytes.length);
            const servicePath = service === 'runtime' ? 'runtime.v1.RuntimeService' : 'runtime.v1.ImageService';
            const err = await send(`/${servicePath}/${rpc}`, sent);
            const bad = badOutcome(err, true, true);
            if (bad !== undefined) throw new Error(`${rpc} with ${sent.toString('hex').slice(0, 120)}: ${bad}`);
          },
        ),
        fcParameters(150),
      );
    } finally {
      raw.close();
    }
    await checkHealthyAndClean();
  });

  it('opens GetContainerEvents with random bytes and drops it without harm', async () => {
    const raw = new grpc.Client(runtime().rt.endpoint, grpc.credentials.createInsecure());
    try {
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ maxLength: 40 }), async (bytes) => {
          const stream = raw.makeServerStreamRequest('/runtime.v1.RuntimeService/GetContainerEvents', (b: Buffer) => b, (b: Buffer) => b, Buffer.from(bytes), { deadline: Date.now() + CALL_DEADLINE_MS });
          const ended = new Promise<grpc.ServiceError | undefined>((resolve) => {
            stream.on('error', (err: grpc.ServiceError) => resolve(err));
            stream.on('end', () => resolve(undefined));
            stream.on('data', () => undefined);
          });
          await new Promise((r) => setTimeout(r, 5));
          stream.cancel();
          const err = await ended;
          if (err !== undefined && err.code !== grpc.status.CANCELLED) {
            const bad = badOutcome(err, true, true);
            if (bad !== undefined) throw new Error(`GetContainerEvents: ${bad}`);
          }
        }),
        fcParameters(20),
      );
    } finally {
      raw.close();
    }
    await checkHealthyAndClean();
  });
});
