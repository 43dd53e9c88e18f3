import { createHash } from 'node:crypto';
import type { ExplainContainerRequest__Output } from '../generated/criwinsim/identity/v1/ExplainContainerRequest.js';
import type { ExplainContainerResponse } from '../generated/criwinsim/identity/v1/ExplainContainerResponse.js';
import type { DomainLogon } from '../generated/criwinsim/identity/v1/DomainLogon.js';
import type { Handoff } from '../generated/criwinsim/identity/v1/Handoff.js';
import type { HcsDocument } from '../generated/criwinsim/identity/v1/HcsDocument.js';
import type { StartOutcome } from '../generated/criwinsim/identity/v1/StartOutcome.js';
import { START_ERROR_REASON } from './container-start.js';
import { windowsIdentity } from './container-start-windows.js';
import type { RuntimeContext } from './runtime-context.js';
import { ContainerState, type ContainerRecord } from './store/container-store.js';
import { requireField } from './validation/request.js';
import { formatNtStatus, formatWin32Status } from './windows/windows-status.js';
import { stagedFromSecurityOption } from './windows/credential-spec-handoff.js';

/** The Identity service as a runtime serves it (one method per RPC, as for the CRI services). */
export interface IdentityRuntime {
  explainContainer(request: ExplainContainerRequest__Output, deadlineMs?: number): Promise<ExplainContainerResponse>;
}

/**
 * Identity.ExplainContainer (proto/criwinsim/identity/v1, cri-winsim's own service): the
 * runtime's records of a container's identity, as they were left by CreateContainer (the config
 * received, the security options of the hand-off), StartContainer (the document HCS accepted in
 * the OCI spec, the step a failed start stopped at: identity-journal.ts), the identity the
 * container's commands answer from, and the identity operations run inside it.
 */
export function explainContainer(ctx: RuntimeContext, req: ExplainContainerRequest__Output): ExplainContainerResponse {
  requireField(req.container_id, 'container_id');
  const container = ctx.containers.mustFind(req.container_id);
  const response: ExplainContainerResponse = {
    container_id: container.id,
    runtime_flavor: ctx.flavor.name,
    // The --ad-mode names of the two identity modes (windows/ad-mode.ts).
    ad_mode: ctx.windows.mode === 'strict' ? 'gmsa-kep' : 'windows-server',
    os: container.os,
  };
  if (container.os !== 'windows') return response;
  const sc = ctx.containers.configOf(container).windows?.security_context ?? null;
  const credentialSpec = sc?.credential_spec ?? '';
  const start = startOutcome(ctx, container);
  return {
    ...response,
    received: {
      has_credential_spec: credentialSpec !== '',
      credential_spec_bytes: String(Buffer.byteLength(credentialSpec, 'utf8')),
      credential_spec_sha256: credentialSpec === '' ? '' : createHash('sha256').update(credentialSpec, 'utf8').digest('hex'),
      run_as_username: sc?.run_as_username ?? '',
      host_process: sc?.host_process ?? false,
    },
    handoff: handoff(ctx, container, credentialSpec !== '', start),
    hcs_document: hcsDocument(ctx, container),
    start,
    logon: logon(ctx, container),
    operations: ctx.windows.journal.operationsOf(container.id).map((o) => ({
      sequence: String(o.sequence),
      time: o.time,
      command: o.command,
      exit_code: o.exitCode,
      result: o.result,
      status: o.status,
    })),
  };
}

function startOutcome(ctx: RuntimeContext, container: ContainerRecord): StartOutcome {
  const recorded = ctx.windows.journal.startOf(container.id);
  // A start that failed after the Windows part (the process could not start) is the container's own record.
  if (container.status.reason === START_ERROR_REASON && recorded?.state !== 'failed') {
    return { state: 'failed', failed_step: recorded === undefined ? 'other' : 'process', error_code: 'Unknown', error: container.status.message };
  }
  if (recorded === undefined) {
    // Never started, or reloaded by a restarted runtime (the journal is in memory).
    return { state: container.status.state === ContainerState.CREATED ? 'not-started' : 'unrecorded' };
  }
  return {
    state: recorded.state,
    failed_step: recorded.failedStep ?? '',
    error_code: recorded.errorCode ?? '',
    error: recorded.error ?? '',
    failure_reason: recorded.failureReason ?? '',
  };
}

function handoff(ctx: RuntimeContext, container: ContainerRecord, received: boolean, start: StartOutcome): Handoff {
  const staged = container.securityOptions.map(stagedFromSecurityOption).find((s) => s !== undefined);
  if (staged === undefined) {
    // containerd hands nothing over: the string is windows.credentialSpec of the OCI spec.
    if (received && ctx.flavor.name === 'containerd') return { kind: 'oci-spec', state: 'in-spec' };
    // A security option the runtime did not stage itself (a hand-written one) is shown as it is.
    const option = container.securityOptions.find((o) => /^credentialspec=/i.test(o)) ?? '';
    return { kind: option === '' ? 'none' : 'other', security_option: option, state: option === '' ? 'none' : 'staged' };
  }
  const notStarted = start.state === 'not-started';
  const state = staged.transport === 'registry' ? 'kept' : notStarted ? 'staged' : 'removed';
  return { kind: staged.transport, security_option: staged.securityOption, state };
}

function hcsDocument(ctx: RuntimeContext, container: ContainerRecord): HcsDocument {
  const spec = ctx.containers.specOf(container);
  const document = container.credentialSpec;
  const join = document?.DomainJoinConfig;
  return {
    credential_spec: document !== undefined,
    account: join === undefined ? '' : `${join.NetBiosName}\\${join.MachineAccountName}`,
    dns_name: join?.DnsName ?? '',
    netbios_name: join?.NetBiosName ?? '',
    sid: join?.Sid ?? '',
    guid: join?.Guid ?? '',
    dns_tree_name: join?.DnsTreeName ?? '',
    ccg_plugin_guid: document?.ActiveDirectoryConfig.HostAccountConfig?.PluginGUID ?? '',
    username: spec.process.user?.username ?? '',
    host_process: ctx.flavor.hostProcess(ctx.containers.configOf(container)),
  };
}

/** Null until the container started with an identity (the mock HCS decides it at start). */
function logon(ctx: RuntimeContext, container: ContainerRecord): DomainLogon | null {
  const identity = windowsIdentity(ctx, container);
  if (identity === undefined) return null;
  const access = identity.domainAccess;
  const base: DomainLogon = {
    result: access.kind,
    user: `${identity.userDomain}\\${identity.userName}`,
    network_identity: identity.networkIdentity ?? '',
    upn: identity.upn ?? '',
  };
  if (access.kind === 'none') return base;
  if (access.kind === 'ok') return { ...base, domain: access.domain.dnsName, domain_controller: access.domainController };
  return {
    ...base,
    domain: access.domain.dnsName,
    failure_reason: access.failure.reason,
    netlogon_status: formatWin32Status(access.failure.netlogonStatus),
    kerberos_status: `${formatNtStatus(access.failure.kerberosStatus)} ${access.failure.kerberosStatus.name}`,
    message: access.failure.message,
  };
}
