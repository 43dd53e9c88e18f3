// Property-based tests of the CRI lifecycle over the real socket: fast-check generates sequences
// of RunPodSandbox, CreateContainer (with and without a credential spec and RunAsUserName),
// StartContainer, StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox, the Status and
// List RPCs and ExecSync — some of them concurrent — runs them against `cri-winsim runtime` and
// checks every answer against a small model of the CRI state machine:
//   - only legal transitions (CREATED → RUNNING → EXITED; a failed start is EXITED, as in
//     containerd v2.1 internal/cri/server/container_start.go; stop and remove are idempotent, as
//     the CRI v1 api.proto comments require);
//   - ListContainers and ListPodSandbox agree with the model and with ContainerStatus and
//     PodSandboxStatus;
//   - every error is a gRPC status with a message naming the id it is about;
//   - the credential spec directory holds exactly one file per created, never started container
//     with a credential spec, and nothing once everything is removed.
// A failure prints fast-check's seed and path; FC_SEED/FC_PATH replay it, FC_NUM_RUNS runs more.
import { expect } from 'chai';
import { status, type ServiceError } from '@grpc/grpc-js';
import fc from 'fast-check';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from '../runtime/windows/kep-example.js';
import {
  BUSYBOX,
  IIS,
  codeName,
  crashLines,
  credentialSpecFiles,
  fcParameters,
  removeEverything,
  startHardeningRuntime,
  unclearStatus,
  type HardeningRuntime,
} from './support.js';

type ContainerStateName = 'CREATED' | 'RUNNING' | 'EXITED';
type PodStateName = 'READY' | 'NOTREADY';
/** runtime.v1.ContainerState and PodSandboxState by number. */
const CONTAINER_STATE: readonly ContainerStateName[] = ['CREATED', 'RUNNING', 'EXITED'];
const POD_STATE: readonly PodStateName[] = ['READY', 'NOTREADY'];

type CredentialSpecKind = 'none' | 'valid' | 'invalid';

interface ModelPod {
  id: string;
  name: string;
  state: PodStateName;
}

interface ModelContainer {
  id: string;
  podId: string;
  state: ContainerStateName;
  credentialSpec: CredentialSpecKind;
  /** Whether a start was attempted (the staged credential spec file is gone after it). */
  startAttempted: boolean;
}

interface Model {
  pods: ModelPod[];
  containers: ModelContainer[];
  /** Ids of removed objects: stop and remove stay OK, status answers NOT_FOUND. */
  removedContainers: string[];
  removedPods: string[];
}

/** A container-level step; `target` picks a container (modulo the number there are). */
type ContainerStep =
  | { kind: 'start'; target: number }
  | { kind: 'stop'; target: number }
  | { kind: 'remove'; target: number }
  | { kind: 'status'; target: number }
  | { kind: 'exec'; target: number };

type Step =
  | ContainerStep
  | { kind: 'runPod' }
  | { kind: 'create'; pod: number; credentialSpec: CredentialSpecKind; runAsUserName: boolean }
  | { kind: 'stopPod'; pod: number }
  | { kind: 'removePod'; pod: number }
  | { kind: 'podStatus'; pod: number }
  | { kind: 'list' }
  | { kind: 'removedId'; target: number; rpc: 'ContainerStatus' | 'StopContainer' | 'RemoveContainer' | 'StartContainer' }
  /** The same RPC on one container from several clients at once. */
  | { kind: 'sameConcurrently'; rpc: 'start' | 'stop' | 'remove'; target: number; copies: number }
  /** Container steps on distinct containers, at once. */
  | { kind: 'batch'; steps: ContainerStep[] };

const containerStep: fc.Arbitrary<ContainerStep> = fc.oneof(
  fc.record({ kind: fc.constant('start' as const), target: fc.nat() }),
  fc.record({ kind: fc.constant('stop' as const), target: fc.nat() }),
  fc.record({ kind: fc.constant('remove' as const), target: fc.nat() }),
  fc.record({ kind: fc.constant('status' as const), target: fc.nat() }),
  fc.record({ kind: fc.constant('exec' as const), target: fc.nat() }),
);

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'runPod' as const }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      pod: fc.nat(),
      credentialSpec: fc.constantFrom<CredentialSpecKind>('none', 'valid', 'invalid'),
      runAsUserName: fc.boolean(),
    }),
    weight: 4,
  },
  { arbitrary: containerStep, weight: 6 },
  { arbitrary: fc.record({ kind: fc.constant('stopPod' as const), pod: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('removePod' as const), pod: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('podStatus' as const), pod: fc.nat() }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'list' as const }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('removedId' as const),
      target: fc.nat(),
      rpc: fc.constantFrom('ContainerStatus' as const, 'StopContainer' as const, 'RemoveContainer' as const, 'StartContainer' as const),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('sameConcurrently' as const),
      rpc: fc.constantFrom('start' as const, 'stop' as const, 'remove' as const),
      target: fc.nat(),
      copies: fc.integer({ min: 2, max: 4 }),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('batch' as const), steps: fc.array(containerStep, { minLength: 2, maxLength: 5 }) }), weight: 2 },
);

/** An invalid credential spec: valid JSON the runtime's schema refuses at StartContainer. */
const INVALID_CREDENTIAL_SPEC = '{"CmsPlugins":["ActiveDirectory"]}';

describe('hardening: CRI lifecycle properties over the socket (fast-check)', function () {
  this.timeout(120_000);
  let h: HardeningRuntime | undefined;
  let podCounter = 0;
  let containerCounter = 0;

  const runtime = (): HardeningRuntime => {
    if (h === undefined) throw new Error('no runtime (see the before all hook)');
    return h;
  };

  before(async () => {
    h = await startHardeningRuntime('hardening-model');
    await h.call('image', 'PullImage', { image: { image: BUSYBOX } });
    await h.call('image', 'PullImage', { image: { image: IIS } });
  });

  after(async () => {
    const left = h === undefined ? [] : crashLines(h.rt.output());
    await h?.stop();
    expect(left, 'exceptions in the runtime output').to.deep.equal([]);
  });

  const podConfig = (name: string) => ({ metadata: { name, namespace: 'hardening', uid: `uid-${name}`, attempt: 0 } });

  /** The error of a call that must fail: a clear status naming `id`. */
  function expectFailure(err: ServiceError | undefined, what: string, code: status, id: string): void {
    expect(err, `${what} succeeded; ${codeName(code)} was expected`).to.not.equal(undefined);
    expect(unclearStatus(err), what).to.equal(undefined);
    expect(codeName(err!.code), `${what}: ${err!.details}`).to.equal(codeName(code));
    expect(err!.details, `${what}: the message names the id`).to.include(id);
  }

  function expectSuccess(err: ServiceError | undefined, what: string): void {
    expect(err === undefined ? undefined : `${codeName(err.code)}: ${err.details}`, what).to.equal(undefined);
  }

  const containerState = async (id: string): Promise<ContainerStateName> => {
    const res = await runtime().call('runtime', 'ContainerStatus', { container_id: id });
    return CONTAINER_STATE[res.status.state as number] as ContainerStateName;
  };

  /** Checks one container step against the model and applies it. Targets must be distinct when run concurrently. */
  async function containerStepRun(model: Model, s: ContainerStep, c: ModelContainer): Promise<void> {
    const rt = runtime();
    const pod = model.pods.find((p) => p.id === c.podId);
    switch (s.kind) {
      case 'start': {
        const err = await rt.outcome('runtime', 'StartContainer', { container_id: c.id });
        if (c.state !== 'CREATED') {
          expectFailure(err, `StartContainer of a ${c.state} container`, status.FAILED_PRECONDITION, c.id);
        } else if (pod?.state !== 'READY') {
          expectFailure(err, 'StartContainer in a stopped pod', status.FAILED_PRECONDITION, c.podId);
        } else if (c.credentialSpec === 'invalid') {
          expect(err, 'StartContainer with an invalid credential spec').to.not.equal(undefined);
          expect(unclearStatus(err)).to.equal(undefined);
          expect(err!.details).to.match(/^invalid credential spec: /);
          c.state = 'EXITED';
          c.startAttempted = true;
        } else {
          expectSuccess(err, 'StartContainer of a created container');
          c.state = 'RUNNING';
          c.startAttempted = true;
        }
        break;
      }
      case 'stop': {
        expectSuccess(await rt.outcome('runtime', 'StopContainer', { container_id: c.id, timeout: '0' }), `StopContainer of a ${c.state} container`);
        if (c.state === 'RUNNING') c.state = 'EXITED';
        break;
      }
      case 'remove': {
        expectSuccess(await rt.outcome('runtime', 'RemoveContainer', { container_id: c.id }), `RemoveContainer of a ${c.state} container`);
        model.containers = model.containers.filter((x) => x !== c);
        model.removedContainers.push(c.id);
        break;
      }
      case 'status': {
        expect(await containerState(c.id), `ContainerStatus of ${c.id}`).to.equal(c.state);
        break;
      }
      case 'exec': {
        const outcome = await rt.call('runtime', 'ExecSync', { container_id: c.id, cmd: ['echo', 'hardening'], timeout: '5' }).then(
          (res: { stdout: Buffer; exit_code: number }) => ({ res }),
          (err: ServiceError) => ({ err }),
        );
        if (c.state === 'RUNNING') {
          expect('err' in outcome ? outcome.err.details : undefined, 'ExecSync in a running container').to.equal(undefined);
          if ('res' in outcome) {
            expect(outcome.res.exit_code).to.equal(0);
            expect(Buffer.from(outcome.res.stdout).toString('utf8').trim()).to.equal('hardening');
          }
        } else {
          expectFailure('err' in outcome ? outcome.err : undefined, `ExecSync in a ${c.state} container`, status.FAILED_PRECONDITION, c.id);
        }
        break;
      }
    }
  }

  async function checkList(model: Model): Promise<void> {
    const rt = runtime();
    const { containers } = await rt.call('runtime', 'ListContainers', {});
    const { items } = await rt.call('runtime', 'ListPodSandbox', {});
    const listed = (containers as Array<{ id: string; state: number; pod_sandbox_id: string }>)
      .map((c) => `${c.id} ${CONTAINER_STATE[c.state]} ${c.pod_sandbox_id}`).sort();
    expect(listed, 'ListContainers against the model').to.deep.equal(model.containers.map((c) => `${c.id} ${c.state} ${c.podId}`).sort());
    const pods = (items as Array<{ id: string; state: number }>).map((p) => `${p.id} ${POD_STATE[p.state]}`).sort();
    expect(pods, 'ListPodSandbox against the model').to.deep.equal(model.pods.map((p) => `${p.id} ${p.state}`).sort());
    // List* agree with *Status.
    for (const c of containers as Array<{ id: string; state: number }>) {
      expect(await containerState(c.id), `ContainerStatus of listed ${c.id}`).to.equal(CONTAINER_STATE[c.state]);
    }
    for (const p of items as Array<{ id: string; state: number }>) {
      const res = await rt.call('runtime', 'PodSandboxStatus', { pod_sandbox_id: p.id });
      expect(POD_STATE[res.status.state as number], `PodSandboxStatus of listed ${p.id}`).to.equal(POD_STATE[p.state]);
    }
    const staged = model.containers.filter((c) => c.credentialSpec !== 'none' && !c.startAttempted).length;
    expect((await credentialSpecFiles(rt.rt.stateDir)).length, 'staged credential spec files').to.equal(staged);
  }

  async function runStep(model: Model, s: Step): Promise<void> {
    const rt = runtime();
    const pick = <T>(list: T[], n: number): T | undefined => (list.length === 0 ? undefined : list[n % list.length]);
    switch (s.kind) {
      case 'runPod': {
        const name = `pod-${++podCounter}`;
        const res = await rt.call('runtime', 'RunPodSandbox', { config: podConfig(name) });
        model.pods.push({ id: res.pod_sandbox_id, name, state: 'READY' });
        return;
      }
      case 'create': {
        const pod = pick(model.pods, s.pod);
        if (pod === undefined) return;
        const security = {
          ...(s.credentialSpec === 'none' ? {} : { credential_spec: s.credentialSpec === 'valid' ? KEP_EXAMPLE_CREDENTIAL_SPEC : INVALID_CREDENTIAL_SPEC }),
          ...(s.runAsUserName ? { run_as_username: 'ContainerUser' } : {}),
        };
        const windows = s.credentialSpec !== 'none' || s.runAsUserName;
        const request = {
          pod_sandbox_id: pod.id,
          config: {
            metadata: { name: `c-${++containerCounter}` },
            image: { image: windows ? IIS : BUSYBOX },
            command: windows ? ['ping', '-t', 'localhost'] : ['sleep', '3600'],
            ...(windows ? { windows: { security_context: security } } : {}),
          },
          sandbox_config: podConfig(pod.name),
        };
        const files = (await credentialSpecFiles(rt.rt.stateDir)).length;
        const outcome = await rt.call('runtime', 'CreateContainer', request).then(
          (res: { container_id: string }) => ({ id: res.container_id }),
          (err: ServiceError) => ({ err }),
        );
        if (pod.state === 'READY') {
          if ('err' in outcome) expectSuccess(outcome.err, 'CreateContainer in a ready pod');
          else model.containers.push({ id: outcome.id, podId: pod.id, state: 'CREATED', credentialSpec: s.credentialSpec, startAttempted: false });
        } else {
          expectFailure('err' in outcome ? outcome.err : undefined, 'CreateContainer in a stopped pod', status.FAILED_PRECONDITION, pod.id);
          // Nothing left behind by the refused create.
          expect((await credentialSpecFiles(rt.rt.stateDir)).length, 'credential spec files after a refused create').to.equal(files);
        }
        return;
      }
      case 'start': case 'stop': case 'remove': case 'status': case 'exec': {
        const c = pick(model.containers, s.target);
        if (c !== undefined) await containerStepRun(model, s, c);
        return;
      }
      case 'stopPod': {
        const pod = pick(model.pods, s.pod);
        if (pod === undefined) return;
        expectSuccess(await rt.outcome('runtime', 'StopPodSandbox', { pod_sandbox_id: pod.id }), `StopPodSandbox of a ${pod.state} pod`);
        pod.state = 'NOTREADY';
        for (const c of model.containers) if (c.podId === pod.id && c.state === 'RUNNING') c.state = 'EXITED';
        return;
      }
      case 'removePod': {
        const pod = pick(model.pods, s.pod);
        if (pod === undefined) return;
        expectSuccess(await rt.outcome('runtime', 'RemovePodSandbox', { pod_sandbox_id: pod.id }), `RemovePodSandbox of a ${pod.state} pod`);
        model.pods = model.pods.filter((p) => p !== pod);
        model.removedPods.push(pod.id);
        for (const c of model.containers.filter((x) => x.podId === pod.id)) model.removedContainers.push(c.id);
        model.containers = model.containers.filter((c) => c.podId !== pod.id);
        return;
      }
      case 'podStatus': {
        const pod = pick(model.pods, s.pod);
        if (pod !== undefined) {
          const res = await rt.call('runtime', 'PodSandboxStatus', { pod_sandbox_id: pod.id });
          expect(POD_STATE[res.status.state as number], `PodSandboxStatus of ${pod.id}`).to.equal(pod.state);
          return;
        }
        const gone = pick(model.removedPods, s.pod);
        if (gone !== undefined) {
          expectFailure(await rt.outcome('runtime', 'PodSandboxStatus', { pod_sandbox_id: gone }), 'PodSandboxStatus of a removed pod', status.NOT_FOUND, gone);
        }
        return;
      }
      case 'list':
        await checkList(model);
        return;
      case 'removedId': {
        const id = pick(model.removedContainers, s.target);
        if (id === undefined) return;
        const err = await rt.outcome('runtime', s.rpc, s.rpc === 'StopContainer' ? { container_id: id, timeout: '0' } : { container_id: id });
        // CRI v1 api.proto: StopContainer and RemoveContainer must not fail for a container that is gone.
        if (s.rpc === 'StopContainer' || s.rpc === 'RemoveContainer') expectSuccess(err, `${s.rpc} of a removed container`);
        else expectFailure(err, `${s.rpc} of a removed container`, status.NOT_FOUND, id);
        return;
      }
      case 'sameConcurrently': {
        const c = pick(model.containers, s.target);
        if (c === undefined) return;
        const pod = model.pods.find((p) => p.id === c.podId);
        const rpc = { start: 'StartContainer', stop: 'StopContainer', remove: 'RemoveContainer' }[s.rpc];
        const request = s.rpc === 'stop' ? { container_id: c.id, timeout: '0' } : { container_id: c.id };
        const errors = await Promise.all(Array.from({ length: s.copies }, () => rt.outcome('runtime', rpc, request)));
        for (const err of errors) if (err !== undefined) expect(unclearStatus(err), `${rpc} concurrently`).to.equal(undefined);
        const ok = errors.filter((e) => e === undefined).length;
        if (s.rpc === 'start') {
          const startable = c.state === 'CREATED' && pod?.state === 'READY';
          const willRun = startable && c.credentialSpec !== 'invalid';
          // Exactly one start wins; the others see a container that is starting or running.
          expect(ok, `successful concurrent starts of a ${c.state} container`).to.equal(willRun ? 1 : 0);
          for (const err of errors) {
            if (err === undefined) continue;
            const named = err.details.includes(c.id) || err.details.includes(c.podId) || err.details.startsWith('invalid credential spec: ');
            expect(named, `a concurrent StartContainer error names the container or its pod: ${err.details}`).to.equal(true);
          }
          if (startable) {
            c.state = willRun ? 'RUNNING' : 'EXITED';
            c.startAttempted = true;
          }
        } else {
          expect(ok, `successful concurrent ${rpc} calls`).to.equal(s.copies);
          if (s.rpc === 'stop' && c.state === 'RUNNING') c.state = 'EXITED';
          if (s.rpc === 'remove') {
            model.containers = model.containers.filter((x) => x !== c);
            model.removedContainers.push(c.id);
          }
        }
        return;
      }
      case 'batch': {
        // Distinct containers only: their results do not depend on the order.
        const chosen = new Map<ModelContainer, ContainerStep>();
        for (const inner of s.steps) {
          const c = pick(model.containers, inner.target);
          if (c !== undefined && !chosen.has(c)) chosen.set(c, inner);
        }
        await Promise.all([...chosen].map(([c, inner]) => containerStepRun(model, inner, c)));
        return;
      }
    }
  }

  it('keeps every answer consistent with the CRI state machine, and leaves no credential spec', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const model: Model = { pods: [], containers: [], removedContainers: [], removedPods: [] };
        try {
          // Start from a pod so most sequences reach containers.
          await runStep(model, { kind: 'runPod' });
          for (const s of steps) await runStep(model, s);
          await checkList(model);
        } finally {
          await removeEverything(runtime());
        }
        expect(await credentialSpecFiles(runtime().rt.stateDir), 'credential spec files after removing everything').to.deep.equal([]);
        const { containers } = await runtime().call('runtime', 'ListContainers', {});
        expect(containers).to.deep.equal([]);
      }),
      fcParameters(15),
    );
  });
});
