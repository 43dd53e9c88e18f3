import { expect } from 'chai';
import { RuntimeError } from '../../src/runtime/errors.js';
import { IdPrefixIndex } from '../../src/runtime/store/id-index.js';
import { IdMultiMap } from '../../src/runtime/store/id-multimap.js';
import { ContainerFiles } from '../../src/emulator/container-files.js';
import { ProcessTable } from '../../src/emulator/process-table.js';
import { CONTAINER_FIELD_NAMES, ContainerRecord, ContainerState } from '../../src/runtime/store/container-store.js';
import { CONTAINER_FIELDS, decodeStored, encodeContainer, type StoredContainer } from '../../src/runtime/store/record-codec.js';
import { SandboxState, SandboxStore, type SandboxRecord } from '../../src/runtime/store/sandbox-store.js';
import { BUSYBOX, createContainer, openRuntime, pull, rejection, runSandbox, type RuntimeFixture } from './helpers.js';

function thrown(fn: () => unknown): RuntimeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof RuntimeError) return err;
    throw err;
  }
  throw new Error('expected a RuntimeError');
}

describe('id prefix index', () => {
  const index = new IdPrefixIndex('container');
  for (const id of ['abc123', 'abd456', 'ffff00', 'abc999']) index.add(id);

  it('resolves a full id and a unique prefix', () => {
    expect(index.resolve('ffff00')).to.equal('ffff00');
    expect(index.resolve('abd')).to.equal('abd456');
    expect(index.resolve('f')).to.equal('ffff00');
  });

  it('finds nothing for an unknown prefix', () => {
    expect(index.resolve('0')).to.equal(undefined);
    expect(index.resolve('abc1234')).to.equal(undefined);
  });

  it('refuses an ambiguous prefix and an empty id with InvalidArgument', () => {
    const ambiguous = thrown(() => index.resolve('abc'));
    expect(ambiguous.code).to.equal('InvalidArgument');
    expect(ambiguous.message).to.contain('"abc" is ambiguous');
    expect(thrown(() => index.resolve('')).message).to.equal('container id must not be empty');
  });

  it('forgets deleted ids', () => {
    const local = new IdPrefixIndex('x');
    local.add('aa1');
    local.add('aa2');
    local.delete('aa2');
    expect(local.resolve('aa')).to.equal('aa1');
    expect(local.size).to.equal(1);
  });
});

describe('id multimap (label and group indexes)', () => {
  it('keeps a key with one id as that id and grows and shrinks through a set', () => {
    const map = new IdMultiMap<string>();
    expect(map.get('pod=a')).to.equal(undefined);
    map.add('pod=a', 'c1');
    map.add('pod=a', 'c1');
    expect([...(map.get('pod=a') ?? [])]).to.deep.equal(['c1']);
    map.add('pod=a', 'c2');
    map.add('pod=a', 'c3');
    expect([...(map.get('pod=a') ?? [])].sort()).to.deep.equal(['c1', 'c2', 'c3']);
    expect(map.count('pod=a')).to.equal(3);
    map.delete('pod=a', 'c2');
    map.delete('pod=a', 'c1');
    expect([...(map.get('pod=a') ?? [])]).to.deep.equal(['c3']);
    map.delete('pod=a', 'nobody');
    expect(map.count('pod=a')).to.equal(1);
    map.delete('pod=a', 'c3');
    expect(map.get('pod=a')).to.equal(undefined);
    expect(map.count('pod=a')).to.equal(0);
  });
});

describe('container files (copy on write over the pod files)', () => {
  it('reads the pod files, builds them once on first use, and keeps writes to the container', () => {
    let builds = 0;
    const pod = { hostname: 'web-0' };
    const build = (p: typeof pod): Map<string, string> => {
      builds++;
      return new Map([['/etc/hostname', `${p.hostname}\n`]]);
    };
    const a = ContainerFiles.forPod(pod, build);
    const b = ContainerFiles.forPod(pod, build);
    expect(builds).to.equal(0);
    expect(a.get('/etc/hostname')).to.equal('web-0\n');
    expect(builds).to.equal(1);
    a.set('/etc/hostname', 'changed\n').set('/tmp/x', '');
    expect(a.get('/etc/hostname')).to.equal('changed\n');
    expect(a.has('/tmp/x')).to.equal(true);
    expect([...a.keys()]).to.deep.equal(['/etc/hostname', '/tmp/x']);
    expect(b.get('/etc/hostname')).to.equal('web-0\n');
    expect(b.has('/tmp/x')).to.equal(false);
  });
});

describe('sandbox store state machine', () => {
  const record = (id: string): SandboxRecord => ({
    id,
    name: id,
    config: null as never,
    labels: { app: id },
    annotations: {},
    runtimeHandler: '',
    os: 'linux',
    createdAtNanos: 1n,
    hostname: id,
    ip: '10.0.0.1',
    pid: 1,
    logDirectory: '/tmp',
    ociSpec: null as never,
    platform: {},
    processes: new ProcessTable(),
    resources: undefined,
    status: { state: SandboxState.READY, stoppedAtNanos: 0n },
  });

  it('allows READY -> NOTREADY and refuses NOTREADY -> READY with FailedPrecondition', () => {
    const store = new SandboxStore();
    store.add(record('s1'));
    store.updateStatus('s1', (s) => ({ ...s, state: SandboxState.NOTREADY }));
    const err = thrown(() => store.updateStatus('s1', (s) => ({ ...s, state: SandboxState.READY })));
    expect(err.code).to.equal('FailedPrecondition');
    expect(err.message).to.equal('pod sandbox s1 cannot go from SANDBOX_NOTREADY to SANDBOX_READY');
    expect(store.list({ state: SandboxState.READY })).to.deep.equal([]);
    expect(store.list({ state: SandboxState.NOTREADY }).map((s) => s.id)).to.deep.equal(['s1']);
  });

  it('notifies listeners of every status change', () => {
    const store = new SandboxStore();
    store.add(record('s2'));
    const seen: number[] = [];
    const off = store.onStatusChange((c) => seen.push(c.current.state));
    store.updateStatus('s2', (s) => ({ ...s, state: SandboxState.NOTREADY }));
    off();
    expect(seen).to.deep.equal([SandboxState.NOTREADY]);
  });

  describe('list views', () => {
    const build = (s: SandboxRecord) => ({ id: s.id, state: s.status.state });
    const ids = (views: readonly { id?: string }[]) => views.map((v) => v.id);

    it('returns the same frozen array for every unfiltered list until a record is added, removed or updated', () => {
      const store = new SandboxStore();
      store.add(record('a1'));
      store.add(record('b2'));
      const first = store.listViews({}, build);
      expect(ids(first)).to.deep.equal(['a1', 'b2']);
      expect(Object.isFrozen(first)).to.equal(true);
      // An empty id, group or selector sets no criterion: the same unfiltered list.
      expect(store.listViews({ id: '', group: '', labelSelector: {} }, build)).to.equal(first);

      store.add(record('c3'));
      const added = store.listViews({}, build);
      expect(added).to.not.equal(first);
      expect(ids(added)).to.deep.equal(['a1', 'b2', 'c3']);
      expect(added[0], 'an unchanged record keeps its view').to.equal(first[0]);

      store.updateStatus('b2', (s) => ({ ...s, state: SandboxState.NOTREADY }));
      const updated = store.listViews({}, build);
      expect(updated).to.not.equal(added);
      expect(updated.map((v) => v.state)).to.deep.equal([SandboxState.READY, SandboxState.NOTREADY, SandboxState.READY]);
      expect(ids(first), 'an array handed out earlier is left as it was').to.deep.equal(['a1', 'b2']);

      store.delete('a1');
      expect(ids(store.listViews({}, build))).to.deep.equal(['b2', 'c3']);
      store.delete('b2');
      store.delete('c3');
      expect(store.listViews({}, build)).to.deep.equal([]);
    });

    it('builds a filtered list fresh each time, of the same view objects, in the order of the full list', () => {
      const store = new SandboxStore();
      for (const id of ['a1', 'a2', 'b3']) store.add(record(id));
      store.updateStatus('a2', (s) => ({ ...s, state: SandboxState.NOTREADY }));
      const all = store.listViews({}, build);
      const byPrefix = store.listViews({ id: 'b' }, build);
      expect(ids(byPrefix)).to.deep.equal(['b3']);
      expect(store.listViews({ id: 'b' }, build)).to.not.equal(byPrefix);
      expect(byPrefix[0]).to.equal(all[2]);
      expect(ids(store.listViews({ state: SandboxState.READY }, build))).to.deep.equal(['a1', 'b3']);
      expect(ids(store.listViews({ labelSelector: { app: 'b3' } }, build))).to.deep.equal(['b3']);
    });

  });
});

describe('runtime: list filters and id prefixes', () => {
  let fx: RuntimeFixture;
  beforeEach(async () => {
    fx = await openRuntime();
    await pull(fx.runtime, BUSYBOX);
  });
  afterEach(async () => fx.close());

  it('filters containers by id prefix, state, sandbox and labels, alone and combined', async () => {
    const a = await runSandbox(fx.runtime, { labels: { pod: 'a' } });
    const b = await runSandbox(fx.runtime, { labels: { pod: 'b' } });
    const a1 = await createContainer(fx.runtime, a, { command: ['top'], labels: { role: 'web', tier: '1' } });
    const a2 = await createContainer(fx.runtime, a, { command: ['top'], labels: { role: 'db' } });
    const b1 = await createContainer(fx.runtime, b, { command: ['top'], labels: { role: 'web', tier: '2' } });
    await fx.runtime.startContainer({ container_id: a1 });
    await fx.runtime.startContainer({ container_id: b1 });
    const list = async (filter: Record<string, unknown>) =>
      ((await fx.runtime.listContainers({ filter: { id: '', state: null, pod_sandbox_id: '', label_selector: {}, ...filter } })).containers ?? [])
        .map((c) => c.id)
        .sort();
    expect(await list({})).to.deep.equal([a1, a2, b1].sort());
    expect(await list({ id: a2.slice(0, 12) })).to.deep.equal([a2]);
    expect(await list({ state: { state: ContainerState.RUNNING } })).to.deep.equal([a1, b1].sort());
    expect(await list({ state: { state: ContainerState.CREATED } })).to.deep.equal([a2]);
    expect(await list({ pod_sandbox_id: a.id })).to.deep.equal([a1, a2].sort());
    expect(await list({ pod_sandbox_id: b.id.slice(0, 10) })).to.deep.equal([b1]);
    expect(await list({ label_selector: { role: 'web' } })).to.deep.equal([a1, b1].sort());
    expect(await list({ label_selector: { role: 'web', tier: '2' } })).to.deep.equal([b1]);
    expect(await list({ label_selector: { role: 'web' }, pod_sandbox_id: a.id, state: { state: ContainerState.RUNNING } })).to.deep.equal([a1]);
    expect(await list({ label_selector: { role: 'cache' } })).to.deep.equal([]);
    expect(await list({ id: 'zz' })).to.deep.equal([]);
  });

  it('filters sandboxes by id prefix, state and labels', async () => {
    const a = await runSandbox(fx.runtime, { labels: { pod: 'a', env: 'prod' } });
    const b = await runSandbox(fx.runtime, { labels: { pod: 'b', env: 'prod' } });
    await fx.runtime.stopPodSandbox({ pod_sandbox_id: b.id });
    const list = async (filter: Record<string, unknown>) =>
      ((await fx.runtime.listPodSandbox({ filter: { id: '', state: null, label_selector: {}, ...filter } })).items ?? []).map((s) => s.id).sort();
    expect(await list({ label_selector: { env: 'prod' } })).to.deep.equal([a.id, b.id].sort());
    expect(await list({ state: { state: SandboxState.READY } })).to.deep.equal([a.id]);
    expect(await list({ state: { state: SandboxState.NOTREADY }, label_selector: { pod: 'b' } })).to.deep.equal([b.id]);
    expect(await list({ id: a.id.slice(0, 8) })).to.deep.equal([a.id]);
  });

  it('accepts a unique id prefix in every RPC that takes an id, and names the id when it is unknown', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['top'] });
    await fx.runtime.startContainer({ container_id: id.slice(0, 8) });
    expect((await fx.runtime.containerStatus({ container_id: id.slice(0, 6), verbose: false })).status?.id).to.equal(id);
    expect((await fx.runtime.podSandboxStatus({ pod_sandbox_id: sb.id.slice(0, 6), verbose: false })).status?.id).to.equal(sb.id);
    const unknown = await rejection(fx.runtime.containerStatus({ container_id: 'nonexistent', verbose: false }));
    expect(unknown.code).to.equal('NotFound');
    expect(unknown.message).to.equal('container "nonexistent" not found');
    const empty = await rejection(fx.runtime.containerStatus({ container_id: '', verbose: false }));
    expect(empty.code).to.equal('InvalidArgument');
    expect(empty.message).to.contain('container_id');
  });
});

describe('the stored form of a container', () => {
  let fx: RuntimeFixture;
  before(async () => {
    fx = await openRuntime();
    await pull(fx.runtime, BUSYBOX);
  });
  after(async () => fx.close());

  // Durable state already on disk holds these keys in this order (format 1): the field table may
  // grow at its end, never reorder.
  const STORED_KEYS = [
    'v', 'id', 'sandboxId', 'name', 'metadata', 'imageSpec', 'labels', 'annotations', 'imageName', 'imageId', 'imageRef',
    'imageConfig', 'os', 'createdAtNanos', 'logPath', 'runtimeOwnedLog', 'args', 'securityOptions', 'sharesPodPid',
    'resources', 'user', 'windowsIdentityDecided', 'config', 'status',
  ];

  it('keeps the keys of format 1 in their order, and reads back into an equal record', async () => {
    const sandbox = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sandbox, { command: ['sleep', '3600'], labels: { role: 'web' } });
    const ctx = fx.runtime.context;
    const record = ctx.containers.get(id)!;
    const encoded = encodeContainer(record, ctx.containers.configOf(record));
    // seccomp and credentialSpec are undefined here: JSON leaves them out.
    expect(Object.keys(JSON.parse(encoded) as object)).to.deep.equal(STORED_KEYS);
    const stored = decodeStored<StoredContainer>(id, encoded, CONTAINER_FIELDS);
    const back = new ContainerRecord(stored, record.sandbox, record.processes);
    for (const name of CONTAINER_FIELD_NAMES) expect(back[name], name).to.deep.equal(record[name]);
    back.status = stored.status;
    expect(encodeContainer(back, ctx.containers.configOf(record))).to.equal(encoded);
  });
});
