// --latency-profile, --seed and --inject-fault inside the runtime: the fault grammar and its texts
// (our own), the seeded draws, the log-normal shapes of the profiles, and the runtime applying
// them where a call enters it — before any side effect, within the call's deadline.
import { expect } from 'chai';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import nodeSchema from '../../schemas/node.schema.json' with { type: 'json' };
import { RuntimeMetrics } from '../../src/cri/metrics.js';
import { CallConditions, type CallConditionsOptions } from '../../src/runtime/call-conditions/call-conditions.js';
import { FAULT_METHODS, FaultSpecError, parseFaultSpec, type FaultSpec } from '../../src/runtime/call-conditions/fault-spec.js';
import { LATENCY_PROFILES, LATENCY_PROFILE_NAMES } from '../../src/runtime/call-conditions/latency-profiles.js';
import { withNodeFileTiming } from '../../src/runtime/call-conditions/node-file-timing.js';
import { RUNTIME_RPCS } from '../../src/runtime/cri-runtime.js';
import { parseNodeFile } from '../../src/runtime/windows/node-directory.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './windows/kep-example.js';
import { BUSYBOX, containerConfig, openRuntime, pull, rejection, sandboxConfig, type RuntimeFixture } from './helpers.js';

const NANOSERVER = 'mcr.microsoft.com/windows/nanoserver:ltsc2022';
const SERVERCORE = 'mcr.microsoft.com/windows/servercore:ltsc2022';
const pullRequest = (image: string) => ({ image: { image, annotations: {}, user_specified_image: '', runtime_handler: '', image_ref: '' }, auth: null, sandbox_config: null });

function specError(text: string): string {
  try {
    parseFaultSpec(text);
  } catch (err) {
    if (err instanceof FaultSpecError) return err.reason;
    throw err;
  }
  throw new Error(`${text} was accepted`);
}

describe('--inject-fault METHOD=CODE[:RATE][:MESSAGE]', () => {
  const accepted: Array<[string, FaultSpec]> = [
    ['RunPodSandbox=Unavailable', { method: 'RunPodSandbox', code: 'Unavailable', rate: 1 }],
    ['StartContainer=unavailable:0.3', { method: 'StartContainer', code: 'Unavailable', rate: 0.3 }],
    ['StartContainer=DEADLINE_EXCEEDED:0', { method: 'StartContainer', code: 'DeadlineExceeded', rate: 0 }],
    ['PullImage=8:1', { method: 'PullImage', code: 'ResourceExhausted', rate: 1 }],
    ['StopContainer=CANCELLED', { method: 'StopContainer', code: 'Canceled', rate: 1 }],
    ['CreateContainer=Unknown::hcs: The system cannot find the file specified.', { method: 'CreateContainer', code: 'Unknown', rate: 1, message: 'hcs: The system cannot find the file specified.' }],
    ['ExecSync=permission_denied:.5:denied', { method: 'ExecSync', code: 'PermissionDenied', rate: 0.5, message: 'denied' }],
  ];
  for (const [text, spec] of accepted) {
    it(`reads ${text}`, () => {
      expect(parseFaultSpec(text)).to.deep.equal(spec);
    });
  }

  // Our own texts; the CLI prints them after commander's "option … argument … is invalid."
  const refused: Array<[string, string]> = [
    ['StartContainer', 'must be METHOD=CODE[:RATE][:MESSAGE], e.g. StartContainer=Unavailable:0.3'],
    ['StartContainer=', 'the gRPC code after "=" is missing, e.g. StartContainer=Unavailable'],
    ['startcontainer=Unavailable', `unknown CRI method "startcontainer" (did you mean StartContainer?); valid methods: ${FAULT_METHODS.join(', ')}`],
    ['CheckpointContainer=Unavailable', `unknown CRI method "CheckpointContainer"; valid methods: ${FAULT_METHODS.join(', ')}`],
    ['StartContainer=Busy', 'unknown gRPC code "Busy"; valid codes: Canceled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists, PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange, Unimplemented, Internal, Unavailable, DataLoss, Unauthenticated (any case, or 1 to 16)'],
    ['StartContainer=OK', 'OK is not a failure; give a code from 1 to 16'],
    ['StartContainer=0', 'code 0 (OK) is not a failure; give a code from 1 to 16'],
    ['StartContainer=17', 'code 17 is not a gRPC status code (1 to 16)'],
    ['StartContainer=Unavailable:1.5', 'rate 1.5 is not a number from 0 to 1'],
    ['StartContainer=Unavailable:-0.1', 'rate "-0.1" is not a number from 0 to 1'],
    ['StartContainer=Unavailable:often', 'rate "often" is not a number from 0 to 1'],
    ['StartContainer=Unavailable:1:', 'the message after the rate is empty; leave it out for the default'],
  ];
  for (const [text, reason] of refused) {
    it(`refuses ${JSON.stringify(text)}: ${reason.slice(0, 60)}`, () => {
      expect(specError(text)).to.equal(reason);
    });
  }

  it('knows exactly the unary RPCs the runtime serves, as does the node file schema', () => {
    expect([...FAULT_METHODS]).to.deep.equal(Object.keys(RUNTIME_RPCS));
    const item = nodeSchema.properties.timing.properties.injectFaults.items;
    expect(item.properties.method.enum).to.deep.equal(Object.keys(RUNTIME_RPCS));
    expect(nodeSchema.properties.timing.properties.latencyProfile.enum).to.deep.equal([...LATENCY_PROFILE_NAMES]);
  });
});

/** The plans of `count` calls of `method`. */
function plans(conditions: CallConditions, method: string, count: number, request: unknown = {}): Array<[number, boolean]> {
  return Array.from({ length: count }, () => {
    const p = conditions.plan(method, request);
    return [p.delayMs, p.fault !== undefined] as [number, boolean];
  });
}

describe('seeded draws', () => {
  const options: CallConditionsOptions = { latencyProfile: 'windows-server-2019', seed: 42, faults: [parseFaultSpec('StartContainer=Unavailable:0.3')] };

  it('repeat exactly with the same seed and node', () => {
    const a = plans(new CallConditions(options, 'WINNODE1'), 'StartContainer', 200);
    const b = plans(new CallConditions(options, 'WINNODE1'), 'StartContainer', 200);
    expect(a).to.deep.equal(b);
    const failed = a.filter(([, f]) => f).length;
    // 30 % of 200, give or take what a fair coin does (the draw is fixed by the seed).
    expect(failed).to.be.within(40, 80);
  });

  it('are the same from one release to the next: seed 14 on WINNODE1 fails StartContainer=Unavailable:0.5 as F...FF', () => {
    // A user's `--seed` reproduces a run only while the streams stay as they are.
    const c = new CallConditions({ seed: 14, faults: [parseFaultSpec('StartContainer=Unavailable:0.5')] }, 'WINNODE1');
    expect(plans(c, 'StartContainer', 6).map(([, f]) => (f ? 'F' : '.')).join('')).to.equal('F...FF');
    const w = new CallConditions({ seed: 7, latencyProfile: 'windows-server-2019' }, 'WINNODE1');
    expect(Math.round(w.plan('RunPodSandbox', {}).delayMs)).to.equal(1837);
  });

  it('differ with another seed, and between nodes of one seed', () => {
    const a = plans(new CallConditions(options, 'WINNODE1'), 'StartContainer', 50);
    expect(plans(new CallConditions({ ...options, seed: 43 }, 'WINNODE1'), 'StartContainer', 50)).to.not.deep.equal(a);
    expect(plans(new CallConditions(options, 'WIN-2'), 'StartContainer', 50)).to.not.deep.equal(a);
  });

  it("give a method the same sequence however other methods' calls interleave with it", () => {
    const alone = plans(new CallConditions(options, 'WINNODE1'), 'StartContainer', 30);
    const mixed = new CallConditions(options, 'WINNODE1');
    const interleaved: Array<[number, boolean]> = [];
    for (let i = 0; i < 30; i++) {
      for (let j = 0; j < i % 4; j++) mixed.plan(j % 2 === 0 ? 'RunPodSandbox' : 'CreateContainer', {});
      interleaved.push(...plans(mixed, 'StartContainer', 1));
    }
    expect(interleaved).to.deep.equal(alone);
  });

  it('keep the delay sequence when only the fault rate changes (rate 0 never fails, rate 1 always does)', () => {
    const never = plans(new CallConditions({ ...options, faults: [parseFaultSpec('StartContainer=Unavailable:0')] }, 'N'), 'StartContainer', 500);
    const always = plans(new CallConditions({ ...options, faults: [parseFaultSpec('StartContainer=Unavailable:1')] }, 'N'), 'StartContainer', 500);
    expect(never.every(([, f]) => !f)).to.equal(true);
    expect(always.every(([, f]) => f)).to.equal(true);
    expect(never.map(([d]) => d)).to.deep.equal(always.map(([d]) => d));
  });

  it('use the later of two faults for one method', () => {
    const c = new CallConditions({ faults: [parseFaultSpec('StartContainer=Unavailable'), parseFaultSpec('StartContainer=Internal')] }, 'N');
    expect(c.plan('StartContainer', {}).fault?.code).to.equal('Internal');
    expect(c.faultSpecs()).to.have.length(1);
  });

  it('add nothing for RPCs a profile does not name, and nothing at all with none', () => {
    const conditions = new CallConditions(options, 'N');
    expect(plans(conditions, 'Version', 3)).to.deep.equal([[0, false], [0, false], [0, false]]);
    expect(new CallConditions({ seed: 1 }, 'N').active).to.equal(false);
    expect(plans(new CallConditions({ latencyProfile: 'none', seed: 1 }, 'N'), 'RunPodSandbox', 2)).to.deep.equal([[0, false], [0, false]]);
  });
});

describe('latency profiles', () => {
  /** The q-quantile of sorted values. */
  const quantile = (sorted: number[], q: number): number => sorted[Math.floor(q * (sorted.length - 1))]!;

  for (const name of LATENCY_PROFILE_NAMES.filter((n) => n !== 'none')) {
    const profile = LATENCY_PROFILES[name];
    for (const [rpc, d] of Object.entries(profile.rpcs)) {
      it(`${name}: ${rpc} draws a median near ${d!.median} ms and a 95th percentile near ${d!.p95} ms`, () => {
        const conditions = new CallConditions({ latencyProfile: name, seed: 2026 }, 'WINNODE1');
        const delays = plans(conditions, rpc, 4000).map(([ms]) => ms).sort((a, b) => a - b);
        expect(quantile(delays, 0.5) / d!.median).to.be.within(0.9, 1.1);
        expect(quantile(delays, 0.95) / d!.p95).to.be.within(0.85, 1.15);
      });
    }
  }

  it('makes a pull take longer by the size of the image, and a pull of an image already present only the fixed part', () => {
    const sizes: Record<string, number | undefined> = { [NANOSERVER]: 104_857_600, [SERVERCORE]: 2_714_763_264, present: 0 };
    const open = () => new CallConditions({ latencyProfile: 'windows-server-2019', seed: 5 }, 'WINNODE1', (image) => sizes[image]);
    const median = (image: string): number => {
      const d = Array.from({ length: 401 }, () => open().plan('PullImage', pullRequest(image)).delayMs);
      const c = open();
      const seq = Array.from({ length: 401 }, () => c.plan('PullImage', pullRequest(image)).delayMs).sort((a, b) => a - b);
      expect(new Set(d).size).to.equal(1); // a fresh instance of one seed draws the same first pull
      return seq[200]!;
    };
    const { fixedMs, perMiBMs } = LATENCY_PROFILES['windows-server-2019'].pull!;
    // Servercore: 2589 MiB at 60 ms/MiB (median) is minutes; nanoserver 100 MiB seconds.
    expect(median(SERVERCORE) / (fixedMs.median + perMiBMs.median * 2589)).to.be.within(0.7, 1.3);
    expect(median(NANOSERVER) / (fixedMs.median + perMiBMs.median * 100)).to.be.within(0.7, 1.3);
    expect(median('present') / fixedMs.median).to.be.within(0.8, 1.2);
  });
});

describe('the node file timing section', () => {
  const node = (timing: string): string => `node:\n  name: WINNODE1\n  hostname: winnode1.contoso.com\ndomains: []\n${timing}`;
  const refusal = (timing: string): string => {
    try {
      parseNodeFile(node(timing), 'node.yaml');
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('the node file was accepted');
  };

  it('is read, and the command line wins over it', () => {
    const directory = parseNodeFile(node([
      'timing:',
      '  latencyProfile: windows-server-2022',
      '  seed: 9',
      '  injectFaults:',
      '    - { method: StartContainer, code: Unavailable, rate: 0.25 }',
      '    - { method: PullImage, code: "8", message: "toomanyrequests: rate limit" }',
    ].join('\n')), 'node.yaml');
    const fromFile = withNodeFileTiming({}, directory.file.timing, directory.source);
    expect(fromFile).to.deep.equal({
      latencyProfile: 'windows-server-2022',
      seed: 9,
      faults: [
        { method: 'StartContainer', code: 'Unavailable', rate: 0.25 },
        { method: 'PullImage', code: 'ResourceExhausted', rate: 1, message: 'toomanyrequests: rate limit' },
      ],
    });
    const cli = withNodeFileTiming({ latencyProfile: 'none', seed: 1, faults: [parseFaultSpec('StartContainer=Internal')] }, directory.file.timing, directory.source);
    expect(cli).to.deep.equal({
      latencyProfile: 'none',
      seed: 1,
      faults: [
        { method: 'StartContainer', code: 'Internal', rate: 1 },
        { method: 'PullImage', code: 'ResourceExhausted', rate: 1, message: 'toomanyrequests: rate limit' },
      ],
    });
  });

  const bad: Array<[string, string]> = [
    ['timing:\n  latencyProfile: windows-server-2016\n', 'node.yaml: timing.latencyProfile: must be one of none, windows-server-2019, windows-server-2022, linux-containerd (got "windows-server-2016")'],
    ['timing:\n  seed: -3\n', 'node.yaml: timing.seed: must be >= 0 (got -3)'],
    ['timing:\n  latency: slow\n', 'node.yaml: timing.latency: is not a known field'],
    ['timing:\n  injectFaults:\n    - { method: StartContainers, code: Unavailable }\n', 'node.yaml: timing.injectFaults[0].method: must be a CRI method the runtime serves, as the proto spells it (RunPodSandbox, PullImage, CreateContainer, StartContainer, ...) (got "StartContainers")'],
    ['timing:\n  injectFaults:\n    - { method: StartContainer, code: Busy }\n', 'node.yaml: timing.injectFaults[0].code: unknown gRPC code "Busy"; valid codes: Canceled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists, PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange, Unimplemented, Internal, Unavailable, DataLoss, Unauthenticated (any case, or 1 to 16)'],
    ['timing:\n  injectFaults:\n    - { method: StartContainer, code: Unavailable, rate: 2 }\n', 'node.yaml: timing.injectFaults[0].rate: must be <= 1 (got 2)'],
    ['timing:\n  injectFaults:\n    - { method: StartContainer }\n', 'node.yaml: timing.injectFaults[0].code: is required'],
  ];
  for (const [timing, message] of bad) {
    it(`refuses ${JSON.stringify(timing.trim().split('\n').pop()!.trim())} naming the field`, () => {
      expect(refusal(timing)).to.equal(message);
    });
  }
});

describe('a runtime with latency and faults', function () {
  this.timeout(30_000);
  let fx: RuntimeFixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  const windowsSandbox = () => sandboxConfig({ windows: { security_context: { run_as_username: '', credential_spec: '', host_process: false, namespace_options: null } } });

  it('fails RunPodSandbox before creating anything: no sandbox, no pod IP, the default message', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    fx = await openRuntime({ callConditions: { faults: [parseFaultSpec('RunPodSandbox=Unavailable')], metrics: metrics.callConditions } });
    const err = await rejection(fx.runtime.runPodSandbox({ config: sandboxConfig(), runtime_handler: '' }));
    expect({ code: err.code, message: err.message }).to.deep.equal({
      code: 'Unavailable',
      message: 'fault injected by cri-winsim (--inject-fault RunPodSandbox=Unavailable): RunPodSandbox failed before doing anything',
    });
    expect(fx.runtime.context.sandboxes.size).to.equal(0);
    expect(await readdir(join(fx.runtime.context.settings.stateDir))).to.not.include('pods');
    expect(await metrics.text()).to.include('cri_winsim_injected_faults_total{operation_type="run_podsandbox",code="UNAVAILABLE"} 1');
  });

  it('fails CreateContainer of a gMSA container before the credential spec file is written', async () => {
    fx = await openRuntime({ callConditions: { faults: [parseFaultSpec('CreateContainer=Unknown::hcsshim::CreateComputeSystem: The requested resource is in use.')] } });
    const { runtime } = fx;
    await pull(runtime, NANOSERVER);
    const config = windowsSandbox();
    const sandboxId = (await runtime.runPodSandbox({ config, runtime_handler: '' })).pod_sandbox_id!;
    const err = await rejection(runtime.createContainer({
      pod_sandbox_id: sandboxId,
      sandbox_config: config,
      config: containerConfig(NANOSERVER, {
        command: ['cmd', '/c', 'echo', 'hi'],
        windows: { resources: null, security_context: { run_as_username: '', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC, host_process: false } },
      }),
    }));
    expect({ code: err.code, message: err.message }).to.deep.equal({ code: 'Unknown', message: 'hcsshim::CreateComputeSystem: The requested resource is in use.' });
    expect(runtime.context.containers.size).to.equal(0);
    expect(await readdir(runtime.context.windows.handoff.directory)).to.deep.equal([]);
    expect(await runtime.credentialSpecLeaks()).to.equal(0);
  });

  it('fails StartContainer at the seeded rate and leaves a failed start retryable', async () => {
    fx = await openRuntime({ callConditions: { seed: 14, faults: [parseFaultSpec('StartContainer=Unavailable:0.5')] } });
    const { runtime } = fx;
    await pull(runtime, BUSYBOX);
    const config = sandboxConfig();
    const sandboxId = (await runtime.runPodSandbox({ config, runtime_handler: '' })).pod_sandbox_id!;
    const id = (await runtime.createContainer({ pod_sandbox_id: sandboxId, sandbox_config: config, config: containerConfig(BUSYBOX, { command: ['sleep', '3600'] }) })).container_id!;
    // The same seed and node predict each attempt.
    const predicted = new CallConditions({ seed: 14, faults: [parseFaultSpec('StartContainer=Unavailable:0.5')] }, runtime.context.windows.node.name);
    let attempts = 0;
    for (;;) {
      attempts++;
      const fails = predicted.plan('StartContainer', {}).fault !== undefined;
      const outcome = await runtime.startContainer({ container_id: id }).then(() => 'started', (e: Error) => e.message);
      if (!fails) {
        expect(outcome).to.equal('started');
        break;
      }
      expect(outcome).to.match(/^fault injected by cri-winsim/);
      expect(runtime.context.containers.get(id)!.status).to.include({ state: 0 /* CREATED */, starting: false });
      expect(attempts).to.be.below(50);
    }
    expect(attempts).to.equal(2);
    expect(runtime.context.containers.get(id)!.status.state).to.equal(1 /* RUNNING */);
  });

  it('ends a delay that outlasts the deadline with DeadlineExceeded, the handler never run', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    // Seed 66 draws 958 ms for the first RunPodSandbox on WINNODE1 (seed 3 drew 124 ms): the
    // wait that ends at the 5 ms deadline stays far below it even when a busy machine holds the
    // deadline's timer back.
    const options = { latencyProfile: 'linux-containerd', seed: 66 } as const;
    fx = await openRuntime({ callConditions: { ...options, metrics: metrics.callConditions } });
    const { runtime } = fx;
    const delay = new CallConditions(options, runtime.context.windows.node.name).plan('RunPodSandbox', {}).delayMs;
    expect(delay).to.be.above(900);
    const err = await rejection(runtime.runPodSandbox({ config: sandboxConfig(), runtime_handler: '' }, Date.now() + 5));
    expect(err.code).to.equal('DeadlineExceeded');
    expect(err.message).to.match(/^context deadline exceeded: RunPodSandbox takes \d+ms on this node \(--latency-profile linux-containerd\), longer than the call's deadline allowed \(\d+ms\)$/);
    expect(runtime.context.sandboxes.size).to.equal(0);
    const text = await metrics.text();
    expect(text).to.include('cri_winsim_injected_latency_seconds_count{operation_type="run_podsandbox"} 1');
    // The call waited until its deadline, not the whole delay.
    const sum = Number(/cri_winsim_injected_latency_seconds_sum\{operation_type="run_podsandbox"\} (\S+)/.exec(text)![1]);
    expect(sum).to.be.below(delay / 1000);
  });

  it('keeps other calls going while one waits, and ends the wait when the runtime closes', async () => {
    fx = await openRuntime({ callConditions: { latencyProfile: 'windows-server-2019', seed: 1 } });
    const { runtime } = fx;
    const order: string[] = [];
    const slow = runtime.runPodSandbox({ config: sandboxConfig(), runtime_handler: '' }).then(() => 'created', (e: Error) => e.message);
    void slow.then(() => order.push('RunPodSandbox'));
    await runtime.version({ version: '' });
    order.push('Version');
    expect((await runtime.listPodSandbox({ filter: null })).items).to.deep.equal([]);
    await fx.close();
    fx = undefined;
    expect(await slow).to.equal('runtime is closed: RunPodSandbox refused');
    expect(order).to.deep.equal(['Version', 'RunPodSandbox']);
  });
});
