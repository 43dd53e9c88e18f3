import type { RuntimeErrorCode } from '../errors.js';

/**
 * `--inject-fault METHOD=CODE[:RATE][:MESSAGE]`: fail calls of one CRI method with a gRPC code.
 * METHOD is the RPC's name as in the proto (`StartContainer`); CODE a gRPC status by Go's name
 * (`Unavailable`), grpc's constant name (`UNAVAILABLE`), either in any case, or its number (14);
 * RATE the share of calls that fail, from 0 to 1 (default 1); MESSAGE the status message
 * (default: a sentence saying the fault was injected). The texts of this file are our own.
 */
export interface FaultSpec {
  readonly method: FaultMethod;
  readonly code: RuntimeErrorCode;
  readonly rate: number;
  /** Undefined: the default message, which names the fault. */
  readonly message?: string | undefined;
}

/**
 * The unary RPCs the runtime serves (src/runtime/cri-runtime.ts RUNTIME_RPCS; a test pins the
 * two lists, and the node file schema's enum, equal). Listed here so the command line can check a
 * fault without loading the runtime.
 */
export const FAULT_METHODS = [
  'Version', 'Status', 'RuntimeConfig', 'UpdateRuntimeConfig',
  'RunPodSandbox', 'StopPodSandbox', 'RemovePodSandbox', 'PodSandboxStatus', 'ListPodSandbox', 'UpdatePodSandboxResources',
  'CreateContainer', 'StartContainer', 'StopContainer', 'RemoveContainer', 'ContainerStatus', 'ListContainers',
  'UpdateContainerResources', 'ReopenContainerLog', 'ExecSync', 'Exec', 'Attach', 'PortForward',
  'ContainerStats', 'ListContainerStats', 'PodSandboxStats', 'ListPodSandboxStats', 'ListMetricDescriptors', 'ListPodSandboxMetrics',
  'ListImages', 'ImageStatus', 'PullImage', 'RemoveImage', 'ImageFsInfo',
] as const;
export type FaultMethod = (typeof FAULT_METHODS)[number];

/** The gRPC codes by number, as Go's codes.Code.String() spells them (0, OK, is not a fault). */
const CODES_BY_NUMBER: readonly (RuntimeErrorCode | undefined)[] = [
  undefined, 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists',
  'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange',
  'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated',
];

/** A fault spec that cannot be used: `reason` says why in a phrase a flag error can end with. */
export class FaultSpecError extends Error {
  constructor(
    readonly field: 'method' | 'code' | 'rate' | 'message' | 'spec',
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'FaultSpecError';
  }
}

/** `unavailable`, `UNAVAILABLE`, `Unavailable`, `deadline_exceeded`, `Cancelled`, `14` → the code. */
export function parseFaultCode(text: string): RuntimeErrorCode {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) {
    const n = Number(trimmed);
    if (n === 0) throw new FaultSpecError('code', 'code 0 (OK) is not a failure; give a code from 1 to 16');
    const code = CODES_BY_NUMBER[n];
    if (code === undefined) throw new FaultSpecError('code', `code ${trimmed} is not a gRPC status code (1 to 16)`);
    return code;
  }
  const key = trimmed.replace(/_/g, '').toLowerCase();
  // grpc's constant is CANCELLED, Go's name Canceled.
  const wanted = key === 'cancelled' ? 'canceled' : key;
  if (wanted === 'ok') throw new FaultSpecError('code', 'OK is not a failure; give a code from 1 to 16');
  const code = CODES_BY_NUMBER.find((c) => c !== undefined && c.toLowerCase() === wanted);
  if (code === undefined) {
    throw new FaultSpecError('code', `unknown gRPC code ${JSON.stringify(trimmed)}; valid codes: ${CODES_BY_NUMBER.filter((c) => c !== undefined).join(', ')} (any case, or 1 to 16)`);
  }
  return code;
}

export function parseFaultMethod(text: string): FaultMethod {
  const method = FAULT_METHODS.find((m) => m === text.trim());
  if (method === undefined) {
    const near = FAULT_METHODS.find((m) => m.toLowerCase() === text.trim().toLowerCase());
    const hint = near === undefined ? '' : ` (did you mean ${near}?)`;
    throw new FaultSpecError('method', `unknown CRI method ${JSON.stringify(text)}${hint}; valid methods: ${FAULT_METHODS.join(', ')}`);
  }
  return method;
}

export function checkFaultRate(rate: number, shown: string = String(rate)): number {
  if (!Number.isFinite(rate) || rate < 0 || rate > 1) throw new FaultSpecError('rate', `rate ${shown} is not a number from 0 to 1`);
  return rate;
}

/** Parses one `METHOD=CODE[:RATE][:MESSAGE]`; the message is everything after the second colon. */
export function parseFaultSpec(text: string): FaultSpec {
  const eq = text.indexOf('=');
  if (eq < 0) throw new FaultSpecError('spec', 'must be METHOD=CODE[:RATE][:MESSAGE], e.g. StartContainer=Unavailable:0.3');
  const method = parseFaultMethod(text.slice(0, eq));
  const rest = text.slice(eq + 1);
  const [codeText = '', rateText, ...messageParts] = rest.split(':');
  if (codeText.trim() === '') throw new FaultSpecError('code', 'the gRPC code after "=" is missing, e.g. StartContainer=Unavailable');
  const code = parseFaultCode(codeText);
  let rate = 1;
  if (rateText !== undefined && rateText.trim() !== '') {
    if (!/^\s*[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(rateText)) throw new FaultSpecError('rate', `rate ${JSON.stringify(rateText)} is not a number from 0 to 1`);
    rate = checkFaultRate(Number(rateText), rateText.trim());
  }
  const message = messageParts.length > 0 ? messageParts.join(':') : undefined;
  if (message !== undefined && message.trim() === '') throw new FaultSpecError('message', 'the message after the rate is empty; leave it out for the default');
  return { method, code, rate, ...(message === undefined ? {} : { message }) };
}

/** The message of an injected fault when the spec gives none: it says what it is. */
export function defaultFaultMessage(spec: Pick<FaultSpec, 'method' | 'code' | 'rate'>): string {
  return `fault injected by cri-winsim (--inject-fault ${spec.method}=${spec.code}${spec.rate === 1 ? '' : `:${spec.rate}`}): ${spec.method} failed before doing anything`;
}
