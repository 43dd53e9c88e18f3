// The simulated Active Directory failure modes of docs/failure-modes.md, computed from the
// runtime's own code (src/runtime/windows): for each cause, the start error in each
// `--ad-mode` and what the identity commands print inside. The docs test checks that the
// document quotes exactly these texts; `node dist/test/docs/failure-scenarios.js` prints them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import {
  evaluateContainerIdentity,
  type IdentityDecision,
  type IdentityMode,
} from '../../src/runtime/windows/container-identity.js';
import { parseCredentialSpec, type CredentialSpecDocument } from '../../src/runtime/windows/credential-spec.js';
import { runIdentityCommandLine } from '../../src/runtime/windows/identity-commands.js';
import { defaultNodeDirectory, parseNodeFile, type NodeDirectory } from '../../src/runtime/windows/node-directory.js';
import { repoRoot } from '../support/paths.js';

/** The container id the messages show; the real one is the 64-hex id CreateContainer returned. */
export const CONTAINER_ID = '<container-id>';
/** The pod's hostname (a pod's hostname is its name): computer name WEBAPP-GMSA. */
export const HOSTNAME = 'webapp-gmsa';
/** The run-as user of examples/pods/gmsa-pod-level.yaml: it acts as the gMSA on the network. */
export const RUN_AS_USER = 'NT AUTHORITY\\NETWORK SERVICE';

/** The commands whose output the document shows, as typed after `cmd /c`. */
export const IDENTITY_COMMANDS = ['whoami', 'whoami /upn', 'nltest /parentdomain', 'nltest /query', 'nltest /sc_verify:contoso.com', 'klist get krbtgt'];

const CCG_PLUGIN = '{859E1386-BDB4-49E8-85C7-3070B13920E1}';

/** The credential spec of a GMSACredentialSpec in examples/cluster/gmsa-credential-specs.yaml. */
export function exampleCredentialSpec(name: string): CredentialSpecDocument {
  const text = readFileSync(join(repoRoot, 'examples', 'cluster', 'gmsa-credential-specs.yaml'), 'utf8');
  const docs = text.split(/^---$/m).map((d) => parseYaml(d) as { metadata?: { name?: string }; credspec?: unknown });
  const found = docs.find((d) => d?.metadata?.name === name);
  if (found?.credspec === undefined) throw new Error(`no GMSACredentialSpec ${name} in examples/cluster/gmsa-credential-specs.yaml`);
  return found.credspec as CredentialSpecDocument;
}

function specWith(base: string, change: (d: CredentialSpecDocument) => void): CredentialSpecDocument {
  const doc = structuredClone(exampleCredentialSpec(base));
  change(doc);
  // Through the runtime's own parser, so every scenario's spec is one the runtime accepts.
  return parseCredentialSpec(JSON.stringify(doc));
}

function nodeFromExample(file: string, change: (f: any) => void = () => {}): NodeDirectory {
  const data = parseYaml(readFileSync(join(repoRoot, 'examples', 'nodes', file), 'utf8')) as any;
  change(data);
  return parseNodeFile(JSON.stringify(data), `examples/nodes/${file}`);
}

export interface FailureScenario {
  /** Anchor-like key, also the IdentityFailureReason where there is one. */
  key: string;
  title: string;
  node: () => NodeDirectory;
  credentialSpec?: () => CredentialSpecDocument;
  runAsUser: string;
}

export const SCENARIOS: readonly FailureScenario[] = [
  {
    key: 'ok',
    title: 'Baseline: the node may use the gMSA',
    node: defaultNodeDirectory,
    credentialSpec: () => exampleCredentialSpec('webapplication1'),
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'no-credential-spec',
    title: 'No credential spec passed',
    node: defaultNodeDirectory,
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'node-not-allowed',
    title: 'Node not in the gMSA\'s PrincipalsAllowedToRetrieveManagedPassword',
    node: defaultNodeDirectory,
    credentialSpec: () => exampleCredentialSpec('sqlreporting'),
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'node-not-domain-joined',
    title: 'Node not domain-joined (and no CCG plugin in the credential spec)',
    node: () => nodeFromExample('winnode1.yaml', (f) => { delete f.node.domain; }),
    credentialSpec: () => exampleCredentialSpec('webapplication1'),
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'gmsa-not-found',
    title: 'gMSA missing from the domain',
    node: defaultNodeDirectory,
    credentialSpec: () => specWith('webapplication1', (d) => {
      d.DomainJoinConfig.MachineAccountName = 'WebApplication2';
      d.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: 'WebApplication2', Scope: 'contoso.com' }, { Name: 'WebApplication2', Scope: 'DEMO' }];
    }),
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'domain-unknown',
    title: 'Credential spec for a domain the node cannot reach',
    node: defaultNodeDirectory,
    credentialSpec: () => specWith('webapplication1', (d) => {
      d.DomainJoinConfig.DnsName = 'fabrikam.com';
      d.DomainJoinConfig.DnsTreeName = 'fabrikam.com';
      d.DomainJoinConfig.NetBiosName = 'FABRIKAM';
    }),
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'domain-mismatch',
    title: 'Credential spec with the wrong domain identity (SID, GUID, NetBIOS or tree name)',
    node: defaultNodeDirectory,
    credentialSpec: () => specWith('webapplication1', (d) => { d.DomainJoinConfig.Sid = 'S-1-5-21-1-2-3'; }),
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'domain-controller-unreachable',
    title: 'Domain controller or DNS unreachable',
    node: () => nodeFromExample('winnode1.yaml', (f) => { f.domains[0].domainControllers[0].reachable = false; }),
    credentialSpec: () => exampleCredentialSpec('webapplication1'),
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'ccg-plugin-failure',
    title: 'CCG plugin failure on a node that is not domain-joined',
    node: () => nodeFromExample('ccg-workgroup.yaml', (f) => { f.node.ccgPlugin.healthy = false; }),
    credentialSpec: () => specWith('webapplication1', (d) => {
      d.ActiveDirectoryConfig.HostAccountConfig = { PortableCcgVersion: '1', PluginGUID: CCG_PLUGIN, PluginInput: 'contoso.com:ccg-reader' };
    }),
    runAsUser: RUN_AS_USER,
  },
  {
    key: 'unknown-user',
    title: 'Unknown runAsUserName',
    node: defaultNodeDirectory,
    credentialSpec: () => exampleCredentialSpec('webapplication1'),
    runAsUser: 'WebAdmin',
  },
];

export interface ScenarioOutcome {
  decision: IdentityDecision;
  /** `> <command>` followed by its stdout and stderr, per identity command (empty when the container does not start). */
  transcript: string;
}

/** The container's image user is servercore's (the examples' images). */
const IMAGE_USER = 'ContainerAdministrator';

export function evaluateScenario(scenario: FailureScenario, mode: IdentityMode): ScenarioOutcome {
  const decision = evaluateContainerIdentity(
    scenario.node(),
    scenario.credentialSpec?.(),
    scenario.runAsUser,
    IMAGE_USER,
    HOSTNAME,
    mode,
    { containerId: CONTAINER_ID },
  );
  if (decision.startError !== undefined) return { decision, transcript: '' };
  const parts = IDENTITY_COMMANDS.map((command) => {
    const result = runIdentityCommandLine(command, decision.identity);
    if (result === undefined) throw new Error(`${command} is not an identity command`);
    const out = `${result.stdout}${result.stderr}`.replace(/\n+$/, '').replace(/^\n+/, '');
    return `C:\\>${command}\n${out}${result.exitCode === 0 ? '' : `\n(exit code ${result.exitCode})`}`;
  });
  return { decision, transcript: parts.join('\n\n') };
}

/** The gRPC status codes the runtime's error codes map to (src/cri/status.ts). */
export const GRPC_STATUS = { FailedPrecondition: 'FAILED_PRECONDITION (9)', Unknown: 'UNKNOWN (2)', InvalidArgument: 'INVALID_ARGUMENT (3)' } as const;

/** Prints every scenario's texts, to write or update docs/failure-modes.md. */
function main(): void {
  for (const scenario of SCENARIOS) {
    process.stdout.write(`## ${scenario.key}: ${scenario.title}\n`);
    for (const mode of ['strict', 'realistic'] as const) {
      const { decision, transcript } = evaluateScenario(scenario, mode);
      const e = decision.startError;
      process.stdout.write(`### ${mode}\n`);
      if (e !== undefined) process.stdout.write(`start error ${e.code} ${e.reason}:\n${e.message}\n`);
      else process.stdout.write(`starts\n${transcript}\n`);
    }
    process.stdout.write('\n');
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();
