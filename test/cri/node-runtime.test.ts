import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status, type ServiceError } from '@grpc/grpc-js';
import { expect } from 'chai';
import { createCriClient, imageServiceDefinition, runtimeServiceDefinition, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { CriServer } from '../../src/cri/server.js';
import { RuntimeError } from '../../src/runtime/errors.js';
import { NodeRuntime } from '../../src/runtime/node-runtime.js';
import { rpcMethodName } from '../../src/runtime/rpc.js';

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

  describe('malformed requests: InvalidArgument, one wording, from the runtime', () => {
    // `<field> is required` names the request field by its path; the wording is our own (containerd
    // v2.2.7 does not check ids up front: an empty one fails in internal/truncindex/truncindex.go
    // with "prefix can't be empty"). Where containerd checks, its text is used (cited per case).
    const cases: Array<[string, 'runtime' | 'image', string, object, string]> = [
      // containerd v2.2.7 internal/cri/server/sandbox_run.go
      ['RunPodSandbox without config', 'runtime', 'RunPodSandbox', {}, 'sandbox config must include metadata'],
      ['RunPodSandbox without metadata', 'runtime', 'RunPodSandbox', { config: { hostname: 'h' } }, 'sandbox config must include metadata'],
      ['RunPodSandbox without a name', 'runtime', 'RunPodSandbox', { config: { metadata: { namespace: 'default', uid: 'u1' } } }, 'config.metadata.name is required'],
      ['RunPodSandbox without a namespace', 'runtime', 'RunPodSandbox', { config: { metadata: { name: 'p', uid: 'u1' } } }, 'config.metadata.namespace is required'],
      ['RunPodSandbox without a uid', 'runtime', 'RunPodSandbox', { config: { metadata: { name: 'p', namespace: 'default' } } }, 'config.metadata.uid is required'],
      ['StopPodSandbox with an empty id', 'runtime', 'StopPodSandbox', {}, 'pod_sandbox_id is required'],
      ['RemovePodSandbox with an empty id', 'runtime', 'RemovePodSandbox', {}, 'pod_sandbox_id is required'],
      ['PodSandboxStatus with an empty id', 'runtime', 'PodSandboxStatus', { pod_sandbox_id: '' }, 'pod_sandbox_id is required'],
      ['PodSandboxStats with an empty id', 'runtime', 'PodSandboxStats', {}, 'pod_sandbox_id is required'],
      ['UpdatePodSandboxResources with an empty id', 'runtime', 'UpdatePodSandboxResources', {}, 'pod_sandbox_id is required'],
      ['CreateContainer without a sandbox id', 'runtime', 'CreateContainer', { config: { metadata: { name: 'c' }, image: { image: 'busybox' } } }, 'pod_sandbox_id is required'],
      // containerd v2.2.7 internal/cri/server/container_create.go
      ['CreateContainer without config', 'runtime', 'CreateContainer', { pod_sandbox_id: 's1' }, 'container config must include metadata'],
      ['CreateContainer without metadata', 'runtime', 'CreateContainer', { pod_sandbox_id: 's1', config: { image: { image: 'busybox' } } }, 'container config must include metadata'],
      ['CreateContainer without a container name', 'runtime', 'CreateContainer', { pod_sandbox_id: 's1', config: { metadata: {}, image: { image: 'busybox' } } }, 'config.metadata.name is required'],
      ['CreateContainer without an image', 'runtime', 'CreateContainer', { pod_sandbox_id: 's1', config: { metadata: { name: 'c' } } }, 'config.image.image is required'],
      ['CreateContainer with an empty image', 'runtime', 'CreateContainer', { pod_sandbox_id: 's1', config: { metadata: { name: 'c' }, image: {} } }, 'config.image.image is required'],
      ['StartContainer with an empty id', 'runtime', 'StartContainer', { container_id: '' }, 'container_id is required'],
      ['StopContainer with an empty id', 'runtime', 'StopContainer', {}, 'container_id is required'],
      ['StopContainer with a negative timeout', 'runtime', 'StopContainer', { container_id: 'c1', timeout: -1 }, 'timeout must not be negative, got -1'],
      ['RemoveContainer with an empty id', 'runtime', 'RemoveContainer', {}, 'container_id is required'],
      ['ContainerStatus with an empty id', 'runtime', 'ContainerStatus', {}, 'container_id is required'],
      ['UpdateContainerResources with an empty id', 'runtime', 'UpdateContainerResources', {}, 'container_id is required'],
      ['ReopenContainerLog with an empty id', 'runtime', 'ReopenContainerLog', {}, 'container_id is required'],
      ['ExecSync without a command', 'runtime', 'ExecSync', { container_id: 'c1', cmd: [] }, 'cmd is required'],
      ['ExecSync with an empty id', 'runtime', 'ExecSync', { cmd: ['ls'] }, 'container_id is required'],
      ['ExecSync with a negative timeout', 'runtime', 'ExecSync', { container_id: 'c1', cmd: ['ls'], timeout: -5 }, 'timeout must not be negative, got -5'],
      ['ContainerStats with an empty id', 'runtime', 'ContainerStats', {}, 'container_id is required'],
      ['PullImage without an image', 'image', 'PullImage', {}, 'image.image is required'],
      ['ImageStatus with an empty image', 'image', 'ImageStatus', { image: { image: '' } }, 'image.image is required'],
      ['RemoveImage with an empty image', 'image', 'RemoveImage', { image: {} }, 'image.image is required'],
    ];
    for (const [name, service, method, request, message] of cases) {
      it(`rejects ${name}: "${message}", over the socket and in process alike`, async () => {
        let error: ServiceError | undefined;
        try {
          await unaryCall(client[service] as never, method as never, request as never);
        } catch (err) {
          error = err as ServiceError;
        }
        expect(error?.code, String(error?.details)).to.equal(status.INVALID_ARGUMENT);
        expect(error?.details).to.equal(message);
        // The kubelet's tests and the benchmark call the runtime without the edge: the same check.
        const inProcess = (runtime as unknown as Record<string, (req: unknown) => Promise<unknown>>)[rpcMethodName(method)]!;
        const decoded = decodedRequest(service, method, request);
        const thrown = await inProcess.call(runtime, decoded).then(() => undefined, (err: unknown) => err);
        expect(thrown).to.be.instanceOf(RuntimeError);
        expect((thrown as RuntimeError).code).to.equal('InvalidArgument');
        expect((thrown as RuntimeError).message).to.equal(message);
      });
    }
  });
});

/** A request as the server decodes it (defaults filled in), for calling the runtime in process. */
function decodedRequest(service: 'runtime' | 'image', method: string, request: object): unknown {
  const definition = service === 'runtime' ? runtimeServiceDefinition() : imageServiceDefinition();
  const rpc = (definition as unknown as Record<string, { requestSerialize(v: object): Buffer; requestDeserialize(b: Buffer): unknown }>)[method]!;
  return rpc.requestDeserialize(rpc.requestSerialize(request));
}
