import { InvalidArgumentError, Option, type Command } from 'commander';
import type { CallConditionsOptions } from '../runtime/call-conditions/call-conditions.js';
import { FaultSpecError, parseFaultSpec, type FaultSpec } from '../runtime/call-conditions/fault-spec.js';
import { LATENCY_PROFILE_NAMES, type LatencyProfileName } from '../runtime/call-conditions/latency-profiles.js';

/** The flags as commander collects them. */
export interface CallConditionFlags {
  latencyProfile?: LatencyProfileName;
  seed?: number;
  injectFault?: FaultSpec[];
}

/** `--seed`: a whole number from 0 to 4294967295 (our own text). */
export function parseSeed(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n > 0xffff_ffff) throw new InvalidArgumentError(`--seed must be a whole number from 0 to 4294967295, not "${value}"`);
  return n;
}

/** One `--inject-fault` added to the ones before it; a bad spec is a usage error (exit 2) that says why. */
export function collectFault(value: string, previous: FaultSpec[] | undefined): FaultSpec[] {
  try {
    return [...(previous ?? []), parseFaultSpec(value)];
  } catch (err) {
    if (err instanceof FaultSpecError) throw new InvalidArgumentError(err.reason);
    throw err;
  }
}

/**
 * `--latency-profile`, `--seed` and `--inject-fault` (docs/latency-and-faults.md), for the
 * commands that open a runtime: `runtime`, `node`, `demo`.
 */
export function addCallConditionFlags(command: Command): Command {
  return command
    .addOption(
      new Option('--latency-profile <profile>', 'per-RPC delays drawn from published timings of a real node (default: none, or the node file\'s timing.latencyProfile)')
        .choices([...LATENCY_PROFILE_NAMES]),
    )
    .addOption(new Option('--seed <n>', 'seed of the latency and fault draws: the same seed gives the same sequence (default: a random one, logged)').argParser(parseSeed))
    .addOption(
      new Option('--inject-fault <METHOD=CODE[:RATE][:MESSAGE]>', 'fail calls of a CRI method with a gRPC code, e.g. StartContainer=Unavailable:0.3 (repeatable; RATE default 1)')
        .argParser(collectFault),
    );
}

/** The runtime's options from the flags; undefined fields are left to the node file. */
export function callConditionOptions(flags: CallConditionFlags): CallConditionsOptions {
  return {
    ...(flags.latencyProfile === undefined ? {} : { latencyProfile: flags.latencyProfile }),
    ...(flags.seed === undefined ? {} : { seed: flags.seed }),
    ...(flags.injectFault === undefined ? {} : { faults: flags.injectFault }),
  };
}
