import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService.js';
import type { CriBackend } from './backend.js';
import { unary, type CallContext } from './call.js';

/** Version, Status, RuntimeConfig, UpdateRuntimeConfig: nothing to validate, the runtime answers. */
export function runtimeInfoHandlers(
  runtime: CriBackend,
  ctx: CallContext,
): Pick<RuntimeServiceHandlers, 'Version' | 'Status' | 'RuntimeConfig' | 'UpdateRuntimeConfig'> {
  return {
    Version: unary(ctx, 'Version', (req) => runtime.version(req)),
    Status: unary(ctx, 'Status', (req) => runtime.status(req)),
    RuntimeConfig: unary(ctx, 'RuntimeConfig', (req) => runtime.runtimeConfig(req)),
    UpdateRuntimeConfig: unary(ctx, 'UpdateRuntimeConfig', (req) => runtime.updateRuntimeConfig(req)),
  };
}
