import type { NodeFile } from './node-file.js';

/**
 * The build of a node file that names none (the schema's documented default): Windows Server 2022,
 * the embedded node's, whose ltsc2022 images the examples run.
 */
export const DEFAULT_OS_BUILD = '10.0.20348';

/**
 * The embedded default node (DESIGN.md "Node AD access"): WINNODE1, a Windows Server 2022 host
 * (10.0.20348, so the ltsc2022 images of the examples run process-isolated; Hyper-V isolation for
 * older ones) joined to the domain of the GMSA KEP's example credential spec, so that example
 * starts a container unchanged.
 * `examples/nodes/winnode1.yaml` is the same node as a file (a test keeps them equal).
 *
 * - WebApplication1: retrievable through the group WebAppHosts, of which WINNODE1$ is a member.
 * - EventLogger: retrievable by the computer account WINNODE1$ directly.
 * - SqlReporting: exists, but only SqlHosts (SQLNODE1$) may retrieve its password.
 */
export const DEFAULT_NODE_FILE: NodeFile = {
  node: {
    name: 'WINNODE1',
    hostname: 'winnode1',
    osBuild: DEFAULT_OS_BUILD,
    isolation: ['process', 'hyperv'],
    domain: 'contoso.com',
    localUsers: ['ContainerUser', 'ContainerAdministrator'],
    localGroups: ['Administrators', 'Users'],
  },
  domains: [
    {
      dnsName: 'contoso.com',
      netbiosName: 'DEMO',
      sid: 'S-1-5-21-2126729477-2524075714-3094792973',
      guid: '244818ae-87ca-4fcd-92ec-e79e5252348a',
      dnsTreeName: 'contoso.com',
      domainControllers: [{ name: 'dc1.contoso.com', reachable: true }],
      groups: [
        { name: 'WebAppHosts', members: ['WINNODE1$'] },
        { name: 'SqlHosts', members: ['SQLNODE1$'] },
      ],
      gmsas: [
        { name: 'WebApplication1', principalsAllowedToRetrieveManagedPassword: ['WebAppHosts'] },
        { name: 'EventLogger', principalsAllowedToRetrieveManagedPassword: ['WINNODE1$'] },
        { name: 'SqlReporting', principalsAllowedToRetrieveManagedPassword: ['SqlHosts'] },
      ],
    },
  ],
  // A team's app built for Windows Server 2019 (one platform, one manifest): the demo's row of the
  // version rule (docs/images.md).
  images: {
    images: [
      { reference: 'contoso.azurecr.io/timesheets:1.0-ltsc2019', platforms: [{ os: 'windows', osVersion: '10.0.17763.6054' }], exposedPorts: [8080] },
    ],
  },
};
