/**
 * The GMSA KEP's example credential spec (kubernetes/enhancements, keps/sig-windows "Windows
 * GMSA"), unchanged: it must start a container on the embedded default node.
 */
export const KEP_EXAMPLE_CREDENTIAL_SPEC = `{
  "CmsPlugins": [
    "ActiveDirectory"
  ],
  "DomainJoinConfig": {
    "DnsName": "contoso.com",
    "Guid": "244818ae-87ca-4fcd-92ec-e79e5252348a",
    "DnsTreeName": "contoso.com",
    "NetBiosName": "DEMO",
    "Sid": "S-1-5-21-2126729477-2524075714-3094792973",
    "MachineAccountName": "WebApplication1"
  },
  "ActiveDirectoryConfig": {
    "GroupManagedServiceAccounts": [
      {
        "Name": "WebApplication1",
        "Scope": "DEMO"
      },
      {
        "Name": "WebApplication1",
        "Scope": "contoso.com"
      }
    ]
  }
}`;

/** The KEP example with one change applied to a fresh copy. */
export function kepExampleWith(change: (doc: Record<string, any>) => void): string {
  const doc = JSON.parse(KEP_EXAMPLE_CREDENTIAL_SPEC) as Record<string, any>;
  change(doc);
  return JSON.stringify(doc);
}
