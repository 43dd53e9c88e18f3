// The crash rounds of the bounded crash test (restart.test.ts) and `npm run soak`: seeded GMSA pod
// lifecycles (runp, create, start, stop, rm, stopp, rmp) on a real `cri-winsim runtime` process
// that is SIGKILLed after a random number of answered RPCs, in half the rounds while the next RPC
// is in flight; after each restart on the same state dir the node's pods and containers match the
// model, and no credential spec file is left that no CREATED container owns.
//
// Cheap rounds: each restart takes a pre-warmed host (test/support/crash-host.ts, a node process
// that has loaded the runtime's modules and waits for "open"), and the next one is spawned while the
// round runs; `lanes` rounds run at once, each lane on its own state dir and socket. The RPCs go
// over the runtime's socket with the project's gRPC client (crictl's start-up per call would be
// most of a round).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { NODE_FLAGS } from '../../src/tuning/node-flags.js';
import { READY_TEXT } from '../support/runtime.js';
import { testPodCidr } from '../support/pod-cidr.js';
import { prng } from '../support/seeded-random.js';
import { IIS, KEP_EXAMPLE_CREDENTIAL_SPEC, windowsContainerConfig, windowsPodConfig } from './windows-support.js';

const hostScript = fileURLToPath(new URL('../support/crash-host.js', import.meta.url));
const CALL = { timeoutMs: 30_000 };
const STEPS = ['runp', 'create', 'start', 'stop', 'rm', 'stopp', 'rmp'] as const;
type Step = (typeof STEPS)[number];
// CRI enums (api.proto): PodSandboxState, ContainerState.
const POD_STATE = ['SANDBOX_READY', 'SANDBOX_NOTREADY'];
const CTR_STATE = ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'];

/** The model: the pod and the container after the first n steps were answered. */
const podAfter = (n: number): string[] => (n === 0 || n === 7 ? [] : n <= 5 ? ['SANDBOX_READY'] : ['SANDBOX_NOTREADY']);
const ctrAfter = (n: number): string[] => (n <= 1 || n >= 5 ? [] : [['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED'][n - 2]!]);

export interface CrashOptions {
  /** A directory the caller owns and removes (one sub-directory per lane). */
  dir: string;
  seed: number;
  rounds: number;
  /** Rounds run at once, each lane on its own runtime and state dir. */
  lanes: number;
}

export interface CrashFigures {
  seed: number;
  rounds: number;
  lanes: number;
  /** Kills while an RPC had been sent and had no answer yet. */
  killedDuringAnRpc: number;
  /** Kills right after an RPC's answer arrived (the next one not sent yet, or answered in flight). */
  killedBetweenRpcs: number;
  restarts: number;
  /** Mean time from the kill's end to the restarted runtime's ready line. */
  meanRestartMs: number;
  /** Checked after every restart: all 0 when the run returns. */
  stateMismatches: 0;
  leakedCredentialSpecFiles: 0;
  lostOrDuplicatedContainers: 0;
  seconds: number;
  roundsPerSecond: number;
  /** The machine's 1-minute load average at the end (the rates depend on it). */
  loadAverage1m: number;
}

interface Host {
  child: ChildProcess;
  warm: Promise<void>;
  ready: Promise<void>;
  exited: Promise<void>;
  output: string[];
}

function spawnHost(cwd: string): Host {
  const child = spawn(process.execPath, [...NODE_FLAGS, hostScript], { cwd, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const output: string[] = [];
  // A message to a host that was just killed fails with EPIPE: its exit tells the waiter.
  child.on('error', (err) => output.push(`crash host: ${err.message}`));
  let onReady = (): void => {};
  let failReady = (_: Error): void => {};
  const ready = new Promise<void>((resolve, reject) => { onReady = resolve; failReady = reject; });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const warm = new Promise<void>((resolve, reject) => {
    child.once('message', (m) => (m === 'warm' ? resolve() : reject(new Error(`crash host sent ${JSON.stringify(m)}`))));
    void exited.then(() => reject(new Error(`crash host exited before it was warm: ${output.join('\n')}`)));
  });
  void exited.then(() => failReady(new Error(`runtime exited before it was ready: ${output.slice(-20).join('\n')}`)));
  // Both observed by the caller later; never an unhandled rejection meanwhile.
  warm.catch(() => undefined);
  ready.catch(() => undefined);
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      output.push(line);
      if (output.length > 200) output.shift();
      if (line.includes(READY_TEXT)) onReady();
    });
  }
  return { child, warm, ready, exited, output };
}

async function killHost(host: Host): Promise<void> {
  if (host.child.exitCode === null && host.child.signalCode === null) host.child.kill('SIGKILL');
  await host.exited;
}

class Lane {
  readonly dir: string;
  readonly stateDir: string;
  readonly endpoint: string;
  readonly podCidr = testPodCidr();
  readonly hosts = new Set<Host>();
  spare: Host;
  current: Host | undefined;
  cri: CriClient | undefined;
  private closed = false;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(join(dir, 'pod-logs'), { recursive: true });
    this.stateDir = join(dir, 'state');
    this.endpoint = `unix://${join(dir, 'cri.sock')}`;
    this.spare = this.spawn();
  }

  private spawn(): Host {
    if (this.closed) throw new Error('crash lane closed');
    const host = spawnHost(this.dir);
    this.hosts.add(host);
    void host.exited.then(() => this.hosts.delete(host));
    return host;
  }

  /** The spare opens the state dir and serves; a new spare warms up meanwhile. */
  async start(): Promise<CriClient> {
    const host = this.spare;
    this.spare = this.spawn();
    await host.warm;
    host.child.send({ open: ['--listen', this.endpoint, '--state-dir', this.stateDir, '--pod-cidr', this.podCidr] }, (err) => {
      if (err) host.output.push(`open not sent: ${err.message}`);
    });
    await host.ready;
    this.current = host;
    this.cri = createCriClient(this.endpoint);
    return this.cri;
  }

  async kill(): Promise<void> {
    if (this.current !== undefined) await killHost(this.current);
    this.cri?.close();
    this.cri = undefined;
    this.current = undefined;
  }

  stagedFiles(): string[] {
    try {
      return readdirSync(join(this.stateDir, 'CredentialSpecs')).filter((n) => n.startsWith('k8s-cred-spec-'));
    } catch {
      return [];
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cri?.close();
    await Promise.all([...this.hosts].map(killHost));
  }
}

class Mismatch extends Error {}

async function nodeState(cri: CriClient): Promise<{ pods: { id: string; state: string }[]; ctrs: { id: string; state: string; pod: string }[] }> {
  const pods = (await unaryCall(cri.runtime, 'ListPodSandbox', {}, CALL)).items.map((p) => ({ id: p.id, state: POD_STATE[p.state] ?? String(p.state) }));
  const ctrs = (await unaryCall(cri.runtime, 'ListContainers', {}, CALL)).containers.map((c) => ({ id: c.id, state: CTR_STATE[c.state] ?? String(c.state), pod: c.pod_sandbox_id }));
  return { pods, ctrs };
}

/** One round on a lane whose runtime serves and whose node is empty; the runtime serves again after it. */
async function round(lane: Lane, n: number, seed: number, figures: { during: number; between: number; restartMs: number }): Promise<void> {
  const random = prng((seed * 100_003 + n) >>> 0);
  const security = { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
  const podConfig = windowsPodConfig(`crash-${n}`, join(lane.dir, 'pod-logs'), security);
  const ctrConfig = windowsContainerConfig('iis', IIS, security);
  const ids = { pod: '', ctr: '' };
  const call = async (cri: CriClient, step: Step): Promise<void> => {
    const rt = cri.runtime;
    switch (step) {
      case 'runp': ids.pod = (await unaryCall(rt, 'RunPodSandbox', { config: podConfig }, CALL)).pod_sandbox_id; break;
      case 'create': ids.ctr = (await unaryCall(rt, 'CreateContainer', { pod_sandbox_id: ids.pod, config: ctrConfig, sandbox_config: podConfig }, CALL)).container_id; break;
      case 'start': await unaryCall(rt, 'StartContainer', { container_id: ids.ctr }, CALL); break;
      case 'stop': await unaryCall(rt, 'StopContainer', { container_id: ids.ctr, timeout: '0' }, CALL); break;
      case 'rm': await unaryCall(rt, 'RemoveContainer', { container_id: ids.ctr }, CALL); break;
      case 'stopp': await unaryCall(rt, 'StopPodSandbox', { pod_sandbox_id: ids.pod }, CALL); break;
      case 'rmp': await unaryCall(rt, 'RemovePodSandbox', { pod_sandbox_id: ids.pod }, CALL); break;
    }
  };
  let cri = lane.cri!;
  // 0–7 answered RPCs; then, in half the rounds, the next one is sent and the kill follows 0–3 ms later.
  const answered = Math.floor(random() * (STEPS.length + 1));
  for (let i = 0; i < answered; i++) await call(cri, STEPS[i]!);
  const inFlight = answered < STEPS.length && random() < 0.5 ? STEPS[answered]! : undefined;
  let flightAnswered = false;
  let flight: Promise<void> | undefined;
  if (inFlight !== undefined) {
    flight = call(cri, inFlight).then(() => { flightAnswered = true; }, () => undefined);
    const delay = Math.floor(random() * 4);
    await new Promise((res) => (delay === 0 ? setImmediate(res) : setTimeout(res, delay)));
  }
  const answerBeforeKill = flightAnswered;
  await lane.kill();
  await flight;
  if (inFlight !== undefined && !answerBeforeKill) figures.during++;
  else figures.between++;
  const restartAt = Date.now();
  cri = await lane.start();
  figures.restartMs += Date.now() - restartAt;

  const where = `round ${n}: killed after ${answered} answered RPC(s)${inFlight === undefined ? '' : ` with ${inFlight} ${answerBeforeKill ? 'answered' : 'in flight'}`}`;
  const allowed = inFlight === undefined ? [answered] : answerBeforeKill ? [answered + 1] : [answered, answered + 1];
  const { pods, ctrs } = await nodeState(cri);
  const observed = JSON.stringify([pods.map((p) => p.state), ctrs.map((c) => c.state)]);
  const models = allowed.map((k) => JSON.stringify([podAfter(k), ctrAfter(k)]));
  if (!models.includes(observed)) throw new Mismatch(`${where}: node state ${observed}, expected one of ${models.join(' ')}`);
  // The ones the node has are this round's: the answered ids, or the in-flight call's own.
  if (ids.pod !== '' && pods.some((p) => p.id !== ids.pod)) throw new Mismatch(`${where}: a sandbox that is not this round's: ${JSON.stringify(pods)}`);
  if (ids.ctr !== '' && ctrs.some((c) => c.id !== ids.ctr)) throw new Mismatch(`${where}: a container that is not this round's: ${JSON.stringify(ctrs)}`);
  if (ctrs.some((c) => c.pod !== pods[0]?.id)) throw new Mismatch(`${where}: a container without its sandbox: ${JSON.stringify([pods, ctrs])}`);
  const staged = lane.stagedFiles();
  const owned = ctrs[0]?.state === 'CONTAINER_CREATED' ? 1 : 0;
  if (staged.length !== owned) throw new Mismatch(`${where}: ${staged.length} credential spec file(s), ${owned} owned by a CREATED container`);
  // Clean up through the restarted runtime: the next round starts on an empty node.
  for (const p of pods) {
    await unaryCall(cri.runtime, 'StopPodSandbox', { pod_sandbox_id: p.id }, CALL);
    await unaryCall(cri.runtime, 'RemovePodSandbox', { pod_sandbox_id: p.id }, CALL);
  }
  const after = await nodeState(cri);
  if (after.pods.length + after.ctrs.length !== 0 || lane.stagedFiles().length !== 0) {
    throw new Mismatch(`${where}: after removing the pod: ${JSON.stringify(after)}, files ${JSON.stringify(lane.stagedFiles())}`);
  }
}

/** Runs the rounds on `lanes` runtimes at once; rejects with the round, the seed and what differed. */
export async function runCrashRounds(opts: CrashOptions): Promise<CrashFigures> {
  const started = Date.now();
  const figures = { during: 0, between: 0, restartMs: 0 };
  const lanes = Array.from({ length: Math.max(1, Math.min(opts.lanes, opts.rounds)) }, (_, i) => new Lane(join(opts.dir, `lane-${i}`)));
  let next = 0;
  let failed = false;
  let results: PromiseSettledResult<void>[];
  try {
    // Settled, not raced: a lane that fails stops the others after their round, before any is closed.
    results = await Promise.allSettled(lanes.map(async (lane) => {
      const cri = await lane.start().catch((err: unknown) => { failed = true; throw err; });
      await unaryCall(cri.image, 'PullImage', { image: { image: IIS } }, CALL);
      while (!failed && next < opts.rounds) {
        const n = next++;
        try {
          await round(lane, n, opts.seed, figures);
        } catch (err) {
          failed = true;
          const tail = lane.current?.output.slice(-10).join('\n') ?? '';
          throw new Error(`crash test failed; run again with CRASH_SEED=${opts.seed} CRASH_ROUNDS=${opts.rounds} CRASH_LANES=${opts.lanes}: ${(err as Error).message}${tail === '' ? '' : `\nruntime log:\n${tail}`}`, { cause: err });
        }
      }
    }));
  } finally {
    await Promise.all(lanes.map((lane) => lane.close()));
  }
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
  const seconds = (Date.now() - started) / 1000;
  return {
    seed: opts.seed,
    rounds: opts.rounds,
    lanes: lanes.length,
    killedDuringAnRpc: figures.during,
    killedBetweenRpcs: figures.between,
    restarts: opts.rounds,
    meanRestartMs: Math.round(figures.restartMs / Math.max(1, opts.rounds)),
    stateMismatches: 0,
    leakedCredentialSpecFiles: 0,
    lostOrDuplicatedContainers: 0,
    seconds: Math.round(seconds * 10) / 10,
    roundsPerSecond: Math.round((opts.rounds / seconds) * 100) / 100,
    loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
  };
}
