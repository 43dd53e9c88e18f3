import { RuntimeError } from '../errors.js';
import type { CallConditionsOptions } from './call-conditions.js';
import { FaultSpecError, parseFaultCode, type FaultMethod, type FaultSpec } from './fault-spec.js';
import type { LatencyProfileName } from './latency-profiles.js';

/** The node file's `timing` section (schemas/node.schema.json checks its shape). */
export interface NodeFileTiming {
  latencyProfile?: LatencyProfileName;
  seed?: number;
  injectFaults?: { method: FaultMethod; code: string; rate?: number; message?: string }[];
}

/**
 * The faults of a node file's `timing` section, checked beyond what the schema can say (the
 * code's name); an error names the file and the field: `node.yaml: timing.injectFaults[0].code: …`.
 */
export function nodeFileFaults(timing: NodeFileTiming | undefined, source: string): FaultSpec[] {
  return (timing?.injectFaults ?? []).map((f, i) => {
    try {
      return { method: f.method, code: parseFaultCode(f.code), rate: f.rate ?? 1, ...(f.message === undefined ? {} : { message: f.message }) };
    } catch (err) {
      if (err instanceof FaultSpecError) throw new RuntimeError('InvalidArgument', `${source}: timing.injectFaults[${i}].code: ${err.reason}`);
      throw err;
    }
  });
}

/**
 * The command line over the node file: its profile and seed win; its faults are kept, and the
 * node file's only for the methods the command line does not name.
 */
export function withNodeFileTiming(commandLine: CallConditionsOptions, timing: NodeFileTiming | undefined, source: string): CallConditionsOptions {
  const fromFile = nodeFileFaults(timing, source);
  const given = commandLine.faults ?? [];
  const named = new Set(given.map((f) => f.method));
  const latencyProfile = commandLine.latencyProfile ?? timing?.latencyProfile;
  const seed = commandLine.seed ?? timing?.seed;
  return {
    ...commandLine,
    ...(latencyProfile === undefined ? {} : { latencyProfile }),
    ...(seed === undefined ? {} : { seed }),
    faults: [...given, ...fromFile.filter((f) => !named.has(f.method))],
  };
}
