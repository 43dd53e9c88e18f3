import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { effectivePullPolicy, runPodOnce } from '../../src/kubelet/pod-worker.js';
import { useScriptedRuntime } from './support/scripted-runtime.js';

const container = (name: string, image = 'nano:ltsc2022', extra: Partial<V1Container> = {}): V1Container => ({ name, image, ...extra });
const pod = (containers: V1Container[], extra: Partial<V1Pod['spec']> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'apps', uid: 'uid-1' },
  spec: { containers, ...extra },
});

describe('pod worker (one SyncPod pass over CRI)', () => {
  const fx = useScriptedRuntime('winsim-worker-');
  const run = (p: V1Pod) => runPodOnce(fx.cri, p, { podLogsRoot: join(fx.dir, 'pods'), pollIntervalMs: 5, callTimeoutMs: 5000 });

  it('runs the sandbox, pulls only what is missing, creates and starts every container', async () => {
    const outcome = await run(pod([container('a'), container('b', 'iis:ltsc2022')], { securityContext: { windowsOptions: { gmsaCredentialSpec: '{"ok":1}' } } }));
    expect(outcome.sandboxId).to.equal('sandbox-1');
    // What the kubelet sent for the Windows identity is recorded with the outcome (cri-winsim explain).
    const identity = {
      effective: { credentialSpecFrom: 'pod', credentialSpecBytes: 8, runAsUserNameFrom: 'image', hostProcess: false },
      criConfig: { credentialSpecBytes: 8, credentialSpecSha256: createHash('sha256').update('{"ok":1}').digest('hex'), runAsUsername: 'ContainerUser', hostProcess: false },
    };
    expect(outcome.containers).to.deep.equal([
      { name: 'a', kind: 'regular', state: 'started', containerId: 'ctr-a', identity },
      { name: 'b', kind: 'regular', state: 'started', containerId: 'ctr-b', identity },
    ]);
    expect(fx.runtime.calls.filter((c) => c === 'PullImage')).to.have.length(1);
    // The resolved image id goes to the runtime, the spec's reference beside it.
    expect(fx.runtime.created.map((c) => [c.image!.image, c.image!.user_specified_image])).to.deep.equal([
      ['sha256:nano:ltsc2022', 'nano:ltsc2022'],
      ['sha256:iis:ltsc2022', 'iis:ltsc2022'],
    ]);
    // The kubelet creates the pod and container log directories the runtime writes into.
    await access(join(fx.dir, 'pods', 'apps_web_uid-1', 'a'));
    await access(join(fx.dir, 'pods', 'apps_web_uid-1', 'b'));
    expect(fx.runtime.created.map((c) => c.windows!.security_context!.credential_spec)).to.deep.equal(['{"ok":1}', '{"ok":1}']);
    expect(outcome.events.map((e) => `${e.container}:${e.reason}`)).to.deep.equal(['a:Pulled', 'a:Created', 'a:Started', 'b:Pulling', 'b:Pulled', 'b:Created', 'b:Started']);
    expect(outcome.events.filter((e) => e.container === 'a').map((e) => e.message)).to.deep.equal([
      'Container image "nano:ltsc2022" already present on machine',
      'Created container: a',
      'Started container a',
    ]);
  });

  it('reports a sandbox failure and touches no container', async () => {
    fx.runtime.failSandbox = true;
    const outcome = await run(pod([container('a')]));
    expect(outcome.sandboxError).to.deep.equal({ reason: 'FailedCreatePodSandBox', message: 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to set up sandbox network' });
    expect(outcome.containers).to.deep.equal([{ name: 'a', kind: 'regular', state: 'waiting', reason: 'ContainerCreating' }]);
    expect(fx.runtime.calls).to.deep.equal(['RunPodSandbox']);
  });

  it('reports the HostProcess rules as a sandbox failure without calling the runtime', async () => {
    const outcome = await run(pod([container('a', 'nano:ltsc2022', { securityContext: { windowsOptions: { hostProcess: true } } })]));
    expect(outcome.sandboxError!.message).to.equal('Failed to create pod sandbox: hostNetwork is required if Pod contains HostProcess containers');
    expect(fx.runtime.calls).to.deep.equal([]);
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
    expect(fx.runtime.created.map((c) => c.metadata!.name)).to.deep.equal(['init1']);
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
