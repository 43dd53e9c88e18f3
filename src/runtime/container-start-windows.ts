import type { CleanupStack } from './cleanup.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord, IdentitySource } from './store/container-store.js';
import { evaluateContainerIdentity, identityStartError, type ContainerIdentity, type IdentityDecision } from './windows/container-identity.js';
import { memoByObject } from './memo.js';
import { BoundedCache } from './store/bounded-cache.js';
import { parseCredentialSpec, type CredentialSpecDocument } from './windows/credential-spec.js';
import { applyWindowsSpecOpts, withWindowsCredentialSpec } from './windows/oci-windows.js';
import { credentialSpecFromSecurityOptions } from './windows/security-options.js';

/**
 * StartContainer, the Windows part: what HCS does at CreateComputeSystem/Start in the mock
 * backend. It reads the credential spec back through the container's security options (moby's
 * rules), validates the document, puts it in the OCI spec as `windows.credentialSpec`, and decides
 * the container's identity against the node's simulated AD (strict: AD failures fail the start;
 * realistic: they show in the identity commands). Throws the start error; the caller records it
 * on the container (EXITED, StartError). The credential spec's removal is declared on `cleanup`.
 */
export async function prepareWindowsStart(ctx: RuntimeContext, container: ContainerRecord, cleanup: CleanupStack): Promise<void> {
  const { windows } = ctx;
  const id = container.id;
  // The KEP: the credential spec is deleted once StartContainer is done, started or not. Once HCS
  // has read it, it is removed while the log file opens; `cleanup` waits for that.
  let released: Promise<void> | undefined;
  cleanup.always('remove the credential spec', () => released ?? releaseCredentialSpecAfterStart(ctx, container));
  windows.checkFault('credential-spec-read', id);
  const credentialSpec = await credentialSpecFromSecurityOptions(windows.backendSecurityOptions(container.securityOptions, id), {
    containerId: id,
    credentialSpecDirectory: windows.handoff.directory,
    registry: windows.handoff.registry,
  });
  windows.checkFault('credential-spec-validate', id);
  const document = credentialSpec === undefined ? undefined : parseCredentialSpec(credentialSpec);
  // The spec shows the document HCS accepted as windows.credentialSpec (derived from the record).
  container.credentialSpec = credentialSpec;
  container.specAmended((spec) => applyWindowsSpecOpts(spec, withWindowsCredentialSpec(document)));

  windows.checkFault('identity', id);
  const decision = decideIdentity(windows, container, document);
  const startError = identityStartError(decision);
  if (startError !== undefined) throw startError;

  const source = identitySourceOf(windows);
  source.remember(container, decision.identity);
  container.startedWithIdentity(source);
  container.user = decision.identity.userName;
  windows.checkFault('process-start', id);
  released = releaseCredentialSpecAfterStart(ctx, container);
}

/** The mock HCS's decision for a container: its identity against the node's simulated AD. */
function decideIdentity(windows: RuntimeContext['windows'], container: ContainerRecord, document: CredentialSpecDocument | undefined): IdentityDecision {
  return evaluateContainerIdentity(
    windows.node,
    document,
    container.config.windows?.security_context?.run_as_username,
    container.imageConfig.user,
    container.ociSpec.hostname,
    windows.mode,
    { hostProcess: container.config.windows?.security_context?.host_process ?? false, containerId: container.id },
  );
}

/** How many started containers keep their identity object (the latest; a removed one at once). */
const IDENTITY_CACHE_SIZE = 256;

/**
 * The identities of a runtime's started containers: the one decided at start is kept for the latest
 * containers; for others the same decision is made again (the node and its AD do not change
 * while the runtime runs, and the decision depends on nothing else).
 */
const identitySourceOf = memoByObject((windows: RuntimeContext['windows']) => {
  const cache = new BoundedCache<ContainerRecord, ContainerIdentity>(IDENTITY_CACHE_SIZE);
  const decide = (record: ContainerRecord): ContainerIdentity =>
    decideIdentity(windows, record, record.credentialSpec === undefined ? undefined : parseCredentialSpec(record.credentialSpec)).identity;
  return {
    identityOf: (record: ContainerRecord) => cache.get(record, decide),
    forget: (record: ContainerRecord) => cache.delete(record),
    remember: (record: ContainerRecord, identity: ContainerIdentity) => cache.set(record, identity),
  } satisfies IdentitySource & { remember(record: ContainerRecord, identity: ContainerIdentity): void };
});

/** The identity a started Windows container runs with, if it has one. */
export function windowsIdentity(container: ContainerRecord): ContainerIdentity | undefined {
  return container.windowsIdentity;
}

/**
 * StartContainer returned (started or not): the KEP's temporary file is deleted now; a registry
 * value stays until RemoveContainer (cri-dockerd). A failed deletion is logged and retried by
 * RemoveContainer (and the next start-up sweep); it does not undo a started container.
 */
async function releaseCredentialSpecAfterStart(ctx: RuntimeContext, container: ContainerRecord): Promise<void> {
  if (container.securityOptions.length === 0) return;
  try {
    await ctx.windows.handoff.releaseAfterStart(container.securityOptions);
  } catch (err) {
    ctx.logger.warn({ err, containerId: container.id }, 'failed to remove the credential spec after StartContainer');
  }
}
