import type { WindowsSession } from '../../emulator/windows-identity.js';
import type { CommandResult } from './identity-commands.js';
import { domainControllerAddress, fileServerAddress } from './domain-addresses.js';
import type { DomainSpec, NodeDirectory } from './node-directory.js';
import { ERROR_NO_SUCH_DOMAIN, NERR_SUCCESS, RPC_S_SERVER_UNAVAILABLE, formatWin32Status } from './windows-status.js';

/**
 * The commands of a Windows container that act on the domain or ask its DNS, answered from the
 * container's session (the domain as it is when they run): `nltest /sc_reset:<domain>` and
 * `nslookup <name>`. Output lines end in `\n` (the registration turns them into CRLF).
 */

const ok = (stdout: string, stderr = ''): CommandResult => ({ stdout, stderr, exitCode: 0 });
const fail = (stdout: string, stderr = '', exitCode = 1): CommandResult => ({ stdout, stderr, exitCode });

/**
 * `nltest /sc_reset:<domain>`: the container logs on again and (re)establishes its secure channel
 * with a DC that answers. Success prints the DC it chose, as in the Kubernetes gMSA page's
 * troubleshooting example (kubernetes/website content/en/docs/tasks/configure-pod-container/
 * configure-gmsa.md, "Flags: 30 HAS_IP  HAS_TIMESERV", "Trusted DC Name \\dc10.domain.example");
 * the upstream e2e test (test/e2e/windows/gmsa_full.go) runs it when `nltest /QUERY` fails.
 * On a host that shares one channel per gMSA and hostname, the reset takes the channel from the
 * container that held it (shared-gmsa-trust.ts).
 */
export function nltestScReset(target: string, session: WindowsSession): CommandResult {
  const identity = session.identity();
  const access = identity?.domainAccess;
  if (access === undefined || access.kind === 'none') {
    return fail(`I_NetLogonControl failed: Status = ${formatWin32Status(RPC_S_SERVER_UNAVAILABLE)}\n`);
  }
  // `/sc_reset:contoso.com\dc1` names a DC too; the domain part decides.
  const domainName = target.split('\\')[0]!.toLowerCase();
  if (![access.domain.dnsName, access.domain.netbiosName].some((d) => d.toLowerCase() === domainName)) {
    return fail(`I_NetLogonControl failed: Status = ${formatWin32Status(ERROR_NO_SUCH_DOMAIN)}\n`);
  }
  if (access.kind === 'failed' && access.failure.reason !== 'secure-channel-taken') {
    return fail(`I_NetLogonControl failed: Status = ${formatWin32Status(access.failure.netlogonStatus)}\n`);
  }
  session.resetSecureChannel();
  const now = session.identity()?.domainAccess;
  if (now?.kind !== 'ok') {
    const status = now?.kind === 'failed' ? now.failure.netlogonStatus : RPC_S_SERVER_UNAVAILABLE;
    return fail(`I_NetLogonControl failed: Status = ${formatWin32Status(status)}\n`);
  }
  return ok(
    'Flags: 30 HAS_IP  HAS_TIMESERV\n' +
      `Trusted DC Name \\\\${now.domainController}\n` +
      `Trusted DC Connection Status Status = ${formatWin32Status(NERR_SUCCESS)}\n` +
      'The command completed successfully\n',
  );
}

const same = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

/** The domain whose DNS servers (its DCs) the container asks: its gMSA's, else the node's, else the first. */
function dnsDomain(directory: NodeDirectory, session: WindowsSession): DomainSpec | undefined {
  const access = session.identity()?.domainAccess;
  const own = access === undefined || access.kind === 'none' ? undefined : directory.findDomain(access.domain.dnsName);
  return own ?? directory.joinedDomain ?? directory.file.domains[0];
}

/** The A records of a name in the simulated zones: a domain (its DCs), a DC, a file server. */
function lookUp(directory: NodeDirectory, name: string, suffix: string | undefined): { name: string; addresses: string[] } | undefined {
  const candidates = name.includes('.') || suffix === undefined ? [name] : [`${name}.${suffix}`, name];
  for (const candidate of candidates) {
    for (const domain of directory.file.domains) {
      if (same(candidate, domain.dnsName)) {
        return { name: domain.dnsName, addresses: domain.domainControllers.map((_, i) => domainControllerAddress(domain, i)) };
      }
      const dc = domain.domainControllers.findIndex((d) => same(d.name, candidate));
      if (dc >= 0) return { name: domain.domainControllers[dc]!.name, addresses: [domainControllerAddress(domain, dc)] };
      const servers = domain.fileServers ?? [];
      const fs = servers.findIndex((s) => same(`${s.name}.${domain.dnsName}`, candidate));
      if (fs >= 0) return { name: `${servers[fs]!.name}.${domain.dnsName}`, addresses: [fileServerAddress(domain, fs)] };
    }
  }
  return undefined;
}

const TIMED_OUT = 'DNS request timed out.\n    timeout was 2 seconds.\n';

/**
 * `nslookup <name>`: Windows nslookup's layout — the server that answered (`Server:  <name>`,
 * `Address:  <ip>`), a blank line, then `Name:    <fqdn>` and `Address:  <ip>` (`Addresses:` with
 * further ones on lines indented by a tab and two spaces). The DNS servers are the domain's DCs
 * (AD-integrated DNS): when none answers, the requests time out. Addresses are the DCs' and file
 * servers' loopback addresses (file-shares.ts). The exit status 1 on failure is ours.
 */
export function nslookup(argv: readonly string[], session: WindowsSession): CommandResult {
  const args = argv.slice(1).filter((a) => !a.startsWith('-'));
  if (args.length === 0) return fail('', '*** nslookup: interactive mode is not supported here; give a name to look up\n');
  const name = args[0]!.replace(/\.$/, '');
  const directory = session.directory();
  const domain = dnsDomain(directory, session);
  const serverIndex = domain?.domainControllers.findIndex((dc) => dc.reachable !== false) ?? -1;
  if (domain === undefined || serverIndex < 0) {
    const address = domain === undefined ? '127.0.0.53' : domainControllerAddress(domain, 0);
    return fail(`${TIMED_OUT}Server:  UnKnown\nAddress:  ${address}\n\n${TIMED_OUT}${TIMED_OUT}`, '*** Request to UnKnown timed-out\n');
  }
  const server = domain.domainControllers[serverIndex]!;
  const header = `Server:  ${server.name}\nAddress:  ${domainControllerAddress(domain, serverIndex)}\n\n`;
  const found = lookUp(directory, name, domain.dnsName);
  if (found === undefined) return fail(header, `*** ${server.name} can't find ${name}: Non-existent domain\n`);
  const [first, ...more] = found.addresses;
  const addresses = more.length === 0 ? `Address:  ${first}\n` : `Addresses:  ${first}\n${more.map((a) => `\t  ${a}\n`).join('')}`;
  return ok(`${header}Name:    ${found.name}\n${addresses}\n`);
}
