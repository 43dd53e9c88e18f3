import type { ImageServiceRpcs, RuntimeServiceRpcs } from '../generated/rpcs.js';
import type { RuntimeContext } from './runtime-context.js';

/**
 * The CRI contract as the runtime sees it, derived from the proto (src/generated/rpcs.ts, written
 * by scripts/gen-proto-types.mjs) and from nothing else. A runtime serves an RPC with a handler,
 * a function of its context and the decoded request; each handler file exports the RPCs it serves
 * as a small `satisfies RpcHandlers` table, so adding an RPC touches that file only.
 */
export type CriRpcs = RuntimeServiceRpcs & ImageServiceRpcs;
export type RpcName = keyof CriRpcs;
/** The RPCs that answer with one response: the ones a handler can serve. */
export type UnaryRpc = { [M in RpcName]: CriRpcs[M]['stream'] extends false ? M : never }[RpcName];
export type RpcRequest<M extends RpcName> = CriRpcs[M]['request'];
export type RpcResponse<M extends RpcName> = CriRpcs[M]['response'];

/** How the runtime serves the unary RPC `M`. Failures are RuntimeErrors (errors.ts). */
export type RpcHandler<M extends UnaryRpc> = (ctx: RuntimeContext, request: RpcRequest<M>) => RpcResponse<M> | Promise<RpcResponse<M>>;

/** Handlers by RPC name, as the proto spells it ('RunPodSandbox'). */
export type RpcHandlers = { readonly [M in UnaryRpc]?: RpcHandler<M> };

/**
 * The methods of a runtime that serves `T`: one per RPC, named after it in lowerCamelCase
 * ('runPodSandbox'), taking the decoded request and resolving with the response. `deadlineMs`
 * is when the caller stops waiting (milliseconds since the epoch; the gRPC edge passes the
 * call's deadline), for the work a runtime does before its handler (simulated latency).
 */
export type RpcMethods<T extends RpcHandlers> = {
  [M in keyof T & UnaryRpc as Uncapitalize<M>]: (request: RpcRequest<M>, deadlineMs?: number) => Promise<RpcResponse<M>>;
};

/** A handler of some RPC, as the delegation below stores it. */
export type AnyRpcHandler = (ctx: RuntimeContext, request: never) => unknown;

/** What every RPC method of a runtime goes through. */
export abstract class RpcServer {
  /** Serves one call of `rpc` with its handler: the part common to every RPC (state, load, errors). */
  protected abstract serve(rpc: string, handler: AnyRpcHandler, request: unknown, deadlineMs?: number): Promise<unknown>;
}

/** 'RunPodSandbox' → 'runPodSandbox', as `Uncapitalize` does it for the types. */
export function rpcMethodName(rpc: string): string {
  return rpc.charAt(0).toLowerCase() + rpc.slice(1);
}

/**
 * The base class of a runtime serving `handlers`: its prototype has one method per RPC, made once
 * when the class is defined, each passing the RPC's name, its handler and the request to `serve`.
 * No code is written per RPC, and a call allocates nothing more than a hand-written method would.
 */
export function rpcServerClass<T extends RpcHandlers>(handlers: T): abstract new () => RpcServer & RpcMethods<T> {
  abstract class Delegating extends RpcServer {
    static {
      for (const [rpc, handler] of Object.entries(handlers) as [string, AnyRpcHandler][]) {
        Object.defineProperty(this.prototype, rpcMethodName(rpc), {
          value: function delegate(this: Delegating, request: unknown, deadlineMs?: number): Promise<unknown> {
            return this.serve(rpc, handler, request, deadlineMs);
          },
          writable: false,
          enumerable: false,
          configurable: false,
        });
      }
    }
  }
  return Delegating as unknown as abstract new () => RpcServer & RpcMethods<T>;
}
