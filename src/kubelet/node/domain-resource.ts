/**
 * The simulated Active Directory as a cluster resource: the custom resource `SimulatedDomain`
 * (group `cri-winsim.dev`, a group of cri-winsim's own, after the domain its schemas' $id names),
 * cluster-scoped, whose spec is the AD document of `cri-winsim ad apply`
 * (schemas/active-directory.schema.json) less the read-only fields `ad get` adds. Node processes
 * watch it (domain-controller.ts) and report on its status subresource, one entry per process.
 *
 * The CRD's openAPIV3Schema is derived from the JSON Schema here, so the API server refuses what
 * `ad apply` would refuse by schema; examples/cluster-mode/domain-crd.yaml is this function's
 * output, and a test keeps the two equal.
 */
import adSchema from '../../../schemas/active-directory.schema.json' with { type: 'json' };
import nodeSchema from '../../../schemas/node.schema.json' with { type: 'json' };
import type { CcgPluginState } from '../../runtime/windows/live-domain.js';
import type { DomainSpec } from '../../runtime/windows/node-file.js';

export const DOMAIN_GROUP = 'cri-winsim.dev';
export const DOMAIN_VERSION = 'v1alpha1';
export const DOMAIN_KIND = 'SimulatedDomain';
export const DOMAIN_PLURAL = 'simulateddomains';
/** The object node processes follow unless `--domain-resource` names another. */
export const DEFAULT_DOMAIN_RESOURCE = 'default';

/** Fields of the AD document that `ad get` fills in and a cluster resource has no use for. */
export const READ_ONLY_DOCUMENT_FIELDS: readonly string[] = ['generation', 'source', 'appliedAt'];

export interface SimulatedDomainSpec {
  domains: DomainSpec[];
  ccgPlugins?: CcgPluginState[];
}

/** What one node process reports on the resource's status (under its first node's name). */
export interface DomainProcessStatus {
  /** The simulated nodes of the process, and the last of them (the first is the entry's key). */
  nodeCount: number;
  lastNode: string;
  /** metadata.generation of the spec the process last read. */
  observedGeneration: number;
  /** metadata.generation of the spec its nodes run; absent when none of this object's was applied. */
  appliedGeneration?: number;
  /** Applied, or Rejected (the nodes kept what they had; message says why). */
  result: 'Applied' | 'Rejected';
  message?: string;
  lastUpdateTime: string;
}

export interface SimulatedDomainStatus {
  nodeProcesses?: Record<string, DomainProcessStatus>;
}

export interface SimulatedDomain {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; uid?: string; generation?: number; resourceVersion?: string };
  spec: SimulatedDomainSpec;
  status?: SimulatedDomainStatus;
}

/** The collection path of the resource (cluster-scoped). */
export function domainResourcePath(): string {
  return `/apis/${DOMAIN_GROUP}/${DOMAIN_VERSION}/${DOMAIN_PLURAL}`;
}

type JsonSchema = Record<string, unknown>;

const documents: Readonly<Record<string, JsonSchema>> = {
  'active-directory.schema.json': adSchema as JsonSchema,
  'node.schema.json': nodeSchema as JsonSchema,
};

/** Keywords copied as they are: they mean the same in JSON Schema draft-07 and in a CRD's schema. */
const SAME_KEYWORDS = new Set(['type', 'description', 'required', 'enum', 'minimum', 'maximum', 'minItems', 'maxItems', 'minLength', 'maxLength', 'minProperties', 'maxProperties']);
/**
 * Keywords left out: documentation of our own (errorReason), or what pruning does in a CRD
 * (additionalProperties: false), or what a CRD's schema cannot say: `propertyNames` (a share's
 * file names) — the node process's apply checks those with the JSON Schema and reports a refusal
 * on the resource's status.
 */
const DROPPED_KEYWORDS = new Set(['$schema', '$id', 'title', 'errorReason', 'definitions', 'propertyNames']);

function resolveRef(ref: string, base: string): { schema: JsonSchema; base: string } {
  const hash = ref.indexOf('#');
  const file = hash <= 0 ? (hash === 0 ? base : ref) : ref.slice(0, hash);
  let node: unknown = documents[file];
  if (node === undefined) throw new Error(`$ref ${ref}: unknown document ${file}`);
  for (const part of (hash < 0 ? '' : ref.slice(hash + 1)).split('/').filter((p) => p !== '')) {
    node = (node as JsonSchema)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`$ref ${ref}: nothing at ${part}`);
  }
  return { schema: node as JsonSchema, base: file };
}

/** `^(?=.{1,253}$)rest`: Go's regexp (RE2, what the API server uses) has no look-ahead; the length goes to min/maxLength. */
const LENGTH_LOOKAHEAD = /^\^\(\?=\.\{(\d+),(\d+)\}\$\)/;

/**
 * A structural schema (apiextensions.k8s.io/v1) equivalent to a draft-07 JSON Schema: $refs
 * inlined, `uniqueItems` as `x-kubernetes-list-type: set` (which the API server checks for
 * duplicates; v1 forbids uniqueItems), `additionalProperties: false` left to pruning (kubectl's
 * default strict field validation refuses unknown fields), a length look-ahead as
 * minLength/maxLength. Any other keyword is an error, so a new one in the JSON Schema is noticed.
 */
export function structuralSchema(schema: JsonSchema, base = 'active-directory.schema.json', path = '#'): JsonSchema {
  let source = schema;
  let sourceBase = base;
  if (typeof schema.$ref === 'string') {
    const resolved = resolveRef(schema.$ref, base);
    const { $ref: _ref, ...siblings } = schema;
    source = { ...resolved.schema, ...siblings };
    sourceBase = resolved.base;
  }
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(source)) {
    if (SAME_KEYWORDS.has(key)) out[key] = value;
    else if (DROPPED_KEYWORDS.has(key)) continue;
    else if (key === 'additionalProperties' && value === false) continue;
    else if (key === 'additionalProperties' && typeof value === 'object' && value !== null) out.additionalProperties = structuralSchema(value as JsonSchema, sourceBase, `${path}/additionalProperties`);
    else if (key === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, JsonSchema>).map(([name, sub]) => [name, structuralSchema(sub, sourceBase, `${path}/properties/${name}`)]));
    } else if (key === 'items') out.items = structuralSchema(value as JsonSchema, sourceBase, `${path}/items`);
    else if (key === 'uniqueItems') {
      if (value === true) out['x-kubernetes-list-type'] = 'set';
    } else if (key === 'pattern') {
      let pattern = value as string;
      const lookahead = LENGTH_LOOKAHEAD.exec(pattern);
      if (lookahead !== null) {
        pattern = `^${pattern.slice(lookahead[0].length)}`;
        out.minLength = Math.max(Number(lookahead[1]), (source.minLength as number | undefined) ?? 0);
        out.maxLength = Math.min(Number(lookahead[2]), (source.maxLength as number | undefined) ?? Infinity);
      }
      if (/\(\?[=!<]/.test(pattern)) throw new Error(`${path}: pattern ${pattern} uses a look-around, which the API server's regexp (RE2) lacks`);
      out.pattern = pattern;
    } else throw new Error(`${path}: keyword ${key} has no translation to a CRD schema`);
  }
  if (out.type === undefined) {
    const values = out.enum as unknown[] | undefined;
    if (values === undefined || !values.every((v) => typeof v === 'string')) throw new Error(`${path}: a structural schema needs a type`);
    out.type = 'string';
  }
  if (out['x-kubernetes-list-type'] === 'set' && ['object', 'array'].includes((out.items as JsonSchema | undefined)?.type as string)) {
    throw new Error(`${path}: uniqueItems on items that are not scalars has no CRD equivalent`);
  }
  return out;
}

/** The spec's schema: the AD document's, without its read-only fields. */
function specSchema(): JsonSchema {
  const properties = Object.fromEntries(Object.entries(adSchema.properties).filter(([name]) => !READ_ONLY_DOCUMENT_FIELDS.includes(name)));
  return {
    description: 'The desired state of the simulated Active Directory every node process watching this object applies to its nodes: the node file\'s `domains:` section and the health of the nodes\' CCG plugins (schemas/active-directory.schema.json, as `cri-winsim ad apply -f` takes it). A node file\'s computer account (WINNODE1$) stands for each simulated node\'s own account, as with `cri-winsim node --nodes`.',
    ...structuralSchema({ type: 'object', properties, required: adSchema.required }, 'active-directory.schema.json', '#/spec'),
  };
}

/** Our own: one entry per node process, written by that process only (merge patch of its key). */
const STATUS_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'What the node processes did with the spec: one entry per process, under the name of its first node.',
  properties: {
    nodeProcesses: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['nodeCount', 'lastNode', 'observedGeneration', 'result', 'lastUpdateTime'],
        properties: {
          nodeCount: { type: 'integer', minimum: 1, description: 'Simulated nodes in the process.' },
          lastNode: { type: 'string', description: 'The last of its nodes (the first is the key).' },
          observedGeneration: { type: 'integer', description: 'metadata.generation of the spec the process last read.' },
          appliedGeneration: { type: 'integer', description: 'metadata.generation of the spec its nodes run.' },
          result: { type: 'string', enum: ['Applied', 'Rejected'], description: 'Rejected: the spec broke a rule the schema cannot express; the nodes kept what they had.' },
          message: { type: 'string', description: 'Why the spec was rejected, naming the field.' },
          lastUpdateTime: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
};

/** The CustomResourceDefinition of SimulatedDomain (examples/cluster-mode/domain-crd.yaml). */
export function simulatedDomainCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${DOMAIN_PLURAL}.${DOMAIN_GROUP}` },
    spec: {
      group: DOMAIN_GROUP,
      scope: 'Cluster',
      names: { kind: DOMAIN_KIND, listKind: `${DOMAIN_KIND}List`, plural: DOMAIN_PLURAL, singular: 'simulateddomain', shortNames: ['sdom'] },
      versions: [
        {
          name: DOMAIN_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Domain', type: 'string', jsonPath: '.spec.domains[0].dnsName', description: 'The first domain' },
            { name: 'Generation', type: 'integer', jsonPath: '.metadata.generation', description: 'The spec\'s generation (the node processes report the one they applied in status)' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'The simulated Active Directory shared by the cri-winsim nodes of a cluster (docs/node-mode.md, "The domain as a cluster resource").',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: specSchema(),
                status: STATUS_SCHEMA,
              },
            },
          },
        },
      ],
    },
  };
}
