import { createHash, randomInt } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { RuntimeError, type RuntimeErrorCode } from '../errors.js';
import { defaultFaultMessage, type FaultSpec } from './fault-spec.js';
import { LATENCY_PROFILES, logNormalAt, type LatencyProfile, type LatencyProfileName, type LogNormal } from './latency-profiles.js';
import { HYPERV_HANDLER } from '../images/windows-compat.js';

/**
 * What `--latency-profile`, `--seed` and `--inject-fault` ask of a runtime: how long its RPCs
 * take and which of them fail. Applied once, where a call enters the runtime (NodeRuntime.serve),
 * before the handler runs: a delayed call does its work after the delay, a failed call does
 * nothing at all (no sandbox, no credential spec file).
 */
export interface CallConditionsOptions {
  /** Default 'none'. */
  readonly latencyProfile?: LatencyProfileName | undefined;
  /** The seed of every draw; default a random one (logged, so a run can be repeated). */
  readonly seed?: number | undefined;
  /** At most one per method (a later one for the same method replaces an earlier one). */
  readonly faults?: readonly FaultSpec[] | undefined;
  readonly metrics?: CallConditionCounters | undefined;
}

/**
 * Counters of injected faults and latency (src/cri/metrics.ts RuntimeMetrics.callConditions is
 * one; structurally the same, without importing src/cri).
 */
export interface CallConditionCounters {
  onFaultInjected(method: string, code: RuntimeErrorCode): void;
  onLatencyInjected(method: string, seconds: number): void;
}

/** The seed range: what `--seed` accepts and what xoroshiro128+ is seeded with. */
export const MAX_SEED = 0xffff_ffff;

/** A stream of uniform numbers in [0, 1), its own per (seed, node, method, purpose). */
interface Stream {
  next(): number;
}

/**
 * One stream per (node, method, purpose), derived from the seed: the draws of a method depend on
 * the order of that method's calls only, not on how calls of other methods interleave with them,
 * so a run repeats exactly when each method sees its calls in the same order.
 */
function openStream(seed: number, node: string, method: string, purpose: 'latency' | 'fault'): Stream {
  const digest = createHash('sha256').update(`${seed}\0${node}\0${method}\0${purpose}`).digest();
  const rng = xoroshiro128plus(digest.readInt32BE(0));
  return { next: () => uniformFloat64(rng) };
}

/** A standard normal variate from two uniforms (Box–Muller). */
function standardNormal(stream: Stream): number {
  const u1 = 1 - stream.next(); // (0, 1]: log(0) is -Infinity
  const u2 = stream.next();
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

function draw(d: LogNormal, stream: Stream): number {
  return logNormalAt(d, standardNormal(stream));
}

/** What one call is to go through, drawn when it enters. */
export interface CallPlan {
  /** Milliseconds to wait before the handler runs (0: none). */
  readonly delayMs: number;
  /** The fault the call fails with after the delay, if it is one that fails. */
  readonly fault: FaultSpec | undefined;
}

const NO_PLAN: CallPlan = Object.freeze({ delayMs: 0, fault: undefined });

/**
 * The latency profile and faults of one runtime, with their random streams. A value: a runtime
 * owns one, and two runtimes share nothing but the profile tables.
 */
export class CallConditions {
  readonly seed: number;
  readonly profile: LatencyProfile;
  private readonly faults: ReadonlyMap<string, FaultSpec>;
  private readonly streams = new Map<string, Stream>();
  private readonly closing = new AbortController();
  private readonly metrics: CallConditionCounters | undefined;

  /**
   * @param node the simulated node's name: several nodes of one process with one seed draw
   *   different sequences, each repeatable.
   * @param imageBytes the bytes a PullImage of `image` would download (0 when it is present;
   *   undefined when the registry does not know it).
   */
  constructor(
    options: CallConditionsOptions,
    private readonly node: string,
    private readonly imageBytes: (image: string) => number | undefined = () => undefined,
  ) {
    this.seed = options.seed ?? randomInt(0, MAX_SEED);
    this.profile = LATENCY_PROFILES[options.latencyProfile ?? 'none'];
    this.faults = new Map((options.faults ?? []).map((f) => [f.method, f]));
    this.metrics = options.metrics;
    // Every delay in progress listens for the close: as many as there are calls in flight.
    setMaxListeners(0, this.closing.signal);
  }

  /** Whether anything is asked at all (no profile, no fault: calls are not touched). */
  get active(): boolean {
    return this.faults.size > 0 || Object.keys(this.profile.rpcs).length > 0 || this.profile.pull !== undefined;
  }

  /** The faults by method, for the start-up log line. */
  faultSpecs(): FaultSpec[] {
    return [...this.faults.values()];
  }

  private stream(method: string, purpose: 'latency' | 'fault'): Stream {
    const key = `${purpose}\0${method}`;
    let stream = this.streams.get(key);
    if (stream === undefined) {
      stream = openStream(this.seed, this.node, method, purpose);
      this.streams.set(key, stream);
    }
    return stream;
  }

  /**
   * Draws what the next call of `method` goes through. The latency draw comes first and the fault
   * draw second, each from its own stream, and both are made for every call that has them (rate 0
   * and 1 included), so the sequence of one does not depend on the other's settings.
   */
  plan(method: string, request: unknown): CallPlan {
    let delayMs = 0;
    const distribution = this.profile.rpcs[method];
    if (distribution !== undefined) {
      const stream = this.stream(method, 'latency');
      delayMs = draw(distribution, stream);
      // A Hyper-V isolated pod boots its utility VM first (drawn after the sandbox's own delay, so
      // the draws of process-isolated pods are those they always were).
      const hyperv = this.profile.hypervSandbox;
      if (method === 'RunPodSandbox' && hyperv !== undefined && (request as { runtime_handler?: unknown } | null)?.runtime_handler === HYPERV_HANDLER) {
        delayMs += draw(hyperv, stream);
      }
    } else if (method === 'PullImage' && this.profile.pull !== undefined) {
      const stream = this.stream(method, 'latency');
      const image = (request as { image?: { image?: unknown } | null } | null)?.image?.image;
      const bytes = typeof image === 'string' ? this.imageBytes(image) ?? 0 : 0;
      delayMs = draw(this.profile.pull.fixedMs, stream) + draw(this.profile.pull.perMiBMs, stream) * (bytes / 1_048_576);
    }
    const spec = this.faults.get(method);
    let fault: FaultSpec | undefined;
    if (spec !== undefined) {
      const u = this.stream(method, 'fault').next();
      if (u < spec.rate) fault = spec;
    }
    return delayMs === 0 && fault === undefined ? NO_PLAN : { delayMs, fault };
  }

  /**
   * Runs the plan of one call of `method`: waits its delay without holding anything up (other
   * calls go on meanwhile), then fails it when a fault was drawn. A delay that outlasts the
   * call's deadline (milliseconds since the epoch, from the gRPC edge) ends at the deadline with
   * DeadlineExceeded, the handler never run; a client's own timer fires at the same moment.
   * Resolves at once when the call is not touched.
   */
  async apply(method: string, request: unknown, deadlineMs: number | undefined): Promise<void> {
    const { delayMs, fault } = this.plan(method, request);
    if (delayMs > 0) {
      const left = deadlineMs === undefined ? Infinity : deadlineMs - Date.now();
      const waited = Math.max(0, Math.min(delayMs, left));
      this.metrics?.onLatencyInjected(method, waited / 1000);
      if (waited > 0) {
        try {
          await sleep(waited, undefined, { signal: this.closing.signal });
        } catch {
          throw new RuntimeError('Unavailable', `runtime is closed: ${method} refused`);
        }
      }
      if (delayMs >= left) {
        throw new RuntimeError(
          'DeadlineExceeded',
          `context deadline exceeded: ${method} takes ${formatMs(delayMs)} on this node (--latency-profile ${this.profile.name}), longer than the call's deadline allowed (${formatMs(Math.max(0, left))})`,
        );
      }
    }
    if (fault !== undefined) {
      this.metrics?.onFaultInjected(method, fault.code);
      throw new RuntimeError(fault.code, fault.message ?? defaultFaultMessage(fault));
    }
  }

  /** Ends every delay in progress (its call fails Unavailable): the runtime is closing. */
  close(): void {
    this.closing.abort();
  }
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)}s` : `${Math.round(ms)}ms`;
}
