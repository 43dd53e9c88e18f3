import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { readFile } from 'node:fs/promises';
import { RuntimeError } from '../../../src/runtime/errors.js';
import { DEFAULT_NODE_FILE } from '../../../src/runtime/windows/default-node.js';
import {
  defaultNodeDirectory,
  loadNodeFile,
  parseNodeFile,
  validateNodeFile,
  type NodeFile,
} from '../../../src/runtime/windows/node-directory.js';
import { tempDirPerTest } from '../../support/temp-dir.js';

// dist/test/runtime/windows -> repository root
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

function yamlOf(change: (file: any) => void): string {
  const file = structuredClone(DEFAULT_NODE_FILE) as any;
  change(file);
  return JSON.stringify(file);
}

function rejection(fn: () => unknown): RuntimeError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(RuntimeError);
    return err as RuntimeError;
  }
  throw new Error('expected the node file to be rejected');
}

describe('node file and simulated Active Directory', () => {
  it('embeds WINNODE1 joined to contoso.com (NetBIOS DEMO) with the KEP SID and GUID', () => {
    const node = defaultNodeDirectory();
    expect(node.name).to.equal('WINNODE1');
    expect(node.computerAccount).to.equal('WINNODE1$');
    const domain = node.joinedDomain!;
    expect(domain).to.include({
      dnsName: 'contoso.com',
      netbiosName: 'DEMO',
      sid: 'S-1-5-21-2126729477-2524075714-3094792973',
      guid: '244818ae-87ca-4fcd-92ec-e79e5252348a',
    });
  });

  it('lets the default node retrieve WebApplication1 and EventLogger but not SqlReporting', () => {
    const node = defaultNodeDirectory();
    const domain = node.joinedDomain!;
    const me = node.passwordRetrievalAccount()!;
    expect(node.mayRetrieveManagedPassword(domain, node.findGmsa(domain, 'WebApplication1')!, me)).to.equal(true);
    expect(node.mayRetrieveManagedPassword(domain, node.findGmsa(domain, 'eventlogger')!, me)).to.equal(true);
    expect(node.findGmsa(domain, 'SqlReporting')).to.not.equal(undefined);
    expect(node.mayRetrieveManagedPassword(domain, node.findGmsa(domain, 'SqlReporting')!, me)).to.equal(false);
  });

  it('resolves nested groups and ignores membership cycles', () => {
    const node = parseNodeFile(
      yamlOf((f) => {
        f.domains[0].groups = [
          { name: 'Outer', members: ['Inner'] },
          { name: 'Inner', members: ['Outer', 'DEMO\\WINNODE1$'] },
        ];
        f.domains[0].gmsas = [
          { name: 'Nested', principalsAllowedToRetrieveManagedPassword: ['Outer'] },
          { name: 'Loop', principalsAllowedToRetrieveManagedPassword: ['Outer', 'Nobody'] },
        ];
        f.domains[0].groups[1].members = ['Outer', 'DEMO\\WINNODE1$'];
      }),
      'node.yaml',
    );
    const d = node.joinedDomain!;
    expect(node.mayRetrieveManagedPassword(d, node.findGmsa(d, 'Nested')!, node.passwordRetrievalAccount()!)).to.equal(true);
    const other = parseNodeFile(
      yamlOf((f) => {
        f.domains[0].groups = [
          { name: 'A', members: ['B'] },
          { name: 'B', members: ['A'] },
        ];
        f.domains[0].gmsas = [{ name: 'Cycle', principalsAllowedToRetrieveManagedPassword: ['A'] }];
      }),
      'node.yaml',
    );
    const od = other.joinedDomain!;
    expect(other.mayRetrieveManagedPassword(od, other.findGmsa(od, 'Cycle')!, other.passwordRetrievalAccount()!)).to.equal(false);
  });

  it('keeps the embedded default node valid against the node file schema (start-up does not re-check it)', () => {
    expect(validateNodeFile(structuredClone(DEFAULT_NODE_FILE), 'embedded default node')).to.deep.equal(DEFAULT_NODE_FILE);
  });

  it('ships examples/nodes/winnode1.yaml equal to the embedded default', async () => {
    const text = await readFile(join(repoRoot, 'examples', 'nodes', 'winnode1.yaml'), 'utf8');
    expect(parseYaml(text)).to.deep.equal(DEFAULT_NODE_FILE);
    expect(parseNodeFile(text, 'winnode1.yaml').name).to.equal('WINNODE1');
  });

  it('loads the CCG example node (workgroup, plugin account in DEMO)', async () => {
    const node = await loadNodeFile(join(repoRoot, 'examples', 'nodes', 'ccg-workgroup.yaml'));
    expect(node.joinedDomain).to.equal(undefined);
    expect(node.passwordRetrievalAccount()).to.deep.include({ account: 'ccg-reader' });
  });

  const cases: Array<{ name: string; change: (f: any) => void; message: string }> = [
    {
      name: 'a bad domain SID',
      change: (f) => (f.domains[0].sid = 'S-1-5-21-x'),
      message: 'node.yaml: domains[0].sid: must match a domain SID (S-1-5-21-a-b-c) (got "S-1-5-21-x")',
    },
    {
      name: 'a GUID with braces',
      change: (f) => (f.domains[0].guid = '{244818ae-87ca-4fcd-92ec-e79e5252348a}'),
      message: 'node.yaml: domains[0].guid: must match a GUID without braces (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx) (got "{244818ae-87ca-4fcd-92ec-e79e5252348a}")',
    },
    { name: 'a missing node name', change: (f) => delete f.node.name, message: 'node.yaml: node.name: is required' },
    { name: 'a misspelt field', change: (f) => (f.node.domian = 'contoso.com'), message: 'node.yaml: node.domian: is not a known field' },
    {
      name: 'a computer name over 15 characters',
      change: (f) => (f.node.name = 'WINDOWSNODE00001'),
      message: 'node.yaml: node.name: must match a computer name (1-15 letters, digits or hyphens) (got "WINDOWSNODE00001")',
    },
    {
      name: 'a wrong type',
      change: (f) => (f.domains[0].domainControllers[0].reachable = 'yes'),
      message: 'node.yaml: domains[0].domainControllers[0].reachable: must be a boolean, not a string',
    },
    {
      name: 'a domain without controllers',
      change: (f) => (f.domains[0].domainControllers = []),
      message: 'node.yaml: domains[0].domainControllers: must not be empty',
    },
    {
      name: 'membership of an undefined domain',
      change: (f) => (f.node.domain = 'fabrikam.com'),
      message: 'node.yaml: node.domain: "fabrikam.com" is not one of the domains defined in domains',
    },
    {
      name: 'a duplicated domain',
      change: (f) => f.domains.push({ ...structuredClone(f.domains[0]), netbiosName: 'OTHER' }),
      message: 'node.yaml: domains[1].dnsName: "contoso.com" is already defined by domains[0]',
    },
    {
      name: 'a gMSA defined twice',
      change: (f) => f.domains[0].gmsas.push({ name: 'webapplication1', principalsAllowedToRetrieveManagedPassword: [] }),
      message: 'node.yaml: domains[0].gmsas[3].name: "webapplication1" is already defined by domains[0].gmsas[0]',
    },
    {
      name: 'a CCG account outside the known domains',
      change: (f) => {
        delete f.node.domain;
        f.node.ccgPlugin = { pluginGuid: '{859E1386-BDB4-49E8-85C7-3070B13920E1}', account: 'FABRIKAM\\reader' };
      },
      message: 'node.yaml: node.ccgPlugin.account: "FABRIKAM\\reader" must be NETBIOS\\user with NETBIOS one of the domains',
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.name}, naming the file and the field`, () => {
      const err = rejection(() => parseNodeFile(yamlOf(c.change), 'node.yaml'));
      expect(err.message).to.equal(c.message);
      expect(err.code).to.equal('InvalidArgument');
    });
  }

  it('refuses YAML that does not parse, with the line', () => {
    const err = rejection(() => parseNodeFile('node:\n  name: [unclosed\n', 'node.yaml'));
    expect(err.message).to.match(/^node\.yaml:\d+: not valid YAML: /);
  });

  describe('loading from disk', () => {
    const dir = tempDirPerTest('winsim-node-');

    async function loadRejection(path: string): Promise<Error> {
      const outcome = await loadNodeFile(path).then(
        () => undefined,
        (err: unknown) => err as Error,
      );
      if (outcome === undefined) throw new Error('expected the node file to be rejected');
      return outcome;
    }

    it('names the path as the user gave it (relative stays relative)', async () => {
      const path = join(dir(), 'node.yaml');
      await writeFile(path, yamlOf((f: NodeFile) => (f.domains[0]!.netbiosName = 'BAD*NAME')));
      const given = relative(process.cwd(), path);
      const err = await loadRejection(given);
      expect(err.message).to.equal(
        `${given}: domains[0].netbiosName: must match a NetBIOS name (1-15 characters, none of \\/:*?"<>|, not starting with a period) (got "BAD*NAME")`,
      );
    });

    it('reports a missing file', async () => {
      const err = await loadRejection(join(dir(), 'missing.yaml'));
      expect(err.message).to.equal(`${join(dir(), 'missing.yaml')}: cannot read node file: no such file`);
    });
  });
});
