/**
 * The domain controller of a node process: ONE list+watch of the SimulatedDomain resource
 * (domain-resource.ts) for all the simulated nodes of the process, which applies the object's spec
 * to each node's live domain (`runtime.domain.apply`) and reports the outcome on the object's
 * status with one write per process, under the process's first node name.
 *
 * What a node follows:
 * - the object exists: its spec, as this node reads it (the node file's computer account standing
 *   for the node's own). A spec the live domain refuses (a rule the API server's schema cannot
 *   express, such as node.domain not among the domains) changes nothing on any node; status says
 *   Rejected with the reason, and the log says it too.
 * - no such object (never created, or deleted): each node whose domain came from the object goes
 *   back to its node file's domains; a node whose domain was set otherwise (`cri-winsim ad apply`
 *   on its socket) keeps it. A change made with `ad apply` while the object exists lasts until the
 *   object's spec changes or the process restarts.
 * - the resource type is not installed (404) or not allowed (403): the nodes keep what they have;
 *   the controller keeps trying, quietly, so installing the CRD later is picked up.
 */
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../log.js';
import type { ActiveDirectoryDocument, DomainState } from '../../runtime/windows/live-domain.js';
import { isGone, isNotFound, type ApiClient, type WatchEvent } from './api-client.js';
import { DOMAIN_KIND, domainResourcePath, type DomainProcessStatus, type SimulatedDomain, type SimulatedDomainSpec } from './domain-resource.js';
import { errorText } from './node-controller.js';

/** What the controller needs of one simulated node. */
export interface DomainNode {
  readonly name: string;
  /** The node runtime's live domain (NodeRuntime.domain). */
  readonly domain: { readonly current: DomainState; apply(desired: unknown, source: string): DomainState };
  /** The resource's spec as this node reads it. */
  view(spec: SimulatedDomainSpec): ActiveDirectoryDocument;
  /** The node file's domains, what the node returns to when the resource is gone, and their source. */
  readonly nodeFile: { readonly document: ActiveDirectoryDocument; readonly source: string };
}

/** The `source` a node's domain has when it came from the resource `name`. */
export const resourceSource = (name: string): string => `${DOMAIN_KIND}/${name}`;

/** JSON with object keys sorted: equal documents give equal text whatever order their keys came in. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/** Whether a node's state already is `document` (domains and CCG plugins; generation and source aside). */
export function stateEquals(state: DomainState, document: ActiveDirectoryDocument): boolean {
  return canonicalJson(state.domains) === canonicalJson(document.domains) && canonicalJson(state.ccgPlugins) === canonicalJson(document.ccgPlugins ?? []);
}

/**
 * What to do to one node: `desired` is the resource's spec as the node reads it, or undefined
 * when there is no such object. Pure: the rules of the file comment, as a table.
 */
export function domainAction(state: DomainState, source: string, desired: ActiveDirectoryDocument | undefined): 'apply' | 'revert' | 'keep' {
  if (desired === undefined) return state.source === source ? 'revert' : 'keep';
  return state.source === source && stateEquals(state, desired) ? 'keep' : 'apply';
}

export interface DomainOutcome {
  result: 'Applied' | 'Rejected';
  /** Nodes whose domain changed. */
  changed: number;
  message?: string;
}

/**
 * Brings every node to the resource's spec (`spec`), or back to its node file (`spec`
 * undefined). The first refusal stops: the nodes before it are changed only when the refusal comes
 * after the first node changed, which cannot happen for rules every node shares (the message then
 * says how many were). Every `batch` nodes it lets other work run (a thousand nodes' leases and
 * pods must not wait for the whole process's domain change).
 */
export async function applyToNodes(nodes: readonly DomainNode[], name: string, spec: SimulatedDomainSpec | undefined, batch = 50): Promise<DomainOutcome> {
  const source = resourceSource(name);
  let changed = 0;
  for (const [i, node] of nodes.entries()) {
    if (i > 0 && i % batch === 0) await nextTurn();
    const desired = spec === undefined ? undefined : node.view(spec);
    const action = domainAction(node.domain.current, source, desired);
    if (action === 'keep') continue;
    try {
      if (action === 'revert') node.domain.apply(node.nodeFile.document, `${node.nodeFile.source} (${source} is gone)`);
      else node.domain.apply(desired, source);
      changed++;
    } catch (err) {
      const reason = (err as Error).message;
      return { result: 'Rejected', changed, message: changed === 0 ? reason : `applied to ${changed} of ${nodes.length} nodes, then node ${node.name}: ${reason}` };
    }
  }
  return { result: 'Applied', changed };
}

export interface DomainControllerOptions {
  readonly watchTimeoutSeconds?: number;
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
  readonly now?: () => number;
}

export class DomainController {
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  /** `uid/generation` of the object last handled, `absent`, or undefined before the first list. */
  private handled: string | undefined;
  private appliedGeneration: number | undefined;
  private lastStatus: string | undefined;
  private statusWrites: Promise<void> = Promise.resolve();
  /** Objects are handled one after the other, in the order the watch saw them. */
  private handling: Promise<void> = Promise.resolve();
  private readonly source: string;
  private readonly path: string;

  constructor(
    private readonly api: ApiClient,
    /** The object's name (`--domain-resource`). */
    private readonly name: string,
    private readonly nodes: readonly DomainNode[],
    private readonly logger: Logger,
    private readonly options: DomainControllerOptions = {},
  ) {
    if (nodes.length === 0) throw new Error('a domain controller needs at least one node');
    this.source = resourceSource(name);
    this.path = domainResourcePath();
  }

  /** The status key of this process: its first node's name. */
  get statusKey(): string {
    return this.nodes[0]!.name;
  }

  /** Starts watching; resolves after the first list, or its first failure (the nodes then keep their domain). */
  start(): Promise<void> {
    let firstDone!: () => void;
    const first = new Promise<void>((resolve) => (firstDone = resolve));
    this.running = this.loop(firstDone);
    return first;
  }

  /** Stops the watch and takes this process's entry off the status (best effort, bounded). */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
    await this.handling;
    await this.statusWrites;
    if (this.lastStatus === undefined) return;
    const patch = { status: { nodeProcesses: { [this.statusKey]: null } } };
    await Promise.race([
      this.api.request('PATCH', `${this.path}/${encodeURIComponent(this.name)}/status`, patch, 'application/merge-patch+json').catch(() => undefined),
      sleep(2_000),
    ]);
  }

  private enqueue(object: SimulatedDomain | undefined): Promise<void> {
    this.handling = this.handling.then(() => this.handle(object)).catch((err: unknown) => this.logger.error({ resource: this.source, err: errorText(err) }, 'applying the domain resource failed'));
    return this.handling;
  }

  private async handle(object: SimulatedDomain | undefined): Promise<void> {
    const key = object === undefined ? 'absent' : `${object.metadata.uid ?? ''}/${object.metadata.generation ?? 0}`;
    // Status writes (ours and other processes') come back as MODIFIED with the same generation.
    if (key === this.handled) return;
    if (object !== undefined && this.handled !== undefined && this.handled.split('/')[0] !== object.metadata.uid) this.appliedGeneration = undefined;
    this.handled = key;
    const outcome = await applyToNodes(this.nodes, this.name, object?.spec);
    if (object === undefined) {
      this.appliedGeneration = undefined;
      this.lastStatus = undefined;
      if (outcome.changed > 0) this.logger.info({ resource: this.source, nodes: outcome.changed }, 'domain resource is gone: nodes back to their node file\'s domain');
      if (outcome.result === 'Rejected') this.logger.error({ resource: this.source, err: outcome.message }, 'returning to the node file\'s domain failed');
      return;
    }
    const generation = object.metadata.generation ?? 0;
    if (outcome.result === 'Applied') {
      this.appliedGeneration = generation;
      if (outcome.changed > 0) this.logger.info({ resource: this.source, generation, nodes: outcome.changed }, 'domain resource applied');
    } else {
      this.logger.warn({ resource: this.source, generation, err: outcome.message }, 'domain resource rejected; the nodes keep their domain');
    }
    this.writeStatus({
      nodeCount: this.nodes.length,
      lastNode: this.nodes[this.nodes.length - 1]!.name,
      observedGeneration: generation,
      ...(this.appliedGeneration === undefined ? {} : { appliedGeneration: this.appliedGeneration }),
      result: outcome.result,
      ...(outcome.message === undefined ? {} : { message: outcome.message }),
      lastUpdateTime: new Date((this.options.now ?? Date.now)()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
  }

  /** One merge patch of this process's entry, when it says something new; in order, retried a few times. */
  private writeStatus(entry: DomainProcessStatus): void {
    const { lastUpdateTime: _time, ...meaning } = entry;
    const text = canonicalJson(meaning);
    if (text === this.lastStatus) return;
    this.lastStatus = text;
    const patch = { status: { nodeProcesses: { [this.statusKey]: entry } } };
    const url = `${this.path}/${encodeURIComponent(this.name)}/status`;
    this.statusWrites = this.statusWrites.then(async () => {
      for (let attempt = 1; attempt <= 5 && !this.abort.signal.aborted && this.lastStatus === text; attempt++) {
        try {
          await this.api.request('PATCH', url, patch, 'application/merge-patch+json');
          return;
        } catch (err) {
          if (isNotFound(err)) return;
          this.logger.warn({ resource: this.source, attempt, err: errorText(err) }, 'writing the domain resource status failed');
          await sleep(500 * attempt, undefined, { signal: this.abort.signal }).catch(() => undefined);
        }
      }
    });
  }

  private async loop(firstDone: () => void): Promise<void> {
    const signal = this.abort.signal;
    const selector = encodeURIComponent(`metadata.name=${this.name}`);
    let resourceVersion = '';
    let failures = 0;
    let reported = 0;
    while (!signal.aborted) {
      try {
        if (resourceVersion === '') {
          const list = await this.api.get<{ metadata?: { resourceVersion?: string }; items: SimulatedDomain[] }>(`${this.path}?fieldSelector=${selector}`);
          await this.enqueue(list.items[0]);
          resourceVersion = list.metadata?.resourceVersion ?? '';
          firstDone();
          if (reported !== 0) this.logger.info({ resource: this.source }, 'domain resource watched');
          reported = 0;
        }
        let gone = false;
        const timeout = this.options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
        await this.api.watch<SimulatedDomain>(
          `${this.path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=${timeout}&fieldSelector=${selector}&resourceVersion=${encodeURIComponent(resourceVersion)}`,
          (event: WatchEvent<SimulatedDomain>) => {
            if (event.type === 'ERROR') {
              const status = event.object as unknown as { code?: number; message?: string };
              if (status.code === 410) gone = true;
              else this.logger.warn({ code: status.code, message: status.message }, 'domain resource watch error');
              return;
            }
            resourceVersion = event.object.metadata.resourceVersion ?? resourceVersion;
            if (event.type === 'BOOKMARK') return;
            void this.enqueue(event.type === 'DELETED' ? undefined : event.object);
          },
          signal,
        );
        if (gone) resourceVersion = '';
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        firstDone();
        if (isGone(err)) {
          resourceVersion = '';
          continue;
        }
        resourceVersion = '';
        failures++;
        const status = (err as { status?: number }).status;
        // Not installed (404) or not allowed (403) is said once, quietly (a cluster that does not use
        // the resource is not misconfigured); the nodes keep their domain meanwhile.
        const kind = status === 404 ? 404 : status === 403 ? 403 : -1;
        if (kind !== reported) {
          reported = kind;
          if (kind === 404) this.logger.info({ resource: this.source }, `the ${DOMAIN_KIND} resource type is not installed (examples/cluster-mode/domain-crd.yaml); the nodes keep their domain`);
          else if (kind === 403) this.logger.info({ resource: this.source, err: errorText(err) }, `not allowed to watch ${DOMAIN_KIND} resources (examples/cluster-mode/rbac.yaml); the nodes keep their domain`);
        }
        if (kind === -1) this.logger.warn({ resource: this.source, attempt: failures, err: errorText(err) }, 'domain resource list/watch failed, will retry');
        const delay = Math.min((this.options.retryInitialMs ?? 500) * 2 ** (failures - 1), this.options.retryMaxMs ?? 30_000);
        await sleep(delay, undefined, { signal }).catch(() => undefined);
      }
    }
  }
}
