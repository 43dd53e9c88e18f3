// Fails the runtime at every step between CreateContainer and a started process — the write of
// the credential spec, any later create error, reading it back, validating it, the AD decision,
// the process start, and a runtime restart — through the CRI socket, and checks that no
// credential spec file (or registry value, once the container is removed) is left behind.
// The failures come from the runtime's test-only fault seam (NodeRuntimeOptions.windows.faults).
import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCriClient, unaryCall } from '../../src/cri/proto.js';
import { WINDOWS_FAULT_STEPS, type CredentialSpecCounters, type WindowsFaultStep } from '../../src/runtime/windows/windows-runtime.js';
import { windowsIdentity } from '../../src/runtime/container-start-windows.js';
import { startRuntime } from '../support/runtime.js';
import {
  CONTAINER_CREATED,
  CONTAINER_EXITED,
  CONTAINER_RUNNING,
  IIS,
  KEP_EXAMPLE_CREDENTIAL_SPEC,
  NO_LEFTOVERS,
  createWindowsContainer,
  credentialSpecLeftovers,
  rejection,
  removeAllPods,
  startInProcessRuntime,
  windowsContainerConfig,
  windowsPodConfig,
  type InProcessRuntime,
} from './windows-support.js';
import { prng } from '../support/seeded-random.js';

const CREATE_STEPS: readonly WindowsFaultStep[] = ['credential-spec-write', 'credential-spec-written'];

const SECURITY = { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };

/** Counts what the hand-off reports to the metrics (the runtime command passes the Prometheus ones). */
function countingMetrics(): CredentialSpecCounters & { written: number; removed: number } {
  const m = {
    written: 0,
    removed: 0,
    onWritten: () => { m.written++; },
    onRemoved: () => { m.removed++; },
  };
  return m;
}

describe('Windows credential spec fault injection through the CRI socket', function () {
  this.timeout(60_000);

  for (const transport of ['file', 'registry'] as const) {
    describe(`${transport} transport`, () => {
      let rt: InProcessRuntime | undefined;
      /** Which step fails for which container; each test sets its own. */
      let fails: (step: WindowsFaultStep, containerId: string) => boolean = () => false;
      const metrics = countingMetrics();
      before(async () => {
        rt = await startInProcessRuntime({
          credentialSpecTransport: transport,
          credentialSpecMetrics: metrics,
          faults: { fail: (step, id) => (fails(step, id) ? new Error(`simulated failure at ${step} of ${id}`) : undefined) },
        });
      });
      afterEach(() => {
        fails = () => false;
      });
      after(async () => {
        await rt?.close();
        if (rt !== undefined) await rm(rt.dir, { recursive: true, force: true });
      });

      for (const step of WINDOWS_FAULT_STEPS) {
        it(`a failure at ${step} leaves no credential spec behind`, async () => {
          const cri = rt!.cri;
          fails = (at) => at === step;
          const pod = windowsPodConfig(`fault-${step}`, join(rt!.dir, 'pods'), SECURITY);
          if (CREATE_STEPS.includes(step)) {
            await unaryCall(cri.image, 'PullImage', { image: { image: IIS } });
            const { pod_sandbox_id: podId } = await unaryCall(cri.runtime, 'RunPodSandbox', { config: pod });
            const err = await rejection(
              unaryCall(cri.runtime, 'CreateContainer', { pod_sandbox_id: podId, config: windowsContainerConfig('app', IIS, SECURITY), sandbox_config: pod }),
            );
            expect(err.code, err.details).to.equal(GrpcStatus.INTERNAL);
            expect(err.details).to.contain(`simulated failure at ${step}`);
            expect((await unaryCall(cri.runtime, 'ListContainers', {})).containers).to.deep.equal([]);
            expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
          } else {
            const { containerId } = await createWindowsContainer(cri, pod, windowsContainerConfig('app', IIS, SECURITY));
            const err = await rejection(unaryCall(cri.runtime, 'StartContainer', { container_id: containerId }));
            expect(err.code, err.details).to.equal(GrpcStatus.INTERNAL);
            expect(err.details).to.equal(`injected fault at ${step}: simulated failure at ${step} of ${containerId}`);
            const { status } = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId });
            expect([status!.state, status!.exit_code, status!.reason, status!.message]).to.deep.equal([CONTAINER_EXITED, 128, 'StartError', err.details]);
            const afterStart = await credentialSpecLeftovers(rt!.stateDir);
            // The KEP's file goes with StartContainer; cri-dockerd's registry value with RemoveContainer.
            expect(afterStart.files).to.deep.equal([]);
            expect(afterStart.registryValues).to.have.length(transport === 'registry' ? 1 : 0);
            await unaryCall(cri.runtime, 'RemoveContainer', { container_id: containerId });
            expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
          }
          await removeAllPods(cri);
          expect(metrics.written).to.equal(metrics.removed);
          expect(await rt!.runtime.credentialSpecLeaks()).to.equal(0);
        });
      }

      it('the spec a start amends in place and the identity it decides are what deriving them afresh gives', async () => {
        const cri = rt!.cri;
        const pod = windowsPodConfig('amend', join(rt!.dir, 'pods'), SECURITY);
        const { containerId } = await createWindowsContainer(cri, pod, windowsContainerConfig('app', IIS, SECURITY));
        await unaryCall(cri.runtime, 'StartContainer', { container_id: containerId });
        const record = rt!.runtime.context.containers.get(containerId);
        if (record === undefined) throw new Error(`no record of ${containerId}`);
        const ctx = rt!.runtime.context;
        const amended = JSON.stringify(ctx.containers.specOf(record));
        expect(JSON.parse(amended).windows.credentialSpec.DomainJoinConfig.MachineAccountName).to.equal('WebApplication1');
        const identity = JSON.stringify(windowsIdentity(ctx, record));
        expect(JSON.parse(identity).domainAccess.kind).to.equal('ok');
        // Forgotten (as when evicted from the caches of recent containers) and derived again.
        ctx.containers.forgetDerived(record);
        ctx.windows.identities.delete(record);
        expect(JSON.stringify(ctx.containers.specOf(record))).to.equal(amended);
        expect(JSON.stringify(windowsIdentity(ctx, record))).to.equal(identity);
        await removeAllPods(cri);
      });

      it('a process that cannot start (unknown program) leaves no credential spec behind', async () => {
        const cri = rt!.cri;
        const pod = windowsPodConfig('no-program', join(rt!.dir, 'pods'), SECURITY);
        const { containerId } = await createWindowsContainer(cri, pod, windowsContainerConfig('app', IIS, SECURITY, ['C:\\no-such-program.exe']));
        const err = await rejection(unaryCall(cri.runtime, 'StartContainer', { container_id: containerId }));
        expect(err.code).to.equal(GrpcStatus.UNKNOWN);
        expect(err.details).to.contain('exec: "C:\\no-such-program.exe": executable file not found');
        const { status } = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId });
        expect([status!.state, status!.reason]).to.deep.equal([CONTAINER_EXITED, 'StartError']);
        expect((await credentialSpecLeftovers(rt!.stateDir)).files).to.deep.equal([]);
        await removeAllPods(cri);
        expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
      });

      it('a seeded mix of faults over concurrent containers leaves nothing behind', async () => {
        const cri = rt!.cri;
        const random = prng(20261121);
        const steps: Array<WindowsFaultStep | undefined> = [...WINDOWS_FAULT_STEPS, undefined, undefined];
        // Each container gets its failing step (or none) when the seam first sees its id, which is
        // at the credential spec write of its CreateContainer.
        const plan = new Map<string, WindowsFaultStep | undefined>();
        fails = (step, id) => {
          if (!plan.has(id)) plan.set(id, steps[Math.floor(random() * steps.length)]);
          return plan.get(id) === step;
        };
        const pod = windowsPodConfig('mix', join(rt!.dir, 'pods'), SECURITY);
        await unaryCall(cri.image, 'PullImage', { image: { image: IIS } });
        const { pod_sandbox_id: podId } = await unaryCall(cri.runtime, 'RunPodSandbox', { config: pod });
        let started = 0;
        let failures = 0;
        for (let round = 0; round < 4; round++) {
          const outcomes = await Promise.all(
            Array.from({ length: 6 }, async (_, i) => {
              const config = windowsContainerConfig(`app-${round}-${i}`, IIS, SECURITY);
              const created = await unaryCall(cri.runtime, 'CreateContainer', { pod_sandbox_id: podId, config, sandbox_config: pod }).catch(() => undefined);
              if (created === undefined) return 'create failed';
              return unaryCall(cri.runtime, 'StartContainer', { container_id: created.container_id }).then(() => 'started', () => 'start failed');
            }),
          );
          started += outcomes.filter((o) => o === 'started').length;
          failures += outcomes.filter((o) => o !== 'started').length;
          expect((await credentialSpecLeftovers(rt!.stateDir)).files).to.deep.equal([]);
        }
        expect(started, 'some containers start').to.be.greaterThan(0);
        expect(failures, 'some containers fail').to.be.greaterThan(0);
        expect(plan.size).to.equal(24);
        await removeAllPods(cri);
        expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
        expect(metrics.written).to.equal(metrics.removed);
        expect(await rt!.runtime.credentialSpecLeaks()).to.equal(0);
      });
    });
  }

  describe('runtime restart between create and start', () => {
    for (const transport of ['file', 'registry'] as const) {
      it(`${transport}: a crashed runtime's credential spec is swept when the runtime opens again`, async () => {
        const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-restart-'));
        try {
          const first = await startInProcessRuntime({ credentialSpecTransport: transport }, dir);
          const pod = windowsPodConfig('restart', join(dir, 'pods'), SECURITY);
          const { containerId } = await createWindowsContainer(first.cri, pod, windowsContainerConfig('app', IIS, SECURITY));
          const { status } = await unaryCall(first.cri.runtime, 'ContainerStatus', { container_id: containerId });
          expect(status!.state).to.equal(CONTAINER_CREATED);
          const staged = await credentialSpecLeftovers(first.stateDir);
          expect(staged.files.length + staged.registryValues.length).to.equal(1);
          await first.crash();

          const metrics = countingMetrics();
          const second = await startInProcessRuntime({ credentialSpecTransport: transport, credentialSpecMetrics: metrics }, dir);
          try {
            expect(await credentialSpecLeftovers(second.stateDir)).to.deep.equal(NO_LEFTOVERS);
            expect([metrics.removed, await second.runtime.credentialSpecLeaks()]).to.deep.equal([1, 0]);
            // The container did not survive the restart (state is in memory): nothing to start.
            const err = await rejection(unaryCall(second.cri.runtime, 'StartContainer', { container_id: containerId }));
            expect(err.code).to.equal(GrpcStatus.NOT_FOUND);
          } finally {
            await second.close();
          }
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      });
    }

    // An --ephemeral runtime keeps nothing; a durable one (the default) keeps the container and its
    // file (test/e2e/restart.test.ts).
    it('cri-winsim runtime --ephemeral killed with SIGKILL after CreateContainer: the next start-up sweeps the file', async () => {
      const shared = await mkdtemp(join(tmpdir(), 'cri-winsim-restart-'));
      const stateDir = join(shared, 'state');
      try {
        const first = await startRuntime({ name: 'windows-restart-1', args: ['--state-dir', stateDir, '--ephemeral'] });
        const cri = createCriClient(first.endpoint);
        try {
          const pod = windowsPodConfig('killed', join(shared, 'pods'), SECURITY);
          await createWindowsContainer(cri, pod, windowsContainerConfig('app', IIS, SECURITY));
          expect((await credentialSpecLeftovers(stateDir)).files).to.have.length(1);
        } finally {
          cri.close();
        }
        process.kill(first.pid, 'SIGKILL');
        const exit = await first.stop();
        expect(exit.signal).to.equal('SIGKILL');
        expect((await credentialSpecLeftovers(stateDir)).files, 'a killed runtime cannot clean up').to.have.length(1);

        const second = await startRuntime({ name: 'windows-restart-2', args: ['--state-dir', stateDir, '--ephemeral'] });
        try {
          expect(await credentialSpecLeftovers(stateDir)).to.deep.equal(NO_LEFTOVERS);
        } finally {
          await second.stop();
        }
      } finally {
        await rm(shared, { recursive: true, force: true });
      }
    });
  });

  it('cri-winsim runtime --metrics-addr counts credential specs written and removed, and none leaked', async () => {
    const rt = await startRuntime({ name: 'windows-metrics', args: ['--metrics-addr', '127.0.0.1:0'] });
    const cri = createCriClient(rt.endpoint);
    try {
      const line = rt.output().split('\n').find((l) => l.includes('serving metrics'));
      const url = line === undefined ? undefined : (JSON.parse(line) as { url?: string }).url;
      if (url === undefined) throw new Error(`the runtime did not log its metrics URL:\n${rt.output()}`);
      const metric = async (name: string): Promise<number> => {
        const text = await (await fetch(url)).text();
        const m = new RegExp(`^cri_winsim_${name} (\\S+)$`, 'm').exec(text);
        if (m === null) throw new Error(`metric cri_winsim_${name} not served`);
        return Number(m[1]);
      };
      const pod = windowsPodConfig('metrics', join(rt.dir, 'pods'), SECURITY);
      const { containerId } = await createWindowsContainer(cri, pod, windowsContainerConfig('app', IIS, SECURITY));
      expect(await metric('credential_spec_files_written_total')).to.equal(1);
      expect(await metric('credential_spec_files_removed_total')).to.equal(0);
      await unaryCall(cri.runtime, 'StartContainer', { container_id: containerId });
      expect(await metric('credential_spec_files_removed_total')).to.equal(1);
      expect(await metric('credential_spec_files_leaked')).to.equal(0);
      await removeAllPods(cri);
    } finally {
      cri.close();
      await rt.stop();
    }
  });

  for (const transport of ['file', 'registry'] as const) {
    it(`${transport}: RemoveContainer of a container that never started, and a graceful shutdown, remove the staged spec`, async () => {
      const rt = await startInProcessRuntime({ credentialSpecTransport: transport });
      try {
        const pod = windowsPodConfig('never-started', join(rt.dir, 'pods'), SECURITY);
        const { podId, containerId } = await createWindowsContainer(rt.cri, pod, windowsContainerConfig('first', IIS, SECURITY));
        const staged = await credentialSpecLeftovers(rt.stateDir);
        expect(staged.files.length + staged.registryValues.length).to.equal(1);
        await unaryCall(rt.cri.runtime, 'RemoveContainer', { container_id: containerId });
        expect(await credentialSpecLeftovers(rt.stateDir)).to.deep.equal(NO_LEFTOVERS);

        await unaryCall(rt.cri.runtime, 'CreateContainer', { pod_sandbox_id: podId, config: windowsContainerConfig('second', IIS, SECURITY), sandbox_config: pod });
        const again = await credentialSpecLeftovers(rt.stateDir);
        expect(again.files.length + again.registryValues.length).to.equal(1);
        await rt.close();
        expect(await credentialSpecLeftovers(rt.stateDir)).to.deep.equal(NO_LEFTOVERS);
      } finally {
        await rt.close();
        await rm(rt.dir, { recursive: true, force: true });
      }
    });
  }

  it('a started container stays RUNNING with no fault injected (the seam is off by default)', async () => {
    const rt = await startInProcessRuntime({});
    try {
      const pod = windowsPodConfig('no-faults', join(rt.dir, 'pods'), SECURITY);
      const { containerId } = await createWindowsContainer(rt.cri, pod, windowsContainerConfig('app', IIS, SECURITY));
      await unaryCall(rt.cri.runtime, 'StartContainer', { container_id: containerId });
      const { status } = await unaryCall(rt.cri.runtime, 'ContainerStatus', { container_id: containerId });
      expect(status!.state).to.equal(CONTAINER_RUNNING);
      expect(await credentialSpecLeftovers(rt.stateDir)).to.deep.equal(NO_LEFTOVERS);
    } finally {
      await rt.close();
      await rm(rt.dir, { recursive: true, force: true });
    }
  });
});
