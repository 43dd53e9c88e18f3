import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { createCriClient, imageServiceDefinition, runtimeServiceDefinition, type CriClient } from '../../src/cri/proto.js';
import type { ContainerConfig__Output } from '../../src/generated/runtime/v1/ContainerConfig.js';
import { effectivePullPolicy, runPodOnce } from '../../src/kubelet/pod-worker.js';

/**
 * A scripted CRI runtime on a temporary unix socket: it records what the kubelet sends and fails
 * where a test asks it to, so the worker's reasons can be checked at the wire.
 */
class ScriptedRuntime {
  readonly calls: string[] = [];
  readonly created: ContainerConfig__Output[] = [];
  readonly images = new Map<string, string>([['nano:ltsc2022', 'ContainerUser'], ['servercore:ltsc2022', 'ContainerAdministrator']]);
  failSandbox = false;
  private readonly exits = new Map<string, number>();
  private readonly names = new Map<string, string>();
  private server = new grpc.Server();

  async listen(socket: string): Promise<void> {
    const fail = (code: grpc.status, details: string) => Object.assign(new Error(details), { code, details });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a test double reading decoded requests
    type Request = any;
    const handle =
      (name: string, fn: (req: Request) => unknown): grpc.handleUnaryCall<Request, unknown> =>
      (call, callback) => {
        this.calls.push(name);
        try {
          callback(null, fn(call.request));
        } catch (err) {
          callback(err as grpc.ServiceError);
        }
      };
    this.server.addService(runtimeServiceDefinition(), {
      RunPodSandbox: handle('RunPodSandbox', () => {
        if (this.failSandbox) throw fail(grpc.status.UNKNOWN, 'failed to set up sandbox network');
        return { pod_sandbox_id: 'sandbox-1' };
      }),
      CreateContainer: handle('CreateContainer', (req) => {
        const config = req.config as ContainerConfig__Output;
        if (config.windows?.security_context?.credential_spec.includes('broken')) throw fail(grpc.status.INVALID_ARGUMENT, 'invalid credential spec: missing DomainJoinConfig.Sid');
        this.created.push(config);
        const id = `ctr-${config.metadata!.name}`;
        this.names.set(id, config.metadata!.name);
        this.exits.set(id, config.command[0] === 'exit' ? Number(config.command[1]) : 0);
        return { container_id: id };
      }),
      StartContainer: handle('StartContainer', (req) => {
        if (this.names.get(req.container_id) === 'crash') throw fail(grpc.status.UNKNOWN, 'The user name or password is incorrect.');
        return {};
      }),
      ContainerStatus: handle('ContainerStatus', (req) => ({
        status: { id: req.container_id, state: 2, exit_code: this.exits.get(req.container_id) ?? 0, reason: '', message: '' },
      })),
    });
    this.server.addService(imageServiceDefinition(), {
      ImageStatus: handle('ImageStatus', (req) => {
        const user = this.images.get(req.image.image);
        return { image: user === undefined ? null : { id: req.image.image, username: user, size: '1' } };
      }),
      PullImage: handle('PullImage', (req) => {
        if (String(req.image.image).startsWith('missing')) throw fail(grpc.status.NOT_FOUND, `image ${req.image.image} not found`);
        this.images.set(req.image.image, 'ContainerUser');
        return { image_ref: req.image.image };
      }),
    });
    await new Promise<void>((resolve, reject) =>
      this.server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
  }

  stop(): void {
    this.server.forceShutdown();
  }
}

const container = (name: string, image = 'nano:ltsc2022', extra: Partial<V1Container> = {}): V1Container => ({ name, image, ...extra });
const pod = (containers: V1Container[], extra: Partial<V1Pod['spec']> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'apps', uid: 'uid-1' },
  spec: { containers, ...extra },
});

describe('pod worker (one SyncPod pass over CRI)', () => {
  let dir: string;
  let runtime: ScriptedRuntime;
  let cri: CriClient;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-worker-'));
    runtime = new ScriptedRuntime();
    await runtime.listen(join(dir, 'cri.sock'));
    cri = createCriClient(`unix://${join(dir, 'cri.sock')}`);
  });
  afterEach(async () => {
    cri.close();
    runtime.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const run = (p: V1Pod) => runPodOnce(cri, p, { podLogsRoot: join(dir, 'pods'), pollIntervalMs: 5, callTimeoutMs: 5000 });

  it('runs the sandbox, pulls only what is missing, creates and starts every container', async () => {
    const outcome = await run(pod([container('a'), container('b', 'iis:ltsc2022')], { securityContext: { windowsOptions: { gmsaCredentialSpec: '{"ok":1}' } } }));
    expect(outcome.sandboxId).to.equal('sandbox-1');
    expect(outcome.containers).to.deep.equal([
      { name: 'a', kind: 'regular', state: 'started', containerId: 'ctr-a' },
      { name: 'b', kind: 'regular', state: 'started', containerId: 'ctr-b' },
    ]);
    expect(runtime.calls.filter((c) => c === 'PullImage')).to.have.length(1);
    expect(runtime.created.map((c) => c.windows!.security_context!.credential_spec)).to.deep.equal(['{"ok":1}', '{"ok":1}']);
    expect(outcome.events.map((e) => `${e.container}:${e.reason}`)).to.deep.equal(['a:Pulled', 'a:Created', 'a:Started', 'b:Pulling', 'b:Pulled', 'b:Created', 'b:Started']);
  });

  it('reports a sandbox failure and touches no container', async () => {
    runtime.failSandbox = true;
    const outcome = await run(pod([container('a')]));
    expect(outcome.sandboxError).to.deep.equal({ reason: 'FailedCreatePodSandBox', message: 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to set up sandbox network' });
    expect(outcome.containers).to.deep.equal([{ name: 'a', kind: 'regular', state: 'waiting', reason: 'ContainerCreating' }]);
    expect(runtime.calls).to.deep.equal(['RunPodSandbox']);
  });

  it('reports the HostProcess rules as a sandbox failure without calling the runtime', async () => {
    const outcome = await run(pod([container('a', 'nano:ltsc2022', { securityContext: { windowsOptions: { hostProcess: true } } })]));
    expect(outcome.sandboxError!.message).to.equal('Failed to create pod sandbox: hostNetwork is required if Pod contains HostProcess containers');
    expect(runtime.calls).to.deep.equal([]);
  });

  const failures: { name: string; container: V1Container; podExtra?: Partial<V1Pod['spec']>; reason: string; message: string }[] = [
    { name: 'an image that cannot be pulled', container: container('a', 'missing:1'), reason: 'ErrImagePull', message: 'Failed to pull image "missing:1": rpc error: code = NotFound desc = image missing:1 not found' },
    { name: 'pull policy Never without the image', container: container('a', 'other:1', { imagePullPolicy: 'Never' }), reason: 'ErrImageNeverPull', message: 'Container image "other:1" is not present with pull policy of Never' },
    { name: 'a runtime that refuses the credential spec', container: container('a', 'nano:ltsc2022', { securityContext: { windowsOptions: { gmsaCredentialSpec: '{"broken":1}' } } }), reason: 'CreateContainerError', message: 'invalid credential spec: missing DomainJoinConfig.Sid' },
    { name: 'a start that fails', container: container('crash'), reason: 'RunContainerError', message: 'The user name or password is incorrect.' },
    {
      name: 'runAsNonRoot against the image user ContainerAdministrator',
      container: container('a', 'servercore:ltsc2022'),
      podExtra: { securityContext: { runAsNonRoot: true } },
      reason: 'CreateContainerConfigError',
      message: `container's runAsUser (ContainerAdministrator) which will be regarded as root identity and will break non-root policy (pod: "web_apps(uid-1)", container: a)`,
    },
  ];
  for (const f of failures) {
    it(`reports ${f.reason} for ${f.name}`, async () => {
      const outcome = await run(pod([f.container, container('next')], f.podExtra ?? {}));
      expect(outcome.containers[0]).to.deep.include({ name: f.container.name, state: 'waiting', reason: f.reason, message: f.message });
      // One container failing does not stop the others, as in SyncPod.
      expect(outcome.containers[1]).to.deep.include({ name: 'next', state: 'started' });
    });
  }

  it('runs init containers in order and starts the app containers after they succeed', async () => {
    const outcome = await run(pod([container('app')], { initContainers: [container('init1'), container('init2')] }));
    expect(outcome.containers.map((c) => [c.name, c.state, c.reason])).to.deep.equal([
      ['init1', 'exited', 'Completed'],
      ['init2', 'exited', 'Completed'],
      ['app', 'started', undefined],
    ]);
  });

  it('stops at a failing init container: the rest wait in PodInitializing', async () => {
    const outcome = await run(pod([container('app')], { initContainers: [container('init1', 'nano:ltsc2022', { command: ['exit', '3'] }), container('init2')] }));
    expect(outcome.containers.map((c) => [c.name, c.state, c.reason, c.exitCode])).to.deep.equal([
      ['init1', 'exited', 'Error', 3],
      ['init2', 'waiting', 'PodInitializing', undefined],
      ['app', 'waiting', 'PodInitializing', undefined],
    ]);
    expect(runtime.created.map((c) => c.metadata!.name)).to.deep.equal(['init1']);
  });
});

describe('image pull policy defaulting', () => {
  const cases: [string, string | undefined, string][] = [
    ['nano', undefined, 'Always'],
    ['nano:latest', undefined, 'Always'],
    ['registry:5000/nano', undefined, 'Always'],
    ['registry:5000/nano:ltsc2022', undefined, 'IfNotPresent'],
    ['nano@sha256:abc', undefined, 'IfNotPresent'],
    ['nano:ltsc2022', 'Always', 'Always'],
  ];
  for (const [image, policy, expected] of cases) {
    it(`${image} with ${policy ?? 'no policy'} pulls ${expected}`, () => {
      expect(effectivePullPolicy({ name: 'c', image, ...(policy === undefined ? {} : { imagePullPolicy: policy }) })).to.equal(expected);
    });
  }
});
