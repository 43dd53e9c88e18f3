// The SimulatedDomain resource without a cluster: the shipped CRD is what the AD document's JSON
// Schema translates to, field by field (so the API server refuses by schema what `ad apply`
// refuses); the example object is the embedded node's domain; the controller's rules on real
// live domains (src/runtime/windows/live-domain.ts). The CRD rules followed (apiextensions.k8s.io/v1,
// kubernetes v1.34 staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation):
// no uniqueItems (x-kubernetes-list-type: set instead), no additionalProperties beside
// properties, a type on every node; patterns are Go regexps (RE2: no look-around).
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import adSchema from '../../schemas/active-directory.schema.json' with { type: 'json' };
import nodeSchema from '../../schemas/node.schema.json' with { type: 'json' };
import { applyToNodes, domainAction, resourceSource, type DomainNode } from '../../src/kubelet/node/domain-controller.js';
import { READ_ONLY_DOCUMENT_FIELDS, simulatedDomainCrd, structuralSchema, type SimulatedDomainSpec } from '../../src/kubelet/node/domain-resource.js';
import { DEFAULT_NODE_FILE } from '../../src/runtime/windows/default-node.js';
import { LiveDomain } from '../../src/runtime/windows/live-domain.js';
import { defaultNodeDirectory, deriveNodeDirectory, renameComputerAccount, type NodeDirectory } from '../../src/runtime/windows/node-directory.js';
import { repoRoot } from '../support/paths.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from '../runtime/windows/kep-example.js';

const example = (file: string) => join(repoRoot, 'examples', 'cluster-mode', file);

type Schema = Record<string, any>;
const docs: Record<string, Schema> = { 'active-directory.schema.json': adSchema, 'node.schema.json': nodeSchema };

/** The test's own $ref resolution (not the translator's): the schema at a node, and its document. */
function deref(schema: Schema, base: string): [Schema, string] {
  if (typeof schema.$ref !== 'string') return [schema, base];
  const [file, pointer = ''] = schema.$ref.split('#');
  const doc = file === '' ? base : file;
  let node: any = docs[doc];
  for (const part of pointer.split('/').filter(Boolean)) node = node[part];
  return deref(node, doc);
}

/** Every field of a schema as `path -> constraints`, `[]` for array items. */
function fields(schema: Schema, base: string, path: string, out: Map<string, Schema>, translated: boolean): Map<string, Schema> {
  const [s, doc] = translated ? [schema, base] : deref(schema, base);
  let pattern: string | undefined = s.pattern;
  let { minLength, maxLength } = s;
  if (!translated && pattern !== undefined) {
    // The one look-ahead the JSON Schema uses: a length bound, which the CRD says with min/maxLength.
    const m = /^\^\(\?=\.\{(\d+),(\d+)\}\$\)/.exec(pattern);
    if (m) {
      pattern = `^${pattern.slice(m[0].length)}`;
      minLength = Number(m[1]);
      maxLength = Number(m[2]);
    }
  }
  const unique = translated ? s['x-kubernetes-list-type'] === 'set' : s.uniqueItems === true;
  out.set(path, { type: s.type ?? 'string', required: s.required, enum: s.enum, minimum: s.minimum, maximum: s.maximum, minItems: s.minItems, maxItems: s.maxItems, minLength, maxLength, pattern, unique });
  for (const [name, sub] of Object.entries(s.properties ?? {})) fields(sub as Schema, doc, `${path}.${name}`, out, translated);
  if (s.items !== undefined) fields(s.items, doc, `${path}[]`, out, translated);
  return out;
}

describe('the SimulatedDomain resource', () => {
  it('ships the CRD the JSON Schema translates to (regenerate with scripts/gen-domain-crd.mjs)', async () => {
    const shipped = parse(await readFile(example('domain-crd.yaml'), 'utf8'));
    expect(shipped).to.deep.equal(simulatedDomainCrd());
  });

  it("agrees with schemas/active-directory.schema.json field by field, less ad get's read-only fields", async () => {
    const shipped = parse(await readFile(example('domain-crd.yaml'), 'utf8'));
    const spec = shipped.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    const source = { type: 'object', required: adSchema.required, properties: Object.fromEntries(Object.entries(adSchema.properties).filter(([k]) => !READ_ONLY_DOCUMENT_FIELDS.includes(k))) };
    const expected = fields(source, 'active-directory.schema.json', 'spec', new Map(), false);
    const actual = fields(spec, '', 'spec', new Map(), true);
    expect([...actual.keys()].sort()).to.deep.equal([...expected.keys()].sort());
    for (const [path, constraints] of expected) expect(actual.get(path), path).to.deep.equal(constraints);
    // What is checked is checked for real: the list of fields is long and covers the domain.
    expect(expected.size).to.be.greaterThan(30);
    expect(actual.get('spec.domains[].domainControllers[].unreachableFrom')).to.include({ unique: true, maxItems: 4096 });
    expect(READ_ONLY_DOCUMENT_FIELDS.every((f) => f in adSchema.properties)).to.equal(true);
  });

  it('is a structural schema the API server takes: a type everywhere, no uniqueItems, no look-around, no additionalProperties: false', () => {
    const walk = (s: Schema, path: string): void => {
      expect(s.type, `${path}.type`).to.be.a('string');
      expect(s, path).to.not.have.any.keys('uniqueItems', '$ref', 'errorReason');
      expect(s.additionalProperties, path).to.not.equal(false);
      if (s.pattern !== undefined) expect(s.pattern, path).to.not.match(/\(\?[=!<]/);
      for (const [k, sub] of Object.entries(s.properties ?? {})) walk(sub as Schema, `${path}.${k}`);
      if (s.items) walk(s.items, `${path}[]`);
      if (typeof s.additionalProperties === 'object') walk(s.additionalProperties, `${path}{}`);
    };
    walk((simulatedDomainCrd() as any).spec.versions[0].schema.openAPIV3Schema, '');
  });

  it('refuses to translate what a CRD cannot say', () => {
    expect(() => structuralSchema({ type: 'string', pattern: '^(?!x)' })).to.throw('#: pattern ^(?!x) uses a look-around');
    expect(() => structuralSchema({ type: 'object', patternProperties: {} })).to.throw('#: keyword patternProperties has no translation to a CRD schema');
    expect(() => structuralSchema({ description: 'x' })).to.throw('#: a structural schema needs a type');
    expect(structuralSchema({ type: 'string', pattern: '^(?=.{1,63}$)[a-z]+$' })).to.deep.equal({ type: 'string', minLength: 1, maxLength: 63, pattern: '^[a-z]+$' });
  });

  it("ships an example object whose spec is the embedded node's domain, a pod with the KEP's credential spec, and RBAC to watch it and patch its status", async () => {
    const object = parse(await readFile(example('domain.yaml'), 'utf8'));
    expect(object).to.include({ apiVersion: 'cri-winsim.dev/v1alpha1', kind: 'SimulatedDomain' });
    expect(object.metadata.name).to.equal('default');
    expect(object.spec.domains).to.deep.equal(DEFAULT_NODE_FILE.domains);
    const pod = parse(await readFile(example('gmsa-pod.yaml'), 'utf8'));
    expect(JSON.parse(pod.spec.securityContext.windowsOptions.gmsaCredentialSpec)).to.deep.equal(JSON.parse(KEP_EXAMPLE_CREDENTIAL_SPEC));
    const rbac = parseAllDocuments(await readFile(example('rbac.yaml'), 'utf8')).map((d) => d.toJS());
    const role = rbac.find((d) => d.kind === 'ClusterRole');
    expect(role.rules).to.deep.include({ apiGroups: ['cri-winsim.dev'], resources: ['simulateddomains'], verbs: ['get', 'list', 'watch'] });
    expect(role.rules).to.deep.include({ apiGroups: ['cri-winsim.dev'], resources: ['simulateddomains/status'], verbs: ['patch'] });
  });
});

/** A simulated node of a node process: its derived directory and its own live domain. */
function domainNode(template: NodeDirectory, index: number): DomainNode & { directory: NodeDirectory; live: LiveDomain } {
  const directory = deriveNodeDirectory(template, `MULTI-${index}`, `multi-${index}`);
  const live = new LiveDomain(directory.file.node, { domains: directory.file.domains, source: directory.source });
  return {
    name: `multi-${index}`,
    directory,
    live,
    domain: live,
    view: (spec: SimulatedDomainSpec) => ({ domains: renameComputerAccount(spec.domains, template.name, directory.name), ...(spec.ccgPlugins ? { ccgPlugins: spec.ccgPlugins } : {}) }),
    nodeFile: { document: { domains: directory.file.domains }, source: directory.source },
  };
}

describe('the domain controller: what each node does with the resource', () => {
  const template = defaultNodeDirectory();
  const spec = (change: (s: SimulatedDomainSpec) => void = () => {}): SimulatedDomainSpec => {
    const s = { domains: structuredClone(DEFAULT_NODE_FILE.domains) };
    change(s);
    return s;
  };
  const dcDown = spec((s) => (s.domains[0]!.domainControllers[0]!.reachable = false));

  it('decides by the rules: apply a new spec, keep an equal one, revert only what came from the resource', () => {
    const live = new LiveDomain(DEFAULT_NODE_FILE.node, { domains: DEFAULT_NODE_FILE.domains, source: 'node.yaml' });
    const source = resourceSource('default');
    const cases: [string, () => void, SimulatedDomainSpec | undefined, 'apply' | 'keep' | 'revert'][] = [
      ['the node file and no resource', () => {}, undefined, 'keep'],
      ['the node file and a resource equal to it (the source still changes)', () => {}, spec(), 'apply'],
      ['the resource, applied', () => live.apply(dcDown, source), dcDown, 'keep'],
      ['the resource, and a changed spec', () => {}, spec(), 'apply'],
      ['the resource, and the resource gone', () => {}, undefined, 'revert'],
      ['ad apply on the socket, and the resource gone', () => live.apply(dcDown, 'ad.yaml'), undefined, 'keep'],
      ['ad apply on the socket, and the resource', () => {}, dcDown, 'apply'],
    ];
    for (const [name, before, desired, action] of cases) {
      before();
      expect(domainAction(live.current, source, desired), name).to.equal(action);
    }
  });

  it("applies one spec to every node, each reading the node file's account as its own", async () => {
    const nodes = [domainNode(template, 1), domainNode(template, 2)];
    expect(await applyToNodes(nodes, 'default', dcDown)).to.deep.equal({ result: 'Applied', changed: 2 });
    for (const [i, node] of nodes.entries()) {
      expect(node.live.current).to.include({ generation: 2, source: 'SimulatedDomain/default' });
      expect(node.live.domains[0]!.domainControllers[0]!.reachable).to.equal(false);
      expect(node.live.domains[0]!.groups!.find((g) => g.name === 'WebAppHosts')!.members).to.deep.equal([`MULTI-${i + 1}$`]);
      expect(node.live.domains[0]!.gmsas!.find((g) => g.name === 'EventLogger')!.principalsAllowedToRetrieveManagedPassword).to.deep.equal([`MULTI-${i + 1}$`]);
    }
    // The same spec again (a status write, a relist): nothing changes, no generation is spent.
    expect(await applyToNodes(nodes, 'default', dcDown)).to.deep.equal({ result: 'Applied', changed: 0 });
    expect(nodes.map((n) => n.live.generation)).to.deep.equal([2, 2]);
  });

  it('refuses a spec that breaks a rule the schema cannot express, on every node, and says why', async () => {
    const nodes = [domainNode(template, 1), domainNode(template, 2)];
    const before = nodes.map((n) => n.live.current);
    const twice = spec((s) => s.domains.push({ ...structuredClone(s.domains[0]!), netbiosName: 'OTHER' }));
    expect(await applyToNodes(nodes, 'default', twice)).to.deep.equal({ result: 'Rejected', changed: 0, message: 'SimulatedDomain/default: domains[1].dnsName: "contoso.com" is already defined by domains[0]' });
    const withoutOwnDomain = spec((s) => (s.domains[0]!.dnsName = s.domains[0]!.dnsTreeName = 'fabrikam.com'));
    expect((await applyToNodes(nodes, 'default', withoutOwnDomain)).message).to.equal('SimulatedDomain/default: node.domain: "contoso.com" is not one of the domains defined in domains');
    expect(nodes.map((n) => n.live.current)).to.deep.equal(before);
  });

  it("goes back to each node's own node file when the resource is gone, leaving a node changed by ad apply alone", async () => {
    const nodes = [domainNode(template, 1), domainNode(template, 2)];
    await applyToNodes(nodes, 'default', dcDown);
    nodes[1]!.live.apply({ domains: nodes[1]!.directory.file.domains }, 'ad.yaml');
    expect(await applyToNodes(nodes, 'default', undefined)).to.deep.equal({ result: 'Applied', changed: 1 });
    expect(nodes[0]!.live.current).to.include({ generation: 3, source: 'embedded default node (as MULTI-1) (SimulatedDomain/default is gone)' });
    expect(nodes[0]!.live.domains).to.deep.equal(nodes[0]!.directory.file.domains);
    expect(nodes[1]!.live.current).to.include({ generation: 3, source: 'ad.yaml' });
  });
});
