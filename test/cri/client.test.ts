import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { connect as http2Connect, createServer as createHttp2Server, type ServerHttp2Session } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { status, type ServiceError } from '@grpc/grpc-js';
import { expect } from 'chai';
import { CRI_MAX_MESSAGE_BYTES, createCriClient, criPackage, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { CriServer } from '../../src/cri/server.js';
import { FakeRuntime } from './fake-runtime.js';

describe('CRI client (src/cri/proto.ts)', () => {
  let dir: string;
  let endpoint: string;
  let runtime: FakeRuntime;
  let server: CriServer;
  let client: CriClient;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cri-client-'));
    endpoint = `unix://${join(dir, 'cri.sock')}`;
    runtime = new FakeRuntime();
    server = new CriServer({ runtime });
    await server.listen(endpoint);
    client = createCriClient(endpoint);
  });

  afterEach(async () => {
    client.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('loads both CRI services once, with every RPC of cri-api v0.36', () => {
    const pkg = criPackage();
    expect(criPackage()).to.equal(pkg);
    expect(Object.keys(pkg.RuntimeService.service)).to.have.lengthOf(35);
    expect(Object.keys(pkg.ImageService.service).sort()).to.deep.equal(
      ['ImageFsInfo', 'ImageStatus', 'ListImages', 'PullImage', 'RemoveImage', 'StreamImages'],
    );
    expect(pkg.RuntimeService.service.GetContainerEvents.responseStream).to.equal(true);
    expect(pkg.RuntimeService.service.StreamContainers.responseStream).to.equal(true);
    expect(pkg.RuntimeService.service.RuntimeConfig.responseStream).to.equal(false);
  });

  it('talks to both services over one channel', async () => {
    const version = await unaryCall(client.runtime, 'Version', { version: 'v1' });
    expect(version).to.deep.equal({ version: '0.1.0', runtime_name: 'fake', runtime_version: '0.0.1', runtime_api_version: 'v1' });
    const pulled = await unaryCall(client.image, 'PullImage', { image: { image: 'busybox' } });
    expect(pulled.image_ref).to.equal('sha256:7');
    expect(client.image.getChannel()).to.equal(client.runtime.getChannel());
  });

  it('decodes with the generator options: int64 as strings, enums as numbers, defaults filled', async () => {
    const { pod_sandbox_id: id } = await unaryCall(client.runtime, 'RunPodSandbox', {
      config: { metadata: { name: 'p', namespace: 'default', uid: 'u' } },
    });
    const { status: sandbox } = await unaryCall(client.runtime, 'PodSandboxStatus', { pod_sandbox_id: id });
    expect(sandbox?.created_at).to.be.a('string').and.match(/^\d+$/);
    expect(sandbox?.state).to.equal(0);
    expect(sandbox?.labels).to.deep.equal({});
    expect(sandbox?.linux).to.equal(null);
  });

  it('fails a call with DEADLINE_EXCEEDED when the deadline passes', async () => {
    let release!: () => void;
    runtime.stall('listImages', new Promise<void>((resolve) => { release = resolve; }));
    const started = Date.now();
    let error: ServiceError | undefined;
    try {
      await unaryCall(client.image, 'ListImages', {}, { timeoutMs: 150 });
    } catch (err) {
      error = err as ServiceError;
    } finally {
      release();
    }
    expect(error?.code).to.equal(status.DEADLINE_EXCEEDED);
    expect(Date.now() - started).to.be.below(1500);
  });

  it('opens a 16 MiB receive window (stream and connection), so a large list does not wait on window updates', async () => {
    // A bare HTTP/2 server sees what the client announces; it answers every call UNAVAILABLE.
    const socketPath = join(dir, 'h2.sock');
    const h2 = createHttp2Server();
    const seen = new Promise<{ initialWindowSize: number | undefined; connectionWindow: number | undefined }>((resolve) => {
      h2.on('session', (session: ServerHttp2Session) => {
        session.on('stream', (stream) => {
          // By the first request the client's settings and its connection WINDOW_UPDATE have arrived.
          resolve({ initialWindowSize: session.remoteSettings.initialWindowSize, connectionWindow: session.state.remoteWindowSize });
          stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status.UNAVAILABLE) }, { endStream: true });
        });
      });
    });
    await new Promise<void>((resolve) => h2.listen(socketPath, resolve));
    const probe = createCriClient(`unix://${socketPath}`);
    try {
      await unaryCall(probe.runtime, 'Version', { version: 'v1' }).catch(() => undefined);
      const windows = await seen;
      expect(windows.initialWindowSize).to.equal(CRI_MAX_MESSAGE_BYTES);
      expect(windows.connectionWindow).to.equal(CRI_MAX_MESSAGE_BYTES);
      // The control: a client with HTTP/2's defaults announces 64 KiB.
      const plainSettings = new Promise<number | undefined>((resolve) => {
        h2.once('session', (session: ServerHttp2Session) => session.once('remoteSettings', (settings) => resolve(settings.initialWindowSize)));
      });
      const plain = http2Connect('http://localhost', { createConnection: () => netConnect(socketPath) });
      try {
        expect(await plainSettings).to.equal(65535);
      } finally {
        plain.destroy();
      }
    } finally {
      probe.close();
      await new Promise<void>((resolve) => h2.close(() => resolve()));
    }
  });

  it('fails calls after close() instead of hanging', async () => {
    client.close();
    let error: Error | undefined;
    try {
      await unaryCall(client.runtime, 'Version', {});
    } catch (err) {
      error = err as Error;
    }
    // grpc-js refuses calls on a closed channel outright.
    expect(error?.message).to.match(/channel has been shut down/i);
  });
});
