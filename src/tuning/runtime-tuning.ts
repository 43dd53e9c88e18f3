import type { KeptCodec } from './config-codec.js';
import { JsonValuesCodec, plainCodec } from './config-codec.js';
import { FileCallPolicy, MEASURED_FILE_CALLS, PLAIN_FILE_CALLS, type FileCallOptions, type FileCalls } from './file-calls.js';
import { Interner, UNSHARED_STRINGS, type StringTable } from './intern.js';

/**
 * Which process tricks a runtime is opened with. Each one sits behind a plain interface the
 * runtime's code uses as it would the simple thing (FileCalls, StringTable, KeptCodec); each is
 * kept only with a measured figure in bench/README.md ("Tuning tricks").
 */
export interface RuntimeTuning {
  readonly fileCalls: FileCallOptions;
  /** Repeated short strings of the stored records kept once (Interner). */
  readonly sharedStrings: boolean;
  /** A container's CRI config kept as its JSON values (JsonValuesCodec) instead of the object. */
  readonly encodedContainerConfigs: boolean;
}

/** What a runtime uses unless told otherwise: the tricks whose figures pay. */
export const MEASURED_TUNING: RuntimeTuning = { fileCalls: MEASURED_FILE_CALLS, sharedStrings: true, encodedContainerConfigs: true };

/** None of the tricks: for comparing, and for a test that the tricks change no behaviour. */
export const PLAIN_TUNING: RuntimeTuning = { fileCalls: PLAIN_FILE_CALLS, sharedStrings: false, encodedContainerConfigs: false };

/** The parts of one runtime (a runtime is a value: each gets its own). */
export interface RuntimeTuningParts<C extends object, O extends keyof C> {
  readonly fileCalls: FileCalls;
  readonly strings: StringTable;
  readonly containerConfigs: KeptCodec<C, O>;
}

/** Makes the tuning parts of one runtime; `recordFields` are the config fields its records keep. */
export function tuningParts<C extends object, O extends keyof C>(tuning: RuntimeTuning, recordFields: readonly O[]): RuntimeTuningParts<C, O> {
  return {
    fileCalls: new FileCallPolicy(tuning.fileCalls),
    strings: tuning.sharedStrings ? new Interner() : UNSHARED_STRINGS,
    containerConfigs: tuning.encodedContainerConfigs ? new JsonValuesCodec<C, O>(recordFields) : plainCodec<C, O>(),
  };
}
