import type { CleanupStack } from './cleanup.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord } from './store/container-store.js';
import { evaluateContainerIdentity, identityStartError, type ContainerIdentity, type IdentityDecision } from './windows/container-identity.js';
import type { CredentialSpecDocument } from './windows/credential-spec.js';
import { WINDOWS_IDENTITY_KEY } from './windows/identity-command-registration.js';
import type { LogonSession } from './windows/logon-session.js';
import { currentIdentity } from './windows/shared-gmsa-trust.js';
import { RuntimeError } from './errors.js';
import type { StartStep } from './windows/identity-journal.js';
import { IMAGE_MISMATCH_TEXT, isolationOfHandler, windowsImageRuns, type IsolationMode } from './images/windows-compat.js';

/**
 * StartContainer, the Windows part: what HCS does at CreateComputeSystem/Start in the mock
 * backend. It reads the credential spec back through the container's security options (moby's
 * rules), validates the document, puts it in the OCI spec as `windows.credentialSpec`, and decides
 * the container's identity against the node's simulated AD (strict: AD failures fail the start;
 * realistic: they show in the identity commands). Throws the start error; the caller records it
 * on the container (EXITED, StartError). The credential spec's removal is declared on `cleanup`.
 */
export async function prepareWindowsStart(ctx: RuntimeContext, container: ContainerRecord, cleanup: CleanupStack): Promise<void> {
  // The step under way, for the identity journal: `cri-winsim explain` names the hop that broke.
  const progress: { step: StartStep; failureReason?: string } = { step: 'image' };
  try {
    await prepareBackendStart(ctx, container, cleanup, progress);
  } catch (err) {
    // The texts and code of the runtime being simulated (flavors/).
    const failed = ctx.flavor.startFailed(err, container.id);
    ctx.windows.journal.recordStart(container.id, {
      state: 'failed',
      failedStep: progress.step,
      errorCode: failed instanceof RuntimeError ? failed.code : 'Unknown',
      error: failed.message,
      ...(progress.failureReason === undefined ? {} : { failureReason: progress.failureReason }),
    });
    throw failed;
  }
  ctx.windows.journal.recordStart(container.id, { state: 'started' });
}

async function prepareBackendStart(ctx: RuntimeContext, container: ContainerRecord, cleanup: CleanupStack, progress: { step: StartStep; failureReason?: string }): Promise<void> {
  const { windows } = ctx;
  const id = container.id;
  // The KEP: the credential spec is deleted once StartContainer is done, started or not; after
  // the start's state is durable (container-start.ts), so that a runtime killed in between
  // never reloads a CREATED container whose spec is gone.
  cleanup.always('remove the credential spec', () => releaseCredentialSpecAfterStart(ctx, container));
  checkImageBuild(ctx, container);
  progress.step = 'hand-off';
  windows.checkFault('credential-spec-read', id);
  const credentialSpec = await ctx.flavor.credentialSpecAtStart(container, ctx.containers.configOf(container));
  progress.step = 'hcs-document';
  windows.checkFault('credential-spec-validate', id);
  const document = credentialSpec === undefined ? undefined : windows.credentialSpecs.parse(credentialSpec);
  // The spec shows the document HCS accepted as windows.credentialSpec.
  ctx.containers.setCredentialSpec(container, document, (spec) => {
    for (const opt of ctx.flavor.startedSpecOpts(container)) opt(spec);
  });

  progress.step = 'logon';
  windows.checkFault('identity', id);
  const decision = decideIdentity(ctx, container, document);
  const startError = identityStartError(decision);
  if (startError !== undefined) {
    progress.failureReason = decision.startError!.reason;
    throw startError;
  }

  keepIdentity(ctx, container, decision.identity);
  container.windowsIdentityDecided = true;
  container.user = decision.identity.userName;
  progress.step = 'process';
  windows.checkFault('process-start', id);
}

/** The isolation a Windows container runs under: its sandbox's runtime handler's. */
export function containerIsolation(ctx: RuntimeContext, container: ContainerRecord): IsolationMode {
  return isolationOfHandler(ctx.sandboxes.get(container.sandboxId)?.runtimeHandler ?? '');
}

/**
 * HCS's CreateComputeSystem refuses an image whose build the host cannot run under the
 * container's isolation (windows-compat.ts): HCS_E_IMAGE_MISMATCH, as hcsshim reports it —
 * `hcs::CreateComputeSystem <id>: <text>` through containerd's shim (whose ttrpc error adds
 * `: unknown`), `hcsshim::CreateComputeSystem <id>: <text>` through Docker. The flavor wraps it
 * as its StartContainer failure.
 */
function checkImageBuild(ctx: RuntimeContext, container: ContainerRecord): void {
  const osVersion = container.imageConfig.osVersion;
  if (osVersion === undefined || container.imageConfig.os !== 'windows') return;
  if (windowsImageRuns(ctx.windows.node.osBuild, osVersion, containerIsolation(ctx, container))) return;
  const text = ctx.flavor.name === 'containerd'
    ? `hcs::CreateComputeSystem ${container.id}: ${IMAGE_MISMATCH_TEXT}: unknown`
    : `hcsshim::CreateComputeSystem ${container.id}: ${IMAGE_MISMATCH_TEXT}`;
  throw new RuntimeError('Unknown', text);
}

/** The mock HCS's decision for a container: its identity against the node's simulated AD as it is now. */
function decideIdentity(ctx: RuntimeContext, container: ContainerRecord, document: CredentialSpecDocument | undefined): IdentityDecision {
  const { windows } = ctx;
  const hostProcess = ctx.flavor.hostProcess(ctx.containers.configOf(container));
  const held = logonSession(ctx, container).heldPasswordVersion;
  return evaluateContainerIdentity(
    windows.node,
    document,
    ctx.containers.configOf(container).windows?.security_context?.run_as_username,
    container.imageConfig.user,
    ctx.containers.specOf(container).hostname,
    windows.mode,
    { hostProcess, containerId: container.id, accessChecks: windows.accessChecks, ...(held === undefined ? {} : { heldPasswordVersion: held }) },
  );
}

/** The container's logon session: the gMSA password version its host holds, its Kerberos tickets. */
export function logonSession(ctx: RuntimeContext, container: ContainerRecord): LogonSession {
  return ctx.windows.logonSession(container, () => Number(ctx.clock.nowNanos() / 1_000_000n));
}

/** Keeps a decision for the live domain's generation; a host that got the password holds its version. */
function keepIdentity(ctx: RuntimeContext, container: ContainerRecord, identity: ContainerIdentity): void {
  ctx.windows.identities.set(container, { generation: ctx.windows.domain.generation, identity });
  const access = identity.domainAccess;
  if (access.kind === 'ok' && access.passwordVersion !== undefined) logonSession(ctx, container).heldPasswordVersion = access.passwordVersion;
}

/**
 * The identity a started Windows container runs with, if it has one, as the live domain makes it
 * now: the decision kept for the domain's current generation (for the latest containers,
 * WindowsRuntime.identities), else made again — so a domain change is seen at the next identity
 * operation of every running container.
 */
export function windowsIdentity(ctx: RuntimeContext, container: ContainerRecord): ContainerIdentity | undefined {
  if (!container.windowsIdentityDecided) return undefined;
  const generation = ctx.windows.domain.generation;
  const kept = ctx.windows.identities.peek(container);
  if (kept !== undefined && kept.generation === generation) return kept.identity;
  const identity = decideIdentity(ctx, container, container.credentialSpec).identity;
  keepIdentity(ctx, container, identity);
  return identity;
}

/**
 * The identity as the container's processes see it now: before WS2019 a later container with the
 * same gMSA and hostname takes the secure channel (shared-gmsa-trust.ts).
 */
export function currentWindowsIdentity(ctx: RuntimeContext, container: ContainerRecord): ContainerIdentity | undefined {
  const identity = windowsIdentity(ctx, container);
  return identity === undefined ? undefined : currentIdentity(ctx, container, identity, (c) => windowsIdentity(ctx, c));
}

/** Platform state as `crictl inspect` shows it (info.platform): the Windows identity, once started. */
export function containerPlatform(ctx: RuntimeContext, container: ContainerRecord): Record<string, unknown> {
  const identity = currentWindowsIdentity(ctx, container);
  return identity === undefined ? {} : { [WINDOWS_IDENTITY_KEY]: identity };
}

/** info.platform of `crictl inspect`: the runtime flavor, then the identity once started. */
export function containerStatusPlatform(ctx: RuntimeContext, container: ContainerRecord): Record<string, unknown> {
  if (container.os !== 'windows') return containerPlatform(ctx, container);
  const image = { isolation: containerIsolation(ctx, container), imageOsVersion: container.imageConfig.osVersion ?? '', hostOsBuild: ctx.windows.node.osBuild };
  return { ...ctx.flavor.handoffView(container), ...image, ...containerPlatform(ctx, container) };
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
