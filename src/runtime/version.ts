import type { VersionRequest__Output } from '../generated/runtime/v1/VersionRequest.js';
import type { VersionResponse } from '../generated/runtime/v1/VersionResponse.js';
import type { RuntimeContext } from './runtime-context.js';
import type { RpcHandlers } from './rpc.js';

/** The CRI API version this runtime speaks (VersionResponse.runtime_api_version). */
export const CRI_API_VERSION = 'v1';

/** Version: crictl requires all four fields to be non-empty. */
export function version(ctx: RuntimeContext, _req: VersionRequest__Output): VersionResponse {
  return {
    version: '0.1.0',
    runtime_name: ctx.settings.runtimeName,
    runtime_version: ctx.settings.runtimeVersion,
    runtime_api_version: CRI_API_VERSION,
  };
}

/** The RPCs this file serves (see rpc.ts). */
export const versionRpcs = { Version: version } satisfies RpcHandlers;
