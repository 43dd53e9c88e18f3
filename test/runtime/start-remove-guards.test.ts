import { expect } from 'chai';
import type { ContainerStatusData as ContainerStatus } from '../../src/runtime/store/container-store.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './windows/kep-example.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox, type RuntimeFixture } from './helpers.js';

const NANOSERVER = 'mcr.microsoft.com/windows/nanoserver:ltsc2022';

/**
 * The `starting` and `removing` guards of StartContainer and RemoveContainer (as containerd's
 * setContainerStarting / setContainerRemoving, internal/cri/server/container_start.go and
 * container_remove.go, v2.2.7; the texts are our own). Each guard refuses without touching the
 * flags, and every failure path resets the flag its operation set, so the container can be started
 * or removed again.
 */
describe('StartContainer and RemoveContainer guards', () => {
  let fx: RuntimeFixture;
  beforeEach(async () => {
    fx = await openRuntime();
    await pull(fx.runtime, BUSYBOX);
  });
  afterEach(async () => {
    await fx.close();
  });

  const status = (id: string): ContainerStatus => fx.runtime.context.containers.get(id)!.status;
  const setFlags = (id: string, flags: Partial<Pick<ContainerStatus, 'starting' | 'removing'>>): void => {
    fx.runtime.context.containers.updateStatus(id, (s) => ({ ...s, ...flags }));
  };

  const cases: Array<{ name: string; flags: { starting?: boolean; removing?: boolean }; rpc: 'start' | 'remove'; message: (id: string) => string }> = [
    { name: 'StartContainer of a container being removed', flags: { removing: true }, rpc: 'start', message: (id) => `container ${id} is being removed` },
    { name: 'StartContainer of a container already starting', flags: { starting: true }, rpc: 'start', message: (id) => `container ${id} is already starting` },
    { name: 'RemoveContainer of a starting container', flags: { starting: true }, rpc: 'remove', message: (id) => `container ${id} is starting: it cannot be removed now` },
  ];
  for (const c of cases) {
    it(`refuses ${c.name} with FailedPrecondition and leaves the flags as they were`, async () => {
      const sandbox = await runSandbox(fx.runtime);
      const id = await createContainer(fx.runtime, sandbox, { command: ['sleep', '3600'] });
      setFlags(id, c.flags);
      const call = c.rpc === 'start' ? fx.runtime.startContainer({ container_id: id }) : fx.runtime.removeContainer({ container_id: id });
      const err = await rejection(call);
      expect(err.code).to.equal('FailedPrecondition');
      expect(err.message).to.equal(c.message(id));
      expect({ starting: status(id).starting, removing: status(id).removing }).to.deep.equal({ starting: false, removing: false, ...c.flags });
    });
  }

  it('refuses a second StartContainer while the first is under way, and the first still starts the container', async () => {
    const sandbox = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sandbox, { command: ['sleep', '3600'] });
    const first = fx.runtime.startContainer({ container_id: id });
    const second = await rejection(fx.runtime.startContainer({ container_id: id }));
    expect(second.message).to.equal(`container ${id} is already starting`);
    await first;
    expect(status(id)).to.include({ state: 1 /* CONTAINER_RUNNING */, starting: false, removing: false });
  });

  it('resets `starting` when the start fails, so RemoveContainer then succeeds', async () => {
    const sandbox = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sandbox, { command: ['no-such-command'] });
    const err = await rejection(fx.runtime.startContainer({ container_id: id }));
    expect(err.message).to.match(/^failed to create containerd task: .*no-such-command/);
    expect(status(id)).to.include({ state: 2 /* CONTAINER_EXITED */, starting: false, reason: 'StartError' });
    await fx.runtime.removeContainer({ container_id: id });
    expect(fx.runtime.context.containers.get(id)).to.equal(undefined);
  });

  it('resets `removing` when removing the credential spec fails; a retry of RemoveContainer succeeds and nothing leaks', async () => {
    const { runtime } = fx;
    await pull(runtime, NANOSERVER);
    const sandbox = await runSandbox(runtime, { windows: { security_context: { run_as_username: '', credential_spec: '', host_process: false, namespace_options: null } } });
    const id = await createContainer(runtime, sandbox, {
      command: ['cmd', '/c', 'echo', 'hi'],
      windows: { resources: null, security_context: { run_as_username: '', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC, host_process: false } },
    }, NANOSERVER);
    const { handoff } = runtime.context.windows;
    const releaseOnRemove = handoff.releaseOnRemove.bind(handoff);
    let failures = 1;
    handoff.releaseOnRemove = async (options) => {
      if (failures-- > 0) throw new Error('the registry key is locked');
      return releaseOnRemove(options);
    };
    const err = await rejection(runtime.removeContainer({ container_id: id }));
    expect(err.message).to.equal(`failed to remove the credential spec of container ${id}: the registry key is locked`);
    expect(status(id)).to.include({ removing: false, starting: false });
    expect(await runtime.credentialSpecLeaks()).to.equal(0);

    await runtime.removeContainer({ container_id: id });
    expect(runtime.context.containers.get(id)).to.equal(undefined);
    expect(await runtime.credentialSpecLeaks()).to.equal(0);
  });
});
