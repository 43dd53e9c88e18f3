// The in-process CRI client against the gRPC path, call by call: one scripted backend is served
// both by the CriServer on a socket (reached with createCriClient) and by createInProcessCriClient,
// and every test makes the same call through both and compares what the runtime received and what
// the caller got. The transport texts pinned here are grpc-js 1.14's (call.ts callErrorFromStatus,
// resolving-call.ts deadline, client-interceptors.ts serialization failure, internal-channel.ts
// shut down); the request-decoding text is protobuf-go's (request-decoding.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { expect } from 'chai';
import type { CriBackend } from '../../src/cri/backend.js';
import { createInProcessCriClient } from '../../src/cri/in-process-client.js';
import { CRI_LOADER_OPTIONS, createCriClient, criProtoRoot, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { UNARY_INVALID_UTF8_MESSAGE } from '../../src/cri/request-decoding.js';
import { CriServer } from '../../src/cri/server.js';
import { RuntimeError, type RuntimeErrorCode } from '../../src/runtime/errors.js';

type Answer = (request: unknown, deadlineMs: number | undefined) => unknown;

/**
 * A backend that records every request (with the deadline it was given) and answers with what the
 * test scripted for the method; a method nobody scripted answers `{}`.
 */
class ScriptedBackend {
  readonly received: { method: string; request: unknown; deadlineMs: number | undefined }[] = [];
  readonly answers = new Map<string, Answer>();
  readonly listeners = new Set<(event: object) => void>();

  asBackend(): CriBackend {
    return new Proxy(this, {
      get: (target, name) => {
        if (name === 'subscribeContainerEvents') {
          return (listener: (event: object) => void) => {
            target.listeners.add(listener);
            return () => target.listeners.delete(listener);
          };
        }
        if (typeof name !== 'string' || name === 'then' || !/^[a-z]/.test(name) || name in target) return undefined;
        return async (request: unknown, deadlineMs?: number) => {
          target.received.push({ method: name, request, deadlineMs });
          const answer = target.answers.get(name);
          return answer === undefined ? {} : answer(request, deadlineMs);
        };
      },
    }) as unknown as CriBackend;
  }
}

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('the call should have failed');
}

/** The fields of a ServiceError a caller reads. */
const errorFields = (err: ServiceError) => ({ code: err.code, details: err.details, message: err.message, metadata: err.metadata instanceof Metadata });

/** What proto-loader's serializer and the server's deserializer make of a request: bytes and back. */
function throughTheWire(typeName: string, value: object): unknown {
  const type = criProtoRoot().lookupType(`runtime.v1.${typeName}`);
  return type.toObject(type.decode(type.encode(type.fromObject(value)).finish()), CRI_LOADER_OPTIONS);
}

describe('in-process CRI client: the same calls as over the socket', function () {
  this.timeout(20_000);
  let dir: string;
  let backend: ScriptedBackend;
  let server: CriServer;
  let grpcClient: CriClient;
  let inProcess: CriClient;
  /** The same call through both clients, one after the other (the backend's records in that order). */
  let both: (call: (cri: CriClient) => Promise<unknown>) => Promise<[unknown, unknown]>;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cri-inp-'));
    backend = new ScriptedBackend();
    const runtime = backend.asBackend();
    server = new CriServer({ runtime });
    const endpoint = await server.listen(`unix://${join(dir, 'cri.sock')}`);
    grpcClient = createCriClient(endpoint);
    inProcess = createInProcessCriClient({ runtime, endpoint });
    both = async (call) => {
      const overSocket = await call(grpcClient);
      const direct = await call(inProcess);
      return [overSocket, direct];
    };
  });

  afterEach(async () => {
    grpcClient.close();
    inProcess.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('requests reach the runtime as the server decodes them', () => {
    const samples: [string, string, object][] = [
      ['RunPodSandbox', 'RunPodSandboxRequest', { config: { metadata: { name: 'web', namespace: 'default', uid: 'u1' }, labels: { app: 'web' } } }],
      ['CreateContainer', 'CreateContainerRequest', {
        pod_sandbox_id: 'p1',
        config: {
          metadata: { name: 'app' },
          image: { image: 'mcr.microsoft.com/windows/servercore:ltsc2022' },
          command: ['ping', '-t', 'localhost'],
          envs: [{ key: 'A', value: '1' }],
          windows: { resources: { memory_limit_in_bytes: 268435456, cpu_shares: 2 }, security_context: { run_as_username: 'ContainerUser' } },
          linux: { resources: { memory_limit_in_bytes: '1024', cpu_period: 100000 } },
        },
        sandbox_config: { metadata: { name: 'web', namespace: 'default', uid: 'u1', attempt: 1 } },
      }],
      ['ListContainers', 'ListContainersRequest', {}],
      ['ListContainers', 'ListContainersRequest', { filter: { state: { state: 1 }, label_selector: { 'io.kubernetes.pod.uid': 'u1' } } }],
      ['ContainerStatus', 'ContainerStatusRequest', { container_id: 'c1' }],
      ['ExecSync', 'ExecSyncRequest', { container_id: 'c1', cmd: ['cmd', '/c', 'echo', 'héllo ✓ 𝄞'], timeout: 3 }],
      ['StopContainer', 'StopContainerRequest', { container_id: 'c1', timeout: '30' }],
      ['ListPodSandboxStats', 'ListPodSandboxStatsRequest', { filter: null }],
    ];
    for (const [rpc, typeName, request] of samples) {
      it(`${rpc} ${JSON.stringify(request).slice(0, 60)}: the same object, equal to a trip through the proto codec`, async () => {
        const image = rpc === 'PullImage';
        await both((cri) => unaryCall((image ? cri.image : cri.runtime) as never, rpc as never, request as never));
        expect(backend.received).to.have.length(2);
        const [overSocket, direct] = backend.received;
        expect(direct!.method).to.equal(overSocket!.method);
        expect(direct!.request).to.deep.equal(overSocket!.request);
        expect(direct!.request).to.deep.equal(throughTheWire(typeName, request));
      });
    }

    it('PullImage (ImageService): auth and sandbox config defaulted the same way', async () => {
      const request = { image: { image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022' }, auth: { username: 'u', password: 'p' } };
      await both((cri) => unaryCall(cri.image, 'PullImage', request));
      expect(backend.received[1]!.request).to.deep.equal(backend.received[0]!.request);
      expect(backend.received[1]!.request).to.deep.include({ sandbox_config: null });
    });

    it('gives the runtime a copy: a later change to the caller\'s request object is not seen', async () => {
      const request = { container_id: 'c1', cmd: ['whoami'], timeout: 0 };
      const pending = unaryCall(inProcess.runtime, 'ExecSync', request);
      request.cmd.push('/upn');
      request.container_id = 'changed';
      await pending;
      expect(backend.received[0]!.request).to.deep.include({ container_id: 'c1', cmd: ['whoami'] });
    });

    it('refuses a short string with a lone surrogate as the server does (bytes that are not UTF-8), and passes a long one as U+FFFD', async () => {
      const short = 'c1\ud800';
      const [a, b] = await Promise.all([failure(unaryCall(grpcClient.runtime, 'ContainerStatus', { container_id: short })), failure(unaryCall(inProcess.runtime, 'ContainerStatus', { container_id: short }))]);
      expect(errorFields(b)).to.deep.equal(errorFields(a));
      expect(b.code).to.equal(status.INTERNAL);
      expect(b.details).to.equal(UNARY_INVALID_UTF8_MESSAGE);
      expect(backend.received).to.deep.equal([]);
      const long = `${'x'.repeat(50)}\udc00`;
      await both((cri) => unaryCall(cri.runtime, 'ContainerStatus', { container_id: long }));
      expect(backend.received.map((r) => (r.request as { container_id: string }).container_id)).to.deep.equal([`${'x'.repeat(50)}\ufffd`, `${'x'.repeat(50)}\ufffd`]);
    });

    it('fails a request that does not serialize before it leaves the client (INTERNAL, grpc-js\'s text)', async () => {
      const bad = { pod_sandbox_id: 'p1', config: { mounts: [null] } };
      const [a, b] = await Promise.all([failure(unaryCall(grpcClient.runtime, 'CreateContainer', bad as never)), failure(unaryCall(inProcess.runtime, 'CreateContainer', bad as never))]);
      expect(errorFields(b)).to.deep.equal(errorFields(a));
      expect(b.details).to.match(/^Request message serialization failure: /);
      expect(backend.received).to.deep.equal([]);
    });
  });

  describe('responses reach the caller as the client decodes them', () => {
    it('fills defaults, writes int64 as strings and copies bytes, like the client\'s decoder', async () => {
      const stdout = Buffer.from('WINNODE1\r\n');
      backend.answers.set('execSync', () => ({ stdout, exit_code: 0 }));
      backend.answers.set('containerStatus', () => ({
        status: { id: 'c1', metadata: { name: 'app' }, state: 1, created_at: 1_700_000_000_000_000_000, started_at: '1700000000000000001', labels: { a: 'b' }, image: { image: 'img' } },
      }));
      const [a, b] = await both((cri) => unaryCall(cri.runtime, 'ExecSync', { container_id: 'c1', cmd: ['hostname'], timeout: 0 }));
      expect(b).to.deep.equal(a);
      expect(Buffer.isBuffer((b as { stdout: unknown }).stdout)).to.equal(true);
      (b as { stdout: Buffer }).stdout[0] = 0x21;
      expect(stdout.toString()).to.equal('WINNODE1\r\n');
      const [c, d] = await both((cri) => unaryCall(cri.runtime, 'ContainerStatus', { container_id: 'c1' }));
      expect(d).to.deep.equal(c);
      expect((d as { status: { created_at: unknown } }).status.created_at).to.equal('1700000000000000000');
      expect(d).to.deep.include({ info: {} });
    });

    it('shares nothing mutable with the runtime: changing a response leaves the next one as it was', async () => {
      const status = { id: 'c1', metadata: { name: 'app' }, labels: { a: 'b' }, mounts: [{ container_path: 'C:\\data' }] };
      backend.answers.set('containerStatus', () => ({ status }));
      const first = await unaryCall(inProcess.runtime, 'ContainerStatus', { container_id: 'c1' });
      first.status!.labels.a = 'changed';
      first.status!.mounts.push({} as never);
      first.status!.metadata!.name = 'changed';
      const second = await unaryCall(inProcess.runtime, 'ContainerStatus', { container_id: 'c1' });
      expect(second.status!.labels).to.deep.equal({ a: 'b' });
      expect(second.status!.mounts).to.have.length(1);
      expect(status.metadata.name).to.equal('app');
    });

    it('gives list elements as the socket client\'s cached decoding does: equal, frozen, the same object while the runtime\'s is', async () => {
      const container = { id: 'c1', pod_sandbox_id: 'p1', metadata: { name: 'app', attempt: 0 }, image: { image: 'img' }, state: 1, created_at: '1', labels: { a: 'b' } };
      const items = [{ id: 'p1', metadata: { name: 'web', namespace: 'default', uid: 'u1' }, state: 0, created_at: 2 }];
      backend.answers.set('listContainers', () => ({ containers: [container] }));
      backend.answers.set('listPodSandbox', () => ({ items }));
      const [a, b] = await both((cri) => unaryCall(cri.runtime, 'ListContainers', {}));
      expect(b).to.deep.equal(a);
      const [c, d] = await both((cri) => unaryCall(cri.runtime, 'ListPodSandbox', {}));
      expect(d).to.deep.equal(c);
      const again = await unaryCall(inProcess.runtime, 'ListContainers', {});
      const element = (b as { containers: object[] }).containers[0]!;
      expect(again.containers[0]).to.equal(element);
      expect(Object.isFrozen(element)).to.equal(true);
      expect(() => {
        (element as { id: string }).id = 'x';
      }).to.throw(TypeError);
      expect(again.containers).to.not.equal((b as { containers: object[] }).containers);
    });

    it('answers a response that does not serialize with INTERNAL "Error serializing response"', async () => {
      backend.answers.set('containerStatus', () => ({ status: { mounts: [null] } }));
      const [a, b] = await Promise.all([failure(unaryCall(grpcClient.runtime, 'ContainerStatus', { container_id: 'c1' })), failure(unaryCall(inProcess.runtime, 'ContainerStatus', { container_id: 'c1' }))]);
      expect(errorFields(b)).to.deep.equal(errorFields(a));
      expect(b.details).to.equal('Error serializing response');
    });

    it('carries a response string with a lone surrogate as the wire does', async () => {
      backend.answers.set('version', () => ({ version: 'v\ud800', runtime_name: `${'n'.repeat(45)}\udfff` }));
      const [a, b] = await both((cri) => unaryCall(cri.runtime, 'Version', { version: '' }));
      expect(b).to.deep.equal(a);
    });
  });

  describe('errors, deadlines and cancellation', () => {
    const codes: RuntimeErrorCode[] = ['InvalidArgument', 'NotFound', 'AlreadyExists', 'FailedPrecondition', 'DeadlineExceeded', 'ResourceExhausted', 'Unavailable', 'Internal', 'Unknown', 'PermissionDenied'];
    for (const code of codes) {
      it(`a RuntimeError ${code} is the same ServiceError (code, details, message)`, async () => {
        backend.answers.set('containerStatus', () => {
          throw new RuntimeError(code, `container "c1": ${code} from the runtime`);
        });
        const a = await failure(unaryCall(grpcClient.runtime, 'ContainerStatus', { container_id: 'c1' }));
        const b = await failure(unaryCall(inProcess.runtime, 'ContainerStatus', { container_id: 'c1' }));
        expect(errorFields(b)).to.deep.equal(errorFields(a));
        expect(b).to.be.instanceOf(Error);
        expect(b.message).to.equal(`${b.code} ${status[b.code]}: container "c1": ${code} from the runtime`);
      });
    }

    it('an unexpected error is INTERNAL without its stack, a long message is cut as on the wire', async () => {
      backend.answers.set('stopContainer', () => {
        throw new TypeError('boom');
      });
      backend.answers.set('removeContainer', () => {
        throw new RuntimeError('NotFound', `container ${'x'.repeat(5000)} not found`);
      });
      for (const rpc of ['StopContainer', 'RemoveContainer'] as const) {
        const a = await failure(unaryCall(grpcClient.runtime, rpc, { container_id: 'c1' }));
        const b = await failure(unaryCall(inProcess.runtime, rpc, { container_id: 'c1' }));
        expect(errorFields(b)).to.deep.equal(errorFields(a));
      }
    });

    it('an RPC the simulator does not offer is UNIMPLEMENTED with the same text', async () => {
      const a = await failure(unaryCall(grpcClient.runtime, 'CheckpointContainer', { container_id: 'c1' }));
      const b = await failure(unaryCall(inProcess.runtime, 'CheckpointContainer', { container_id: 'c1' }));
      expect(errorFields(b)).to.deep.equal(errorFields(a));
      expect(b.code).to.equal(status.UNIMPLEMENTED);
    });

    it('passes the deadline to the runtime and ends a call that outlives it with DEADLINE_EXCEEDED, dropping the late answer', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      backend.answers.set('stopPodSandbox', async () => {
        await gate;
        return {};
      });
      const started = Date.now();
      const [a, b] = await Promise.all([
        failure(unaryCall(grpcClient.runtime, 'StopPodSandbox', { pod_sandbox_id: 'p1' }, { timeoutMs: 200 })),
        failure(unaryCall(inProcess.runtime, 'StopPodSandbox', { pod_sandbox_id: 'p1' }, { timeoutMs: 200 })),
      ]);
      release();
      for (const err of [a, b]) {
        expect(err.code).to.equal(status.DEADLINE_EXCEEDED);
        expect(err.details).to.match(/^Deadline exceeded after \d+\.\d{3}s/);
        expect(err.message).to.match(/^4 DEADLINE_EXCEEDED: Deadline exceeded after /);
      }
      for (const r of backend.received) expect(r.deadlineMs).to.be.within(started + 200, started + 1000);
    });

    it('calls back once: the handler\'s answer after the deadline is dropped', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      backend.answers.set('version', async () => {
        await gate;
        return { version: 'late' };
      });
      const calls: [ServiceError | null, unknown][] = [];
      (inProcess.runtime.Version as unknown as (r: object, m: Metadata, o: object, cb: (e: ServiceError | null, v: unknown) => void) => void)({}, new Metadata(), { deadline: Date.now() + 50 }, (e, v) => calls.push([e, v]));
      await new Promise((r) => setTimeout(r, 150));
      release();
      await new Promise((r) => setTimeout(r, 50));
      expect(calls).to.have.length(1);
      expect(calls[0]![0]!.code).to.equal(status.DEADLINE_EXCEEDED);
    });

    it('cancel() ends a unary call with CANCELLED "Cancelled on client"', async () => {
      backend.answers.set('version', () => new Promise(() => {}));
      const err = await new Promise<ServiceError>((resolve) => {
        const call = (inProcess.runtime.Version as unknown as (r: object, cb: (e: ServiceError | null) => void) => { cancel(): void })({}, (e) => resolve(e!));
        call.cancel();
      });
      expect(errorFields(err)).to.deep.equal({ code: status.CANCELLED, details: 'Cancelled on client', message: '1 CANCELLED: Cancelled on client', metadata: true });
    });

    it('calls back asynchronously, never inside the caller\'s call, even for an immediate answer', async () => {
      let returned = false;
      const calledBackAfterReturn = await new Promise<boolean>((resolve) => {
        (inProcess.runtime.CheckpointContainer as unknown as (r: object, cb: () => void) => void)({ container_id: 'c1' }, () => resolve(returned));
        returned = true;
      });
      expect(calledBackAfterReturn).to.equal(true);
    });

    it('after close() a call throws grpc-js\'s "Channel has been shut down", as a closed socket client does', async () => {
      grpcClient.close();
      inProcess.close();
      const a = await failure(unaryCall(grpcClient.runtime, 'Version', {}));
      const b = await failure(unaryCall(inProcess.runtime, 'Version', {}));
      expect(b.message).to.equal(a.message).and.to.equal('Channel has been shut down');
    });
  });

  describe('GetContainerEvents', () => {
    it('streams the runtime\'s events as copies, later, and drops the subscription when the client cancels', async () => {
      const received: unknown[] = [];
      const stream = inProcess.runtime.GetContainerEvents({});
      const errors: ServiceError[] = [];
      stream.on('data', (event: unknown) => received.push(event));
      stream.on('error', (err: ServiceError) => errors.push(err));
      expect(backend.listeners.size).to.equal(1);
      const event = { container_id: 'c1', container_event_type: 2, created_at: 1_700_000_000_000_000_000, pod_sandbox_status: { metadata: { uid: 'u1' } } };
      for (const listener of backend.listeners) listener(event);
      expect(received, 'not inside the runtime\'s own call').to.deep.equal([]);
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      expect(received).to.have.length(1);
      expect(received[0]).to.deep.equal(throughTheWire('ContainerEventResponse', event));
      stream.cancel();
      await new Promise((r) => setImmediate(r));
      expect(backend.listeners.size).to.equal(0);
      expect(errors.map(errorFields)).to.deep.equal([{ code: status.CANCELLED, details: 'Cancelled on client', message: '1 CANCELLED: Cancelled on client', metadata: true }]);
    });

    it('ends open streams on close()', async () => {
      const stream = inProcess.runtime.GetContainerEvents({});
      const ended = new Promise<void>((resolve) => stream.on('end', () => resolve()));
      stream.on('data', () => {});
      inProcess.close();
      await ended;
      expect(backend.listeners.size).to.equal(0);
    });
  });
});
