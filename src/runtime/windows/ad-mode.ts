import { RuntimeError } from '../errors.js';
import type { IdentityMode } from './container-identity.js';

/**
 * `--ad-mode`: what the node does when a container's gMSA cannot be used (docs/failure-modes.md).
 * - `windows-server` (default): what a Windows Server 2019/2022 host does — the container starts
 *   and identity commands inside fail with the real codes; only a CCG plugin failure and an
 *   unknown run-as user fail the start. Microsoft's gMSA troubleshooting guide and the
 *   Kubernetes GMSA task page both diagnose such a pod from inside (`nltest /sc_verify`,
 *   `nltest /query`, `klist get krbtgt` through `kubectl exec`), which needs it running.
 * - `gmsa-kep`: the GMSA KEP's design — the runtime checks the credential spec against the node's
 *   AD access and fails StartContainer (texts of cri-winsim's own, FailedPrecondition).
 * The old names stay as deprecated aliases: `realistic` = windows-server, `strict` = gmsa-kep.
 */
export type AdModeName = 'windows-server' | 'gmsa-kep';

export const AD_MODES: readonly AdModeName[] = ['windows-server', 'gmsa-kep'];

/** Deprecated names and what they mean now. */
export const DEPRECATED_AD_MODES: Readonly<Record<string, AdModeName>> = Object.freeze({ realistic: 'windows-server', strict: 'gmsa-kep' });

/** Every value `--ad-mode` accepts (the CLI's choices). */
export const AD_MODE_CHOICES: readonly string[] = [...AD_MODES, ...Object.keys(DEPRECATED_AD_MODES)];

export const DEFAULT_AD_MODE: AdModeName = 'windows-server';

/** The identity evaluation each mode runs (container-identity.ts keeps its historical names). */
const IDENTITY_MODES: Readonly<Record<AdModeName, IdentityMode>> = Object.freeze({ 'windows-server': 'realistic', 'gmsa-kep': 'strict' });

export interface ParsedAdMode {
  name: AdModeName;
  identityMode: IdentityMode;
  /** Set when a deprecated alias was given: the warning to print. */
  deprecation?: string;
}

/** Checks an `--ad-mode` value (a current name or a deprecated alias). */
export function parseAdMode(value: string): ParsedAdMode {
  const alias = Object.hasOwn(DEPRECATED_AD_MODES, value) ? DEPRECATED_AD_MODES[value] : undefined;
  const name = alias ?? ((AD_MODES as readonly string[]).includes(value) ? (value as AdModeName) : undefined);
  if (name === undefined) {
    throw new RuntimeError('InvalidArgument', `--ad-mode: must be one of ${AD_MODES.join(', ')}, not ${JSON.stringify(value)}`);
  }
  return {
    name,
    identityMode: IDENTITY_MODES[name],
    ...(alias === undefined ? {} : { deprecation: `--ad-mode ${value} is deprecated: use --ad-mode ${alias}` }),
  };
}
