import type { ActiveDirectoryRpcs } from '../generated/rpcs.js';
import type { DomainState as DomainStateMessage } from '../generated/criwinsim/ad/v1/DomainState.js';
import { RuntimeError } from './errors.js';
import type { RuntimeContext } from './runtime-context.js';
import { formatPlan } from './windows/ad-scenario.js';
import { domainDocument } from './windows/live-domain.js';

/**
 * The ActiveDirectory service of proto/criwinsim/ad/v1 (cri-winsim's own, not the CRI): the
 * runtime's live domain read and changed over the runtime's socket. Handlers are functions of
 * (context, request), as the CRI handlers are; the one apply path is `ctx.windows.domain.apply`.
 */
export type AdRpcName = keyof ActiveDirectoryRpcs;
export type AdRpcRequest<M extends AdRpcName> = ActiveDirectoryRpcs[M]['request'];
export type AdRpcResponse<M extends AdRpcName> = ActiveDirectoryRpcs[M]['response'];
export type AdRpcHandler<M extends AdRpcName> = (ctx: RuntimeContext, request: AdRpcRequest<M>) => AdRpcResponse<M> | Promise<AdRpcResponse<M>>;
export type AdRpcHandlers = { readonly [M in AdRpcName]?: AdRpcHandler<M> };

/** The service as in-process callers and the gRPC edge see it: one method per RPC, lowerCamelCase. */
export type ActiveDirectoryApi = {
  [M in AdRpcName as Uncapitalize<M>]: (request: AdRpcRequest<M>, deadlineMs?: number) => Promise<AdRpcResponse<M>>;
};

/** The source named in messages when a client names none. */
const DEFAULT_SOURCE = 'ad apply';

/** The state message of the live domain now. */
export function domainStateMessage(ctx: RuntimeContext): DomainStateMessage {
  const state = ctx.windows.domain.current;
  return {
    generation: String(state.generation),
    document_json: JSON.stringify(domainDocument(state)),
    source: state.source,
    applied_at: new Date(state.appliedAtMs).toISOString(),
    scenario: scenarioText(ctx),
  };
}

/** `examples/ad/dc-outage.yaml: 2 of 3 events to come` for `ad get`; '' without a scenario. */
function scenarioText(ctx: RuntimeContext): string {
  const runner = ctx.windows.currentScenario;
  return runner === undefined ? '' : `${runner.source}: ${runner.remaining} of ${runner.plan.length} events to come`;
}

function getDomain(ctx: RuntimeContext): AdRpcResponse<'Get'> {
  return { state: domainStateMessage(ctx) };
}

function applyDomain(ctx: RuntimeContext, request: AdRpcRequest<'Apply'>): AdRpcResponse<'Apply'> {
  const source = request.source === '' ? DEFAULT_SOURCE : request.source;
  let desired: unknown;
  try {
    desired = JSON.parse(request.document_json);
  } catch (err) {
    throw new RuntimeError('InvalidArgument', `${source}: the document is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  ctx.windows.domain.apply(desired, source);
  return { state: domainStateMessage(ctx) };
}

function startScenario(ctx: RuntimeContext, request: AdRpcRequest<'StartScenario'>): AdRpcResponse<'StartScenario'> {
  const source = request.source === '' ? 'ad apply --scenario' : request.source;
  let data: unknown;
  try {
    data = JSON.parse(request.scenario_json);
  } catch (err) {
    throw new RuntimeError('InvalidArgument', `${source}: the scenario is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const runner = ctx.windows.startScenario(data, source, request.seed);
  return { plan: formatPlan(runner.plan) };
}

/** The RPCs of the ActiveDirectory service the runtime serves. */
export const ACTIVE_DIRECTORY_RPCS = { Get: getDomain, Apply: applyDomain, StartScenario: startScenario } satisfies AdRpcHandlers;
