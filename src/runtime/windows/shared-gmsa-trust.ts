/**
 * One gMSA, one hostname, several containers on a node older than Windows Server 2019: the
 * secure channel goes to the container that talked to the domain controller last, and the others
 * lose it. Microsoft's gMSA troubleshooting page (MicrosoftDocs/Virtualization-Documentation
 * virtualization/windowscontainers/manage-containers/gmsa-troubleshooting.md, "Using a gMSA with
 * more than one container simultaneously leads to intermittent failures on Windows Server 2016 and
 * Windows 10, versions 1709 and 1803"): "When another container talks to the same domain
 * controller, it will cancel communication with any prior containers using the same identity …
 * observed as a trust failure when you run `nltest /sc_verify:contoso.com`". Fixed in Windows
 * Server 2019 (build 17763), which separates the container identity from the machine name.
 *
 * The simulation is deterministic where the real race is not: of the running containers that
 * share the gMSA and the hostname, the one that logged on last (started, or reset its secure
 * channel with `nltest /sc_reset`) holds the channel; every other one sees its domain access fail
 * from its next identity operation on (nltest, klist, SMB: the trust relationship failure). The codes are the simulator's choice (the page names none): nltest's
 * secure channel reports ERROR_ACCESS_DENIED, Kerberos STATUS_ACCESS_DENIED.
 */
import type { RuntimeContext } from '../runtime-context.js';
import { ContainerState, type ContainerRecord } from '../store/container-store.js';
import type { ContainerIdentity } from './container-identity.js';
import { ERROR_ACCESS_DENIED, STATUS_ACCESS_DENIED } from './windows-status.js';

/** Windows Server 2019's build: from it on, containers may share a gMSA and a hostname. */
export const firstBuildWithSeparateContainerIdentity = 17763;

/** Whether a node of this OS build (`10.0.14393`) shares one secure channel per gMSA and hostname. */
export function sharesSecureChannel(osBuild: string): boolean {
  const build = Number(osBuild.split('.')[2] ?? osBuild);
  return Number.isInteger(build) && build < firstBuildWithSeparateContainerIdentity;
}

/** The key of the secure channel a container's domain identity uses: its gMSA and its hostname. */
function channelKey(identity: ContainerIdentity): string | undefined {
  if (identity.hostProcess || identity.domainAccess.kind !== 'ok') return undefined;
  return `${identity.domainAccess.account.toLowerCase()}|${identity.hostname.toLowerCase()}`;
}

export interface ChannelHolder {
  readonly id: string;
  /** When it last logged on (its start, or its last secure channel reset). */
  readonly startedAtNanos: bigint;
  readonly identity: ContainerIdentity;
}

/**
 * The identity as it works now: `identity` unchanged unless the node is older than WS2019 and a
 * running container started later (`peers`) uses the same gMSA and hostname.
 */
export function withSharedChannel(osBuild: string, self: ChannelHolder, peers: Iterable<ChannelHolder>): ContainerIdentity {
  const { identity } = self;
  const key = channelKey(identity);
  if (key === undefined || identity.domainAccess.kind !== 'ok' || !sharesSecureChannel(osBuild)) return identity;
  const later = (p: ChannelHolder): boolean => p.startedAtNanos > self.startedAtNanos || (p.startedAtNanos === self.startedAtNanos && p.id > self.id);
  const taker = [...peers].find((p) => p.id !== self.id && channelKey(p.identity) === key && later(p));
  if (taker === undefined) return identity;
  const { domain, account } = identity.domainAccess;
  return {
    ...identity,
    domainAccess: {
      kind: 'failed',
      domain,
      account,
      failure: {
        reason: 'secure-channel-taken',
        message: `the secure channel of ${account} (hostname ${identity.hostname}) was taken over by container ${taker.id}, started later with the same gMSA and hostname (Windows builds before ${firstBuildWithSeparateContainerIdentity})`,
        netlogonStatus: ERROR_ACCESS_DENIED,
        kerberosStatus: STATUS_ACCESS_DENIED,
      },
    },
  };
}

/**
 * When a container last logged on to its domain controller: its start, or a later
 * `nltest /sc_reset` (WindowsRuntime.channelLogons), which takes the channel back.
 */
function lastLogon(ctx: RuntimeContext, container: ContainerRecord): bigint {
  return ctx.windows.channelLogons.get(container) ?? container.status.startedAtNanos;
}

/** withSharedChannel against the runtime's running Windows containers. */
export function currentIdentity(
  ctx: RuntimeContext,
  container: ContainerRecord,
  identity: ContainerIdentity,
  identityOf: (c: ContainerRecord) => ContainerIdentity | undefined,
): ContainerIdentity {
  const osBuild = ctx.windows.node.osBuild;
  if (!sharesSecureChannel(osBuild) || channelKey(identity) === undefined) return identity;
  const peers: ChannelHolder[] = [];
  for (const c of ctx.containers.all()) {
    if (c === container || c.os !== 'windows' || c.status.state !== ContainerState.RUNNING) continue;
    const peer = identityOf(c);
    if (peer !== undefined) peers.push({ id: c.id, startedAtNanos: lastLogon(ctx, c), identity: peer });
  }
  return withSharedChannel(osBuild, { id: container.id, startedAtNanos: lastLogon(ctx, container), identity }, peers);
}
