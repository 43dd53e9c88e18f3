import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status, type ServiceError } from '@grpc/grpc-js';
import { expect } from 'chai';
import { CriServer } from '../../src/cri/server.js';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { createCriClient, imageServiceDefinition, runtimeServiceDefinition, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { rpcMethodName } from '../../src/runtime/rpc.js';
import { RuntimeError, type RuntimeErrorCode } from '../../src/runtime/errors.js';
import type { ContainerEventResponse__Output } from '../../src/generated/runtime/v1/ContainerEventResponse.js';
import { FakeRuntime } from './fake-runtime.js';

async function expectStatus(promise: Promise<unknown>, code: status, details?: string | RegExp): Promise<ServiceError> {
  let error: ServiceError | undefined;
  try {
    await promise;
  } catch (err) {
    error = err as ServiceError;
  }
  expect(error, 'the call should have failed').to.not.equal(undefined);
  expect(error!.code, `status of "${error!.details}"`).to.equal(code);
  if (typeof details === 'string') expect(error!.details).to.equal(details);
  else if (details !== undefined) expect(error!.details).to.match(details);
  return error!;
}

/** Leaves a socket file nobody answers on, as a runtime killed with SIGKILL does. */
function leaveStaleSocket(path: string): Promise<void> {
  const script = `require('net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', () => resolve());
  });
}

describe('CRI gRPC server (edge behaviour, fake runtime)', () => {
  let dir: string;
  let endpoint: string;
  let socketPath: string;
  let runtime: FakeRuntime;
  let server: CriServer;
  let client: CriClient | undefined;
  const observed: Array<[string, number, status]> = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cri-server-'));
    socketPath = join(dir, 'run', 'cri.sock');
    endpoint = `unix://${socketPath}`;
    runtime = new FakeRuntime();
    observed.length = 0;
    server = new CriServer({
      runtime,
      shutdownTimeoutMs: 2000,
      observer: { onCall: (method, seconds, code) => observed.push([method, seconds, code]) },
    });
  });

  afterEach(async () => {
    client?.close();
    client = undefined;
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function start(): Promise<CriClient> {
    await server.listen(endpoint);
    client = createCriClient(endpoint);
    return client;
  }

  describe('socket', () => {
    it('creates the parent directory and leaves the socket with mode 0660', async () => {
      const returned = await server.listen(endpoint);
      expect(returned).to.equal(endpoint);
      const info = await lstat(socketPath);
      expect(info.isSocket()).to.equal(true);
      expect(info.mode & 0o777).to.equal(0o660);
      expect((await stat(join(dir, 'run'))).isDirectory()).to.equal(true);
    });

    it('makes its gRPC server on the first connection, and closes without one', async () => {
      await server.listen(endpoint);
      expect(server.serving).to.equal(false);
      const cri = createCriClient(endpoint);
      client = cri;
      expect((await unaryCall(cri.runtime, 'Version', {})).runtime_name).to.equal('fake');
      expect(server.serving).to.equal(true);
      cri.close();
      client = undefined;
      await server.close();
      expect(existsSync(socketPath)).to.equal(false);
      // Never connected to: close removes the socket all the same.
      server = new CriServer({ runtime });
      await server.listen(endpoint);
      await server.close();
      expect(server.serving).to.equal(false);
      expect(existsSync(socketPath)).to.equal(false);
    });

    it('replaces a stale socket file nobody answers on', async () => {
      await server.listen(endpoint);
      await server.close();
      const { mkdir } = await import('node:fs/promises');
      await mkdir(join(dir, 'run'), { recursive: true });
      await leaveStaleSocket(socketPath);
      expect((await lstat(socketPath)).isSocket(), 'stale socket left behind').to.equal(true);

      server = new CriServer({ runtime });
      await server.listen(endpoint);
      const cri = createCriClient(endpoint);
      client = cri;
      const version = await unaryCall(cri.runtime, 'Version', {});
      expect(version.runtime_name).to.equal('fake');
    });

    it('refuses to listen where a live server answers, and the live one keeps serving', async () => {
      const cri = await start();
      const second = new CriServer({ runtime: new FakeRuntime() });
      let failure: Error | undefined;
      try {
        await second.listen(endpoint);
      } catch (err) {
        failure = err as Error;
      }
      expect(failure?.message).to.equal(`another server is already listening on ${endpoint}`);
      await second.close();
      expect((await unaryCall(cri.runtime, 'Version', {})).runtime_name).to.equal('fake');
    });

    it('refuses to replace a file that is not a socket', async () => {
      const { mkdir } = await import('node:fs/promises');
      await mkdir(join(dir, 'run'));
      await writeFile(socketPath, 'not a socket');
      let failure: Error | undefined;
      try {
        await server.listen(endpoint);
      } catch (err) {
        failure = err as Error;
      }
      expect(failure?.message).to.equal(`${socketPath} exists and is not a socket; refusing to replace it`);
      expect(existsSync(socketPath)).to.equal(true);
    });

    it('accepts only unix:// endpoints with an absolute path', async () => {
      for (const bad of ['tcp://127.0.0.1:10000', '127.0.0.1:10000', 'unix://relative/cri.sock', 'unix://']) {
        let failure: Error | undefined;
        try {
          await server.listen(bad);
        } catch (err) {
          failure = err as Error;
        }
        expect(failure?.message, bad).to.match(/unix:\/\/\/absolute\/path\.sock/);
      }
      expect(() => createCriClient('tcp://127.0.0.1:1')).to.throw(/only unix:\/\/\/absolute\/path\.sock/);
    });

    it('close() lets an in-flight call finish, then removes the socket', async () => {
      const cri = await start();
      let release!: () => void;
      runtime.stall('listContainers', new Promise<void>((resolve) => { release = resolve; }));
      const inFlight = unaryCall(cri.runtime, 'ListContainers', {}, { timeoutMs: 5000 });
      await waitFor(() => runtime.calls.includes('listContainers'));
      const closed = server.close();
      setTimeout(() => release(), 100);
      const response = await inFlight;
      expect(response.containers).to.deep.equal([]);
      await closed;
      expect(existsSync(socketPath)).to.equal(false);
    });

    it('close() cuts calls that outlive the shutdown timeout and still removes the socket', async () => {
      server = new CriServer({ runtime, shutdownTimeoutMs: 100 });
      const cri = await start();
      runtime.stall('listContainers', new Promise<void>(() => undefined));
      // Settle at once (into a value), so the rejection is never "handled late".
      const inFlight = unaryCall(cri.runtime, 'ListContainers', {}, { timeoutMs: 5000 }).then(
        () => { throw new Error('the stalled call should have been cut'); },
        (err: ServiceError) => err,
      );
      await waitFor(() => runtime.calls.includes('listContainers'));
      await server.close();
      expect(existsSync(socketPath)).to.equal(false);
      expect((await inFlight).code).to.equal(status.CANCELLED);
    });
  });

  describe('errors', () => {
    const table: Array<[RuntimeErrorCode, status]> = [
      ['InvalidArgument', status.INVALID_ARGUMENT],
      ['NotFound', status.NOT_FOUND],
      ['AlreadyExists', status.ALREADY_EXISTS],
      ['FailedPrecondition', status.FAILED_PRECONDITION],
      ['DeadlineExceeded', status.DEADLINE_EXCEEDED],
      ['ResourceExhausted', status.RESOURCE_EXHAUSTED],
      ['Unimplemented', status.UNIMPLEMENTED],
      ['Unavailable', status.UNAVAILABLE],
      ['Internal', status.INTERNAL],
      ['Unknown', status.UNKNOWN],
    ];
    for (const [code, grpcCode] of table) {
      it(`maps RuntimeError ${code} to gRPC ${status[grpcCode]} with the runtime's message`, async () => {
        const cri = await start();
        runtime.failNext('startContainer', new RuntimeError(code, `container "c1": ${code} happened`));
        await expectStatus(unaryCall(cri.runtime, 'StartContainer', { container_id: 'c1' }), grpcCode, `container "c1": ${code} happened`);
      });
    }

    it('answers an unexpected error with INTERNAL and no stack trace', async () => {
      const cri = await start();
      runtime.failNext('listPodSandbox', new TypeError('Cannot read properties of undefined (reading \'id\')'));
      const err = await expectStatus(unaryCall(cri.runtime, 'ListPodSandbox', {}), status.INTERNAL);
      expect(err.details).to.equal('internal error: Cannot read properties of undefined (reading \'id\')');
      expect(err.details).to.not.match(/\n\s+at /);
    });

    it('passes NotFound from the runtime for an unknown id', async () => {
      const cri = await start();
      await expectStatus(unaryCall(cri.runtime, 'ContainerStatus', { container_id: 'nope' }), status.NOT_FOUND, 'container "nope" not found');
    });
  });

  describe('requests: decoded and passed on, validated by the runtime only', () => {
    it('passes a request with empty fields to the runtime unchecked (the runtime validates, src/runtime/validation/request.ts)', async () => {
      const cri = await start();
      await unaryCall(cri.runtime, 'StartContainer', { container_id: '' });
      await unaryCall(cri.runtime, 'CreateContainer', {});
      await unaryCall(cri.image, 'RemoveImage', {});
      expect(runtime.calls).to.deep.equal(['startContainer', 'createContainer', 'removeImage']);
    });

    it('registers a handler for every unary RPC of the proto the runtime has a method for, from the service definitions', async () => {
      const cri = await start();
      const offered = (definition: ServiceDefinition, service: object) => Object.entries(definition)
        .filter(([rpc, method]) => !method.responseStream && typeof (runtime as unknown as Record<string, unknown>)[rpcMethodName(rpc)] === 'function')
        .map(([rpc]) => [service, rpc] as const);
      const rpcs = [...offered(runtimeServiceDefinition(), cri.runtime), ...offered(imageServiceDefinition(), cri.image)];
      // 28 RuntimeService (Exec, Attach and PortForward included) and 5 ImageService RPCs: the runtime's whole contract (cri-runtime.ts).
      expect(rpcs).to.have.length(33);
      for (const [service, rpc] of rpcs) {
        runtime.calls.length = 0;
        await unaryCall(service as never, rpc as never, {} as never).catch(() => undefined);
        expect(runtime.calls, rpc).to.deep.equal([rpcMethodName(rpc)]);
      }
    });

    it('passes a well-formed request through to the runtime', async () => {
      const cri = await start();
      const response = await unaryCall(cri.runtime, 'RunPodSandbox', {
        config: { metadata: { name: 'web', namespace: 'default', uid: 'u-1' } },
      });
      expect(response.pod_sandbox_id).to.equal('sandbox-1');
      const listed = await unaryCall(cri.runtime, 'ListPodSandbox', {});
      expect(listed.items.map((i) => [i.id, i.metadata?.name])).to.deep.equal([['sandbox-1', 'web']]);
    });
  });

  describe('RPCs the simulator does not offer', () => {
    for (const method of ['CheckpointContainer'] as const) {
      it(`answers ${method} with UNIMPLEMENTED naming the RPC`, async () => {
        const cri = await start();
        await expectStatus(unaryCall(cri.runtime, method, { container_id: 'c1', pod_sandbox_id: 's1' } as never), status.UNIMPLEMENTED, new RegExp(`^${method} is not implemented by cri-winsim: `));
      });
    }

    const streams = ['StreamPodSandboxes', 'StreamContainers', 'StreamContainerStats', 'StreamPodSandboxStats', 'StreamPodSandboxMetrics'] as const;
    for (const method of [...streams, 'StreamImages'] as const) {
      it(`answers the v1.36 server stream ${method} with UNIMPLEMENTED so clients fall back to List*`, async () => {
        const cri = await start();
        const target = method === 'StreamImages' ? cri.image : cri.runtime;
        const call = (target as unknown as Record<string, (req: object) => NodeJS.EventEmitter>)[method]!.call(target, {});
        const err = await new Promise<ServiceError>((resolve) => call.once('error', resolve));
        expect(err.code).to.equal(status.UNIMPLEMENTED);
        expect(err.details).to.match(new RegExp(`^${method} is not implemented by cri-winsim: use List`));
      });
    }
  });

  describe('observer and events', () => {
    it('reports method, duration and gRPC status code of every call to the observer', async () => {
      const cri = await start();
      await unaryCall(cri.runtime, 'Version', {});
      runtime.failNext('startContainer', new RuntimeError('InvalidArgument', 'container_id is required'));
      await expectStatus(unaryCall(cri.runtime, 'StartContainer', {}), status.INVALID_ARGUMENT);
      await expectStatus(unaryCall(cri.runtime, 'CheckpointContainer', {}), status.UNIMPLEMENTED);
      expect(observed.map(([m, , c]) => [m, c])).to.deep.equal([
        ['Version', status.OK],
        ['StartContainer', status.INVALID_ARGUMENT],
        ['CheckpointContainer', status.UNIMPLEMENTED],
      ]);
      for (const [, seconds] of observed) expect(seconds).to.be.within(0, 5);
    });

    it('streams container events and drops the subscription when the client cancels', async () => {
      const cri = await start();
      const stream = cri.runtime.GetContainerEvents({});
      const received: ContainerEventResponse__Output[] = [];
      stream.on('data', (ev: ContainerEventResponse__Output) => received.push(ev));
      stream.on('error', () => undefined);
      await waitFor(() => runtime.subscribers === 1);
      runtime.emit({ container_id: 'c1', container_event_type: 1, created_at: '1700000000000000000' });
      await waitFor(() => received.length === 1);
      expect(received[0]!.container_id).to.equal('c1');
      expect(received[0]!.container_event_type).to.equal(1);
      expect(received[0]!.created_at).to.equal('1700000000000000000');
      stream.cancel();
      await waitFor(() => runtime.subscribers === 0);
      expect(server.openEventStreams).to.equal(0);
    });

    it('ends open event streams on close, so shutdown is graceful', async () => {
      const cri = await start();
      const stream = cri.runtime.GetContainerEvents({});
      const ended = new Promise<void>((resolve) => stream.on('end', resolve));
      stream.on('data', () => undefined);
      await waitFor(() => runtime.subscribers === 1);
      const started = Date.now();
      await server.close();
      await ended;
      expect(Date.now() - started).to.be.below(1500);
      expect(runtime.subscribers).to.equal(0);
      expect(existsSync(socketPath)).to.equal(false);
    });
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
