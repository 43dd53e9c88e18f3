// Bad input over the real socket: every RPC given a missing or malformed field answers
// INVALID_ARGUMENT with a message that names the field, an unknown id answers NOT_FOUND with the
// id in the message, and a refused request leaves nothing behind (no sandbox, container or image
// appears, no file appears in the state directory).
import { expect } from 'chai';
import { status, type ServiceError } from '@grpc/grpc-js';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const UNKNOWN_ID = 'f00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeed';

type Service = 'runtime' | 'image';

interface BadCase {
  /** What is wrong with the request. */
  what: string;
  service: Service;
  method: string;
  /** Built lazily: some cases need the ids created in before(). */
  request: () => object;
  code: status;
  /** The message must name the field (or, for NOT_FOUND, contain the unknown id). */
  names: RegExp;
}

/** Every file and directory under `dir`, relative, sorted (bounded depth). */
function listTree(dir: string, depth = 6): string[] {
  const out: string[] = [];
  const walk = (d: string, level: number) => {
    if (level > depth) return;
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      out.push(relative(dir, p) + (e.isDirectory() ? '/' : ''));
      if (e.isDirectory()) walk(p, level + 1);
    }
  };
  walk(dir, 0);
  return out.sort();
}

const codeName = (code: status) => status[code] ?? String(code);

describe('bad input over the CRI socket', function () {
  this.timeout(20_000);
  let rt: RuntimeHandle | undefined;
  let cri: CriClient | undefined;
  let podId = '';
  let containerId = '';
  const podConfig = (name: string) => ({
    metadata: { name, namespace: 'bad-input', uid: `uid-${name}`, attempt: 0 },
  });

  const client = (): CriClient => {
    if (!cri) throw new Error('no CRI client (see the before all hook)');
    return cri;
  };
  /** Calls any unary RPC by name with any request object (these requests are wrong on purpose). */
  const call = (service: Service, method: string, request: object): Promise<any> => {
    const c = client();
    const target = (service === 'runtime' ? c.runtime : c.image) as any;
    return unaryCall(target, method as never, request as never, { timeoutMs: 5_000 });
  };
  const failure = async (service: Service, method: string, request: object): Promise<ServiceError> => {
    try {
      const res = await call(service, method, request);
      throw Object.assign(new Error(`${method} succeeded: ${JSON.stringify(res)}`), { succeeded: true });
    } catch (err) {
      if ((err as { succeeded?: boolean }).succeeded) throw err;
      return err as ServiceError;
    }
  };
  const ids = async () => ({
    sandboxes: ((await call('runtime', 'ListPodSandbox', {})).items as Array<{ id: string }>).map((s) => s.id).sort(),
    containers: ((await call('runtime', 'ListContainers', {})).containers as Array<{ id: string }>).map((c) => c.id).sort(),
    images: ((await call('image', 'ListImages', {})).images as Array<{ id: string }>).map((i) => i.id).sort(),
  });

  before(async () => {
    rt = await startRuntime({ name: 'bad-input-e2e' });
    cri = createCriClient(rt.endpoint);
    await call('image', 'PullImage', { image: { image: BUSYBOX } });
    podId = (await call('runtime', 'RunPodSandbox', { config: podConfig('valid') })).pod_sandbox_id;
    containerId = (await call('runtime', 'CreateContainer', {
      pod_sandbox_id: podId,
      config: { metadata: { name: 'valid' }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
      sandbox_config: podConfig('valid'),
    })).container_id;
    await call('runtime', 'StartContainer', { container_id: containerId });
  });

  after(async () => {
    cri?.close();
    await rt?.stop();
  });

  const INVALID = status.INVALID_ARGUMENT;
  const NOT_FOUND = status.NOT_FOUND;
  const POD_ID = /pod[ _]?sandbox[ _]?id/i;
  const CONTAINER_ID = /container[ _]?id/i;
  const UNKNOWN = new RegExp(UNKNOWN_ID);
  const container = (config: object) => ({ pod_sandbox_id: podId, config, sandbox_config: podConfig('valid') });

  const cases: BadCase[] = [
    // RunPodSandbox: the sandbox metadata is the pod's identity.
    { what: 'no config', service: 'runtime', method: 'RunPodSandbox', request: () => ({}), code: INVALID, names: /config/ },
    // containerd v2.2.7 internal/cri/server/sandbox_run.go
    { what: 'no config.metadata', service: 'runtime', method: 'RunPodSandbox', request: () => ({ config: { labels: { a: 'b' } } }), code: INVALID, names: /^sandbox config must include metadata$/ },
    { what: 'empty metadata.name', service: 'runtime', method: 'RunPodSandbox', request: () => ({ config: { metadata: { name: '', namespace: 'ns', uid: 'u' } } }), code: INVALID, names: /metadata\.name/ },
    { what: 'empty metadata.namespace', service: 'runtime', method: 'RunPodSandbox', request: () => ({ config: { metadata: { name: 'n', namespace: '', uid: 'u' } } }), code: INVALID, names: /metadata\.namespace/ },
    { what: 'empty metadata.uid', service: 'runtime', method: 'RunPodSandbox', request: () => ({ config: { metadata: { name: 'n', namespace: 'ns', uid: '' } } }), code: INVALID, names: /metadata\.uid/ },
    // Sandbox ids.
    { what: 'empty pod_sandbox_id', service: 'runtime', method: 'StopPodSandbox', request: () => ({}), code: INVALID, names: POD_ID },
    { what: 'empty pod_sandbox_id', service: 'runtime', method: 'RemovePodSandbox', request: () => ({}), code: INVALID, names: POD_ID },
    { what: 'empty pod_sandbox_id', service: 'runtime', method: 'PodSandboxStatus', request: () => ({}), code: INVALID, names: POD_ID },
    { what: 'unknown pod_sandbox_id', service: 'runtime', method: 'PodSandboxStatus', request: () => ({ pod_sandbox_id: UNKNOWN_ID }), code: NOT_FOUND, names: UNKNOWN },
    { what: 'empty pod_sandbox_id', service: 'runtime', method: 'PodSandboxStats', request: () => ({}), code: INVALID, names: POD_ID },
    { what: 'unknown pod_sandbox_id', service: 'runtime', method: 'PodSandboxStats', request: () => ({ pod_sandbox_id: UNKNOWN_ID }), code: NOT_FOUND, names: UNKNOWN },
    // CreateContainer.
    { what: 'empty pod_sandbox_id', service: 'runtime', method: 'CreateContainer', request: () => ({ ...container({ metadata: { name: 'c' }, image: { image: BUSYBOX } }), pod_sandbox_id: '' }), code: INVALID, names: POD_ID },
    { what: 'unknown pod_sandbox_id', service: 'runtime', method: 'CreateContainer', request: () => ({ ...container({ metadata: { name: 'c' }, image: { image: BUSYBOX } }), pod_sandbox_id: UNKNOWN_ID }), code: NOT_FOUND, names: UNKNOWN },
    { what: 'no config', service: 'runtime', method: 'CreateContainer', request: () => ({ pod_sandbox_id: podId }), code: INVALID, names: /config/ },
    // containerd v2.2.7 internal/cri/server/container_create.go
    { what: 'no config.metadata', service: 'runtime', method: 'CreateContainer', request: () => container({ image: { image: BUSYBOX } }), code: INVALID, names: /^container config must include metadata$/ },
    { what: 'empty config.metadata.name', service: 'runtime', method: 'CreateContainer', request: () => container({ metadata: { name: '' }, image: { image: BUSYBOX } }), code: INVALID, names: /metadata\.name/ },
    { what: 'no config.image', service: 'runtime', method: 'CreateContainer', request: () => container({ metadata: { name: 'c' } }), code: INVALID, names: /config\.image/ },
    { what: 'empty config.image.image', service: 'runtime', method: 'CreateContainer', request: () => container({ metadata: { name: 'c' }, image: { image: '' } }), code: INVALID, names: /image\.image/ },
    { what: 'an image that was never pulled', service: 'runtime', method: 'CreateContainer', request: () => container({ metadata: { name: 'c' }, image: { image: 'registry.k8s.io/e2e-test-images/nginx:1.14-2' } }), code: NOT_FOUND, names: /nginx:1\.14-2/ },
    // Container ids and per-container fields.
    { what: 'empty container_id', service: 'runtime', method: 'StartContainer', request: () => ({}), code: INVALID, names: CONTAINER_ID },
    { what: 'unknown container_id', service: 'runtime', method: 'StartContainer', request: () => ({ container_id: UNKNOWN_ID }), code: NOT_FOUND, names: UNKNOWN },
    { what: 'empty container_id', service: 'runtime', method: 'StopContainer', request: () => ({}), code: INVALID, names: CONTAINER_ID },
    { what: 'negative timeout', service: 'runtime', method: 'StopContainer', request: () => ({ container_id: containerId, timeout: '-1' }), code: INVALID, names: /timeout/ },
    { what: 'empty container_id', service: 'runtime', method: 'RemoveContainer', request: () => ({}), code: INVALID, names: CONTAINER_ID },
    { what: 'empty container_id', service: 'runtime', method: 'ContainerStatus', request: () => ({}), code: INVALID, names: CONTAINER_ID },
    { what: 'unknown container_id', service: 'runtime', method: 'ContainerStatus', request: () => ({ container_id: UNKNOWN_ID }), code: NOT_FOUND, names: UNKNOWN },
    { what: 'empty container_id', service: 'runtime', method: 'UpdateContainerResources', request: () => ({}), code: INVALID, names: CONTAINER_ID },
    { what: 'unknown container_id', service: 'runtime', method: 'UpdateContainerResources', request: () => ({ container_id: UNKNOWN_ID }), code: NOT_FOUND, names: UNKNOWN },
    { what: 'empty container_id', service: 'runtime', method: 'ReopenContainerLog', request: () => ({}), code: INVALID, names: CONTAINER_ID },
    { what: 'unknown container_id', service: 'runtime', method: 'ReopenContainerLog', request: () => ({ container_id: UNKNOWN_ID }), code: NOT_FOUND, names: UNKNOWN },
    { what: 'empty container_id', service: 'runtime', method: 'ContainerStats', request: () => ({}), code: INVALID, names: CONTAINER_ID },
    { what: 'unknown container_id', service: 'runtime', method: 'ContainerStats', request: () => ({ container_id: UNKNOWN_ID }), code: NOT_FOUND, names: UNKNOWN },
    // ExecSync.
    { what: 'empty container_id', service: 'runtime', method: 'ExecSync', request: () => ({ cmd: ['echo', 'x'] }), code: INVALID, names: CONTAINER_ID },
    { what: 'empty cmd', service: 'runtime', method: 'ExecSync', request: () => ({ container_id: containerId, cmd: [] }), code: INVALID, names: /cmd/ },
    { what: 'negative timeout', service: 'runtime', method: 'ExecSync', request: () => ({ container_id: containerId, cmd: ['echo', 'x'], timeout: '-5' }), code: INVALID, names: /timeout/ },
    { what: 'unknown container_id', service: 'runtime', method: 'ExecSync', request: () => ({ container_id: UNKNOWN_ID, cmd: ['echo', 'x'] }), code: NOT_FOUND, names: UNKNOWN },
    // ImageService.
    { what: 'no image', service: 'image', method: 'PullImage', request: () => ({}), code: INVALID, names: /image/ },
    { what: 'empty image.image', service: 'image', method: 'PullImage', request: () => ({ image: { image: '' } }), code: INVALID, names: /image\.image/ },
    { what: 'a malformed reference', service: 'image', method: 'PullImage', request: () => ({ image: { image: 'Not A Reference!!' } }), code: INVALID, names: /Not A Reference!!/ },
    { what: 'no image', service: 'image', method: 'ImageStatus', request: () => ({}), code: INVALID, names: /image/ },
    { what: 'empty image.image', service: 'image', method: 'ImageStatus', request: () => ({ image: { image: '' } }), code: INVALID, names: /image\.image/ },
    { what: 'no image', service: 'image', method: 'RemoveImage', request: () => ({}), code: INVALID, names: /image/ },
  ];

  describe('answers each malformed request with the right code and a message naming the field', () => {
    let recorded: Awaited<ReturnType<typeof ids>> | undefined;
    let stateBefore: string[] = [];

    before(async () => {
      recorded = await ids();
      stateBefore = listTree(rt!.stateDir);
    });

    for (const c of cases) {
      it(`${c.method} with ${c.what}: ${codeName(c.code)}`, async () => {
        const err = await failure(c.service, c.method, c.request());
        expect(codeName(err.code), `${c.method} answered ${codeName(err.code)}: ${err.details}`).to.equal(codeName(c.code));
        expect(err.details).to.match(c.names);
      });
    }

    it('created nothing: the same sandboxes, containers, images and state files as before', async () => {
      expect(recorded?.sandboxes).to.deep.equal([podId]);
      expect(recorded?.containers).to.deep.equal([containerId]);
      expect(await ids()).to.deep.equal(recorded);
      expect(listTree(rt!.stateDir)).to.deep.equal(stateBefore);
    });
  });

  describe('stays usable and idempotent', () => {
    it('stopping and removing unknown sandboxes and containers succeeds (CRI idempotence, as critest checks)', async () => {
      await call('runtime', 'StopPodSandbox', { pod_sandbox_id: UNKNOWN_ID });
      await call('runtime', 'RemovePodSandbox', { pod_sandbox_id: UNKNOWN_ID });
      await call('runtime', 'StopContainer', { container_id: UNKNOWN_ID });
      await call('runtime', 'RemoveContainer', { container_id: UNKNOWN_ID });
      await call('image', 'RemoveImage', { image: { image: 'registry.k8s.io/e2e-test-images/no-such-image:1' } });
    });

    it('ImageStatus of an image that is not present answers OK with no image', async () => {
      const res = await call('image', 'ImageStatus', { image: { image: 'registry.k8s.io/e2e-test-images/nginx:1.14-2' } });
      expect(res.image).to.equal(null);
    });

    it('the valid container still runs and execs after all that', async () => {
      const res = await call('runtime', 'ExecSync', { container_id: containerId, cmd: ['echo', 'still here'], timeout: '5' });
      expect(res.exit_code).to.equal(0);
      expect(Buffer.from(res.stdout).toString('utf8')).to.equal('still here\n');
      await call('runtime', 'StopPodSandbox', { pod_sandbox_id: podId });
      await call('runtime', 'RemovePodSandbox', { pod_sandbox_id: podId });
      const left = await ids();
      expect(left.sandboxes).to.deep.equal([]);
      expect(left.containers).to.deep.equal([]);
    });
  });
});
