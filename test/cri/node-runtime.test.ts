import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status, type ServiceError } from '@grpc/grpc-js';
import { expect } from 'chai';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { CriServer } from '../../src/cri/server.js';
import { NodeRuntime } from '../../src/runtime/node-runtime.js';

describe('CRI server in front of the real NodeRuntime', () => {
  let dir: string;
  let runtime: NodeRuntime;
  let server: CriServer;
  let client: CriClient;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cri-node-'));
    runtime = await NodeRuntime.open({ stateDir: join(dir, 'state') });
    server = new CriServer({ runtime });
    const endpoint = await server.listen(`unix://${join(dir, 'cri.sock')}`);
    client = createCriClient(endpoint);
  });

  afterEach(async () => {
    client.close();
    await server.close();
    await runtime.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('round-trips Version, RunPodSandbox and ListPodSandbox over the socket', async () => {
    const version = await unaryCall(client.runtime, 'Version', { version: 'v1' });
    expect(version.runtime_api_version).to.equal('v1');
    for (const field of ['version', 'runtime_name', 'runtime_version', 'runtime_api_version'] as const) {
      expect(version[field], field).to.be.a('string').that.is.not.empty;
    }

    const { pod_sandbox_id: id } = await unaryCall(client.runtime, 'RunPodSandbox', {
      config: {
        metadata: { name: 'web', namespace: 'default', uid: 'uid-web', attempt: 0 },
        labels: { app: 'web' },
        log_directory: join(dir, 'logs', 'web'),
      },
    });
    expect(id).to.be.a('string').that.is.not.empty;

    const listed = await unaryCall(client.runtime, 'ListPodSandbox', { filter: { label_selector: { app: 'web' } } });
    expect(listed.items.map((s) => [s.id, s.metadata?.name, s.metadata?.namespace, s.state])).to.deep.equal([
      [id, 'web', 'default', 0 /* SANDBOX_READY */],
    ]);
    expect(listed.items[0]!.labels).to.deep.equal({ app: 'web' });

    const sandbox = await unaryCall(client.runtime, 'PodSandboxStatus', { pod_sandbox_id: id });
    expect(sandbox.status?.metadata?.uid).to.equal('uid-web');
    expect(sandbox.status?.created_at).to.match(/^[1-9]\d*$/);
  });

  it('answers NotFound from the runtime for an unknown container, with its message', async () => {
    let error: ServiceError | undefined;
    try {
      await unaryCall(client.runtime, 'ContainerStatus', { container_id: 'does-not-exist' });
    } catch (err) {
      error = err as ServiceError;
    }
    expect(error?.code).to.equal(status.NOT_FOUND);
    expect(error?.details).to.include('does-not-exist');
  });
});
