import { RuntimeError } from '../errors.js';
import { IdPrefixIndex } from './id-index.js';
import { IdMultiMap } from './id-multimap.js';
import { LabelIndex, matchesLabels } from './label-index.js';

/** What every stored record has: an id, immutable labels, and a status with a state. */
export interface StoredRecord<S extends { state: number }> {
  readonly id: string;
  readonly labels: Record<string, string>;
  status: S;
}

export interface StatusChange<R, S> {
  record: R;
  previous: S;
  current: S;
}

export interface RecordFilter {
  id?: string;
  state?: number;
  labelSelector?: Record<string, string>;
  /** Only records in this group (containers: the pod sandbox id). */
  group?: string;
}

/**
 * A store of records indexed by id (with prefix lookup), state, label pairs and an optional
 * group key. Status changes go through `updateStatus`, which checks the state transition
 * against the table given at construction and notifies listeners.
 *
 * `V` is the record's list view (the CRI message List* returns). The store keeps it per record
 * and hands out the same object until the record changes, so the gRPC edge can cache what it
 * encoded by object identity; everything else of a record the view shows is immutable.
 */
export class RecordStore<S extends { state: number }, R extends StoredRecord<S>, V extends object = object> {
  private readonly byId = new Map<string, R>();
  private readonly views = new WeakMap<R, V>();
  private readonly prefixes: IdPrefixIndex;
  private readonly labels = new LabelIndex();
  private readonly byState = new IdMultiMap<number>();
  private readonly byGroup = new IdMultiMap<string>();
  private readonly listeners = new Set<(change: StatusChange<R, S>) => void>();
  /** Told of every stored, changed and removed record (the metadata store's persistence). */
  private readonly recordListeners = new Set<(id: string, record: R | undefined) => void>();
  /** The views of the last unfiltered list; every add, delete and status update drops them. */
  private allViews: readonly V[] | undefined;

  constructor(
    private readonly kind: string,
    private readonly transitions: ReadonlyMap<number, ReadonlySet<number>>,
    private readonly stateName: (state: number) => string,
    private readonly groupOf: (record: R) => string | undefined = () => undefined,
  ) {
    this.prefixes = new IdPrefixIndex(kind);
  }

  get size(): number {
    return this.byId.size;
  }

  add(record: R): void {
    if (this.byId.has(record.id)) throw new RuntimeError('AlreadyExists', `${this.kind} ${record.id} already exists`);
    this.allViews = undefined;
    this.byId.set(record.id, record);
    this.prefixes.add(record.id);
    this.labels.add(record.id, record.labels);
    this.byState.add(record.status.state, record.id);
    const group = this.groupOf(record);
    if (group !== undefined) this.byGroup.add(group, record.id);
    this.touched(record);
  }

  delete(id: string): R | undefined {
    const record = this.byId.get(id);
    if (record === undefined) return undefined;
    this.allViews = undefined;
    this.byId.delete(id);
    this.views.delete(record);
    this.prefixes.delete(id);
    this.labels.delete(id, record.labels);
    this.byState.delete(record.status.state, id);
    const group = this.groupOf(record);
    if (group !== undefined) this.byGroup.delete(group, id);
    for (const listener of this.recordListeners) listener(id, undefined);
    return record;
  }

  get(id: string): R | undefined {
    return this.byId.get(id);
  }

  /** The record a full id or unique id prefix names, or undefined; ambiguous prefixes throw. */
  find(idOrPrefix: string): R | undefined {
    const id = this.prefixes.resolve(idOrPrefix);
    return id === undefined ? undefined : this.byId.get(id);
  }

  /** Like find, but a missing record is a NotFound error naming the id. */
  mustFind(idOrPrefix: string): R {
    const record = this.find(idOrPrefix);
    if (record === undefined) throw new RuntimeError('NotFound', `${this.kind} "${idOrPrefix}" not found`);
    return record;
  }

  /** Records of one group (e.g. the containers of a sandbox), from the group index. */
  inGroup(group: string): R[] {
    const ids = this.byGroup.get(group);
    return ids === undefined ? [] : [...ids].map((id) => this.byId.get(id) as R);
  }

  /**
   * Records matching every given criterion. Starts from the smallest candidate set the indexes
   * give (id prefix, group, state, rarest label pair) and checks the rest on those only.
   */
  list(filter: RecordFilter = {}): R[] {
    const sets: Iterable<string>[] = [];
    let smallest: { size: number; ids: Iterable<string> } | undefined;
    const consider = (ids: ReadonlySet<string> | undefined): void => {
      const set = ids ?? new Set<string>();
      sets.push(set);
      if (smallest === undefined || set.size < smallest.size) smallest = { size: set.size, ids: set };
    };
    if (filter.id !== undefined && filter.id !== '') {
      let id: string | undefined;
      try {
        id = this.prefixes.resolve(filter.id);
      } catch {
        id = undefined;
      }
      consider(new Set(id === undefined ? [] : [id]));
    }
    if (filter.group !== undefined && filter.group !== '') consider(this.byGroup.get(filter.group));
    if (filter.state !== undefined) consider(this.byState.get(filter.state));
    if (filter.labelSelector !== undefined && Object.keys(filter.labelSelector).length > 0) {
      consider(this.labels.candidates(filter.labelSelector));
    }
    const candidates = smallest === undefined ? this.byId.keys() : smallest.ids;
    const out: R[] = [];
    for (const id of candidates) {
      const record = this.byId.get(id);
      if (record === undefined) continue;
      if (filter.state !== undefined && record.status.state !== filter.state) continue;
      if (filter.group !== undefined && filter.group !== '' && this.groupOf(record) !== filter.group) continue;
      if (!matchesLabels(record.labels, filter.labelSelector)) continue;
      out.push(record);
    }
    if (filter.id !== undefined && filter.id !== '') return out.filter((r) => r.id.startsWith(filter.id as string));
    return out;
  }

  /**
   * The list views of the records matching filter (`list`, then `view` of each). An unfiltered
   * list is kept until the store changes: while no record was added, removed or updated, every
   * unfiltered list returns the same frozen array (a node's periodic relist of an unchanged set
   * costs nothing, and the gRPC edge can reuse the bytes it sent last time). `build` as in `view`:
   * one builder per store.
   */
  listViews(filter: RecordFilter, build: (record: R) => V): readonly V[] {
    if (!isUnfiltered(filter)) return this.list(filter).map((record) => this.view(record, build));
    if (this.allViews !== undefined) return this.allViews;
    const views = new Array<V>(this.byId.size);
    let i = 0;
    for (const record of this.byId.values()) views[i++] = this.view(record, build);
    this.allViews = Object.freeze(views);
    return this.allViews;
  }

  /**
   * The list view of a record, built by `build` on first use and then the same object until the
   * record's status changes (updateStatus drops it). `build` must depend only on the record's
   * immutable fields and its status. The view is frozen: callers share it.
   */
  view(record: R, build: (record: R) => V): V {
    let view = this.views.get(record);
    if (view === undefined) {
      view = Object.freeze(build(record));
      this.views.set(record, view);
    }
    return view;
  }

  /**
   * The one way a record's status changes. `change` gets the current status and returns the
   * next; a state change not allowed by the transition table is a FailedPrecondition error.
   */
  updateStatus(id: string, change: (current: Readonly<S>) => S): S {
    const record = this.byId.get(id);
    if (record === undefined) throw new RuntimeError('NotFound', `${this.kind} "${id}" not found`);
    const previous = record.status;
    const next = change(previous);
    if (next.state !== previous.state) {
      const allowed = this.transitions.get(previous.state);
      if (allowed === undefined || !allowed.has(next.state)) {
        throw new RuntimeError(
          'FailedPrecondition',
          `${this.kind} ${id} cannot go from ${this.stateName(previous.state)} to ${this.stateName(next.state)}`,
        );
      }
      this.byState.delete(previous.state, id);
      this.byState.add(next.state, id);
    }
    record.status = next;
    this.allViews = undefined;
    // The list view shows the status: the next list builds (and the edge encodes) it anew.
    this.views.delete(record);
    for (const listener of this.listeners) listener({ record, previous, current: next });
    this.touched(record);
    return next;
  }

  /** A stored record changed outside its status (resources, credential spec): persisted again. */
  touched(record: R): void {
    for (const listener of this.recordListeners) listener(record.id, record);
  }

  /** Calls listener with every record stored or changed, and with undefined once it is removed. */
  onRecordChange(listener: (id: string, record: R | undefined) => void): () => void {
    this.recordListeners.add(listener);
    return () => this.recordListeners.delete(listener);
  }

  /** Calls listener after every status update; returns the unsubscribe function. */
  onStatusChange(listener: (change: StatusChange<R, S>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  all(): IterableIterator<R> {
    return this.byId.values();
  }
}

/** Whether a filter sets no criterion (an empty id or group, or an empty selector, sets none). */
function isUnfiltered(filter: RecordFilter): boolean {
  return (
    (filter.id === undefined || filter.id === '') &&
    filter.state === undefined &&
    (filter.group === undefined || filter.group === '') &&
    (filter.labelSelector === undefined || Object.keys(filter.labelSelector).length === 0)
  );
}

/** Reserved names (the CRI requires a sandbox or container name to be unique until removal). */
export class NameRegistry {
  private readonly owners = new Map<string, string>();

  constructor(private readonly kind: string) {}

  reserve(name: string, id: string): void {
    const owner = this.owners.get(name);
    if (owner !== undefined && owner !== id) {
      throw new RuntimeError('AlreadyExists', `${this.kind} name "${name}" is reserved for ${owner}`);
    }
    this.owners.set(name, id);
  }

  release(name: string, id: string): void {
    if (this.owners.get(name) === id) this.owners.delete(name);
  }
}
