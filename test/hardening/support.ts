// Shared by the hardening suites (property, fuzz, load): a runtime process with a CRI client,
// calls of any RPC by name with any request, the check that an error is a clear gRPC status, and
// what the runtime left in its credential spec directory.
import { status, type ServiceError } from '@grpc/grpc-js';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { CREDENTIAL_SPEC_DIRECTORY } from '../../src/runtime/windows/credential-spec-handoff.js';
import { startRuntime, type RuntimeHandle, type StartRuntimeOptions } from '../support/runtime.js';

export const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
export const IIS = 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022';

/** fast-check run counts: modest in `npm test`, `FC_NUM_RUNS=500 npx mocha …` for more. */
export function numRuns(defaultRuns: number): number {
  const fromEnv = Number(process.env.FC_NUM_RUNS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : defaultRuns;
}

/**
 * fast-check parameters shared by the suites: the run count, a replay seed and path
 * (FC_SEED, FC_PATH, both printed by fast-check when a property fails), and no shrinking unless
 * FC_SHRINK=1 (shrinking replays against a live runtime and can take minutes).
 */
export function fcParameters(defaultRuns: number): { numRuns: number; seed?: number; path?: string; endOnFailure: boolean } {
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
  return {
    numRuns: numRuns(defaultRuns),
    ...(seed !== undefined && Number.isInteger(seed) ? { seed } : {}),
    ...(process.env.FC_PATH ? { path: process.env.FC_PATH } : {}),
    endOnFailure: process.env.FC_SHRINK !== '1',
  };
}

export type Service = 'runtime' | 'image';

/** A runtime process and a client on its socket. */
export interface HardeningRuntime {
  readonly rt: RuntimeHandle;
  readonly cri: CriClient;
  /** Calls any unary RPC by name (requests here are often wrong on purpose). */
  call(service: Service, method: string, request: object, timeoutMs?: number): Promise<any>;
  /** The call's error, or undefined when it succeeded (the response is then dropped). */
  outcome(service: Service, method: string, request: object, timeoutMs?: number): Promise<ServiceError | undefined>;
  stop(): Promise<void>;
}

export async function startHardeningRuntime(name: string, opts: StartRuntimeOptions = {}): Promise<HardeningRuntime> {
  const rt = await startRuntime({ name, ...opts });
  const cri = createCriClient(rt.endpoint);
  const call = (service: Service, method: string, request: object, timeoutMs = 10_000): Promise<any> => {
    const client = (service === 'runtime' ? cri.runtime : cri.image) as any;
    return unaryCall(client, method as never, request as never, { timeoutMs });
  };
  return {
    rt,
    cri,
    call,
    async outcome(service, method, request, timeoutMs) {
      try {
        await call(service, method, request, timeoutMs);
        return undefined;
      } catch (err) {
        return err as ServiceError;
      }
    },
    async stop() {
      cri.close();
      await rt.stop();
    },
  };
}

export const codeName = (code: number): string => status[code] ?? `Code(${code})`;

/** Texts that mean a bug reached the wire (a JavaScript exception rather than a runtime error). */
const BUG_TEXT = /TypeError|RangeError|ReferenceError|SyntaxError: Unexpected|is not a function|Cannot read propert|undefined \(reading|Maximum call stack|internal error:|\n\s+at /;

/**
 * Why an error is not a clear status, or undefined when it is one: a gRPC ServiceError with a
 * known code, a non-empty message, no stack or JavaScript exception text in it, and no INTERNAL
 * (the runtime's edge maps every unexpected exception to INTERNAL "internal error: …").
 */
export function unclearStatus(err: unknown): string | undefined {
  const e = err as Partial<ServiceError> | undefined;
  if (e === undefined || typeof e.code !== 'number') return `not a gRPC status: ${String(err)}`;
  if (status[e.code] === undefined) return `unknown status code ${e.code}`;
  if (typeof e.details !== 'string' || e.details.trim() === '') return `${codeName(e.code)} without a message`;
  if (BUG_TEXT.test(e.details)) return `${codeName(e.code)} carries an exception: ${e.details.slice(0, 300)}`;
  if (e.code === status.INTERNAL) return `INTERNAL: ${e.details.slice(0, 300)}`;
  return undefined;
}

/** Lines of the runtime's output that show an exception escaped a handler. */
export function crashLines(output: string): string[] {
  return output.split('\n').filter((line) => /TypeError|RangeError|ReferenceError|uncaught|unhandled|Maximum call stack/i.test(line));
}

/** The staged credential spec files in the runtime's state directory. */
export async function credentialSpecFiles(stateDir: string): Promise<string[]> {
  try {
    return (await readdir(join(stateDir, CREDENTIAL_SPEC_DIRECTORY))).filter((n) => n.startsWith('k8s-cred-spec-'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Stops and removes every pod the runtime has (and with them every container). */
export async function removeEverything(h: HardeningRuntime): Promise<void> {
  // Pods first: the container list may be too big to answer (over 16 MiB) while the pod list is not.
  const { items } = await h.call('runtime', 'ListPodSandbox', {});
  for (const pod of items as Array<{ id: string }>) {
    await h.call('runtime', 'StopPodSandbox', { pod_sandbox_id: pod.id });
    await h.call('runtime', 'RemovePodSandbox', { pod_sandbox_id: pod.id });
  }
  const { containers } = await h.call('runtime', 'ListContainers', {});
  for (const c of containers as Array<{ id: string }>) await h.call('runtime', 'RemoveContainer', { container_id: c.id });
}
