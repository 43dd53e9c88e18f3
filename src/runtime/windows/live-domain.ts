import adSchema from '../../../schemas/active-directory.schema.json' with { type: 'json' };
import nodeSchema from '../../../schemas/node.schema.json' with { type: 'json' };
import { deepFreeze } from '../../deep-freeze.js';
import { RuntimeError } from '../errors.js';
import { checkNodeFileConsistency } from './node-directory.js';
import type { DomainSource, DomainSpec, NodeFile } from './node-file.js';
import { compileSchema, firstViolation } from './schema-validation.js';

/** The health of a node's CCG plugin as the live state says (a node's plugin is node.ccgPlugin). */
export interface CcgPluginState {
  pluginGuid: string;
  healthy: boolean;
}

/**
 * The desired state of the simulated AD (schemas/active-directory.schema.json): the node file's
 * `domains:` section and the CCG plugins' health. `generation`, `source` and `appliedAt` are what
 * `ad get` adds; given back, `generation` must still be the current one.
 */
export interface ActiveDirectoryDocument {
  domains: DomainSpec[];
  ccgPlugins?: CcgPluginState[];
  generation?: number;
  source?: string;
  appliedAt?: string;
}

/** One version of the domain: frozen, replaced whole by `apply`. */
export interface DomainState {
  /** 1 for the node file's domains at the first start; +1 for every apply. */
  readonly generation: number;
  readonly domains: readonly DomainSpec[];
  readonly ccgPlugins: readonly CcgPluginState[];
  /** Where it came from: `node.yaml`, `embedded default node`, the file `ad apply -f` named, a scenario step. */
  readonly source: string;
  /** When it was applied, milliseconds since the epoch. */
  readonly appliedAtMs: number;
}

const validateDocument = compileSchema<ActiveDirectoryDocument>(adSchema, [nodeSchema]);

function documentError(source: string, path: string, reason: string): RuntimeError {
  return new RuntimeError('InvalidArgument', `${source}: ${path === '' ? '(top level)' : path}: ${reason}`);
}

/**
 * The simulated Active Directory of one runtime, live: the state every identity operation reads at
 * the moment it runs (NodeDirectory reads its domains here), changed only through `apply`, which
 * checks the whole desired document first and then replaces the state in one assignment. Each
 * change gets the next generation; listeners (the metadata store, metrics, logs) hear of it.
 */
export class LiveDomain implements DomainSource {
  private state: DomainState;
  private readonly listeners = new Set<(state: DomainState) => void>();

  /** `node`: the node the domain is seen from (its membership and CCG plugin must stay valid). */
  constructor(
    private readonly node: NodeFile['node'],
    initial: { domains: readonly DomainSpec[]; source: string },
    private readonly now: () => number = Date.now,
  ) {
    this.state = deepFreeze({ generation: 1, domains: structuredClone(initial.domains) as DomainSpec[], ccgPlugins: [], source: initial.source, appliedAtMs: now() });
  }

  /** The current state (frozen; the next apply replaces it, never changes it). */
  get current(): DomainState {
    return this.state;
  }

  get generation(): number {
    return this.state.generation;
  }

  get domains(): readonly DomainSpec[] {
    return this.state.domains;
  }

  ccgPluginHealthy(pluginGuid: string): boolean | undefined {
    const guid = pluginGuid.toLowerCase();
    return this.state.ccgPlugins.find((p) => p.pluginGuid.toLowerCase() === guid)?.healthy;
  }

  /**
   * Checks `desired` (a parsed AD document) and makes it the domain's state, or throws an
   * InvalidArgument naming `source` and the field (`ad.yaml: domains[0].sid: …`) and changes
   * nothing. A `generation` other than the current one is refused (Aborted): someone applied in
   * between. Returns the new state.
   */
  apply(desired: unknown, source: string): DomainState {
    const document = checkDocument(desired, source, this.node);
    if (document.generation !== undefined && document.generation !== this.state.generation) {
      throw new RuntimeError('Aborted', `${source}: generation: the domain is at generation ${this.state.generation}, not ${document.generation}: it changed since it was read (ad get again, or leave generation out)`);
    }
    return this.replace({
      generation: this.state.generation + 1,
      domains: structuredClone(document.domains),
      ccgPlugins: structuredClone(document.ccgPlugins ?? []),
      source,
      appliedAtMs: this.now(),
    });
  }

  /** A state the metadata store kept (recovery): checked as an apply is, generation kept. */
  restore(stored: { generation: number; document: unknown; source: string; appliedAtMs: number }): DomainState {
    const document = checkDocument(stored.document, `stored domain (generation ${stored.generation})`, this.node);
    return this.replace({ generation: stored.generation, domains: document.domains, ccgPlugins: document.ccgPlugins ?? [], source: stored.source, appliedAtMs: stored.appliedAtMs });
  }

  /** Told after every change, with the new state; returns the unsubscribe function. */
  onChange(listener: (state: DomainState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private replace(next: DomainState): DomainState {
    this.state = deepFreeze(next);
    for (const listener of this.listeners) listener(this.state);
    return this.state;
  }
}

/** The document of a state, as `ad get` shows it and the metadata store keeps it. */
export function domainDocument(state: DomainState): ActiveDirectoryDocument {
  return {
    generation: state.generation,
    source: state.source,
    appliedAt: new Date(state.appliedAtMs).toISOString(),
    domains: structuredClone(state.domains) as DomainSpec[],
    ...(state.ccgPlugins.length === 0 ? {} : { ccgPlugins: structuredClone(state.ccgPlugins) as CcgPluginState[] }),
  };
}

/** Schema (the node file's for `domains`), then the node file's cross-field rules with this node. */
function checkDocument(desired: unknown, source: string, node: NodeFile['node']): ActiveDirectoryDocument {
  const violation = firstViolation(validateDocument, desired);
  if (violation !== undefined) {
    const got = violation.value !== undefined && typeof violation.value !== 'object' ? ` (got ${JSON.stringify(violation.value)})` : '';
    throw documentError(source, violation.path, `${violation.reason}${got}`);
  }
  const document = desired as ActiveDirectoryDocument;
  checkNodeFileConsistency({ node, domains: document.domains }, source);
  return document;
}
