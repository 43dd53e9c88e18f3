// docs/node-file.md against the schema and the loader: every field of schemas/node.schema.json is
// in the field table with its required-ness, the default node shown is the embedded one, and
// every loader error the page quotes is what the loader says for that change.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import nodeSchema from '../../schemas/node.schema.json' with { type: 'json' };
import { DEFAULT_NODE_FILE } from '../../src/runtime/windows/default-node.js';
import { loadNodeFile, parseNodeFile } from '../../src/runtime/windows/node-directory.js';
import { repoRoot } from '../support/paths.js';

const page = readFileSync(join(repoRoot, 'docs', 'node-file.md'), 'utf8');
const winnode1 = readFileSync(join(repoRoot, 'examples', 'nodes', 'winnode1.yaml'), 'utf8');

interface SchemaNode {
  $ref?: string;
  type?: string;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode;
}

/** Every field path of the schema (`node.name`, `domains[].gmsas[].name`) with its required-ness. */
function schemaFields(): Map<string, boolean> {
  const definitions = (nodeSchema as { definitions: Record<string, SchemaNode> }).definitions;
  const resolve = (s: SchemaNode): SchemaNode => (s.$ref ? { ...definitions[s.$ref.split('/').pop()!], ...s } : s);
  const fields = new Map<string, boolean>();
  const walk = (schema: SchemaNode, path: string): void => {
    const s = resolve(schema);
    if (s.properties) {
      for (const [key, child] of Object.entries(s.properties)) {
        const childPath = path === '' ? key : `${path}.${key}`;
        fields.set(childPath, (s.required ?? []).includes(key));
        walk(child, childPath);
      }
    }
    if (s.items) walk(s.items, `${path}[]`);
  };
  walk(nodeSchema as SchemaNode, '');
  return fields;
}

/** The field table: path -> the Required cell. */
function documentedFields(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of page.split('\n')) {
    const m = /^\| `([^`]+)` \| [^|]+ \| (yes|no) \|/.exec(line);
    if (m) rows.set(m[1]!, m[2]!);
  }
  return rows;
}

/** The node file with one change, as the page's error table describes it. */
const changed = (from: string | RegExp, to: string): string => {
  const text = winnode1.replace(from, to);
  if (text === winnode1) throw new Error(`the change ${String(from)} does not apply to examples/nodes/winnode1.yaml`);
  return text;
};

const ERROR_CASES: Array<{ change: string; text: string }> = [
  { change: '`node.name` removed', text: changed('  name: WINNODE1\n', '') },
  { change: '`node.name: WINNODE1-WITH-A-LONG-NAME`', text: changed('  name: WINNODE1\n', '  name: WINNODE1-WITH-A-LONG-NAME\n') },
  { change: '`hostName:` added under `node`', text: changed('  hostname: winnode1\n', '  hostname: winnode1\n  hostName: winnode1\n') },
  { change: '`sid: S-1-5-21-2126729477`', text: changed('sid: S-1-5-21-2126729477-2524075714-3094792973', 'sid: S-1-5-21-2126729477') },
  { change: '`reachable: "yes"`', text: changed('reachable: true', 'reachable: "yes"') },
  { change: '`domainControllers: []`', text: changed(/domainControllers:\n(\s+- name: dc1\.contoso\.com\n\s+reachable: true[^\n]*\n)/, 'domainControllers: []\n') },
  { change: 'gMSA `EventLogger$`', text: changed('- name: EventLogger', '- name: EventLogger$') },
  { change: '`node.domain: fabrikam.com`', text: changed('domain: contoso.com ', 'domain: fabrikam.com') },
  { change: 'second gMSA renamed `WebApplication1`', text: changed('- name: EventLogger', '- name: WebApplication1') },
  { change: '`address: 10.0.0.4` on `dc1.contoso.com`', text: changed('reachable: true ', 'reachable: true\n        address: 10.0.0.4 ') },
];

function loaderError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the loader accepted the file');
}

describe('docs/node-file.md', function () {
  it('documents every field of schemas/node.schema.json, with its required-ness', function () {
    const documented = documentedFields();
    const fields = schemaFields();
    for (const [path, required] of fields) {
      expect(documented.has(path), `field ${path} is missing from the table`).to.equal(true);
      expect(documented.get(path), `Required cell of ${path}`).to.equal(required ? 'yes' : 'no');
    }
    for (const path of documented.keys()) expect(fields.has(path), `the table documents ${path}, which the schema does not have`).to.equal(true);
  });

  it('shows examples/nodes/winnode1.yaml verbatim, and it is the embedded default node', function () {
    expect(page).to.include(`\`\`\`yaml\n${winnode1}\`\`\``);
    expect(parseYaml(winnode1)).to.deep.equal(DEFAULT_NODE_FILE);
    for (const fact of ['contoso.com', 'DEMO', DEFAULT_NODE_FILE.domains[0]!.sid, DEFAULT_NODE_FILE.domains[0]!.guid]) {
      expect(page).to.include(`\`${fact}\``);
    }
  });

  for (const c of ERROR_CASES) {
    it(`quotes the loader error for: ${c.change}`, function () {
      const message = loaderError(() => parseNodeFile(c.text, 'node.yaml'));
      expect(page).to.include(`| ${c.change} | \`${message}\` |`);
    });
  }

  it('quotes the YAML and unreadable-file errors in their form', async function () {
    const yamlError = loaderError(() => parseNodeFile(changed('  hostname: winnode1', '  hostname: [winnode1'), 'node.yaml'));
    expect(yamlError).to.match(/^node\.yaml:7: not valid YAML: /);
    expect(page).to.include('`node.yaml:7: not valid YAML: <the parser\'s message>`');
    let missing = '';
    try {
      await loadNodeFile('missing.yaml');
    } catch (err) {
      missing = (err as Error).message;
    }
    expect(page).to.include(`\`${missing}\``);
  });
});
