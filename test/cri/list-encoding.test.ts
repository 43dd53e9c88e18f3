import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Container } from '../../src/generated/runtime/v1/Container.js';
import type { PodSandbox } from '../../src/generated/runtime/v1/PodSandbox.js';
import { encodedFromCache, withCachedElementEncoding, withCachedListEncoding } from '../../src/cri/list-encoding.js';
import { createCriClient, runtimeServiceDefinition, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { CriServer } from '../../src/cri/server.js';
import { NodeRuntime } from '../../src/runtime/node-runtime.js';
import { ContainerState } from '../../src/runtime/store/container-store.js';
import { SandboxState } from '../../src/runtime/store/sandbox-store.js';
import { createContainer, pull, runSandbox, BUSYBOX } from '../runtime/helpers.js';
import { prng } from '../support/seeded-random.js';

const INT64_MAX = '9223372036854775807';
const INT64_MIN = '-9223372036854775808';

function randomCases(seed: number) {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  const text = (): string => {
    const alphabets = ['abcdef0123456789', 'ABC xyz-_./:', 'äöü€日本語', '\u0000\n\t"\\', '🙂'];
    let out = '';
    const length = pick([0, 1, 7, 64, 300]);
    for (let i = 0; i < length; i++) out += pick([...pick(alphabets)]);
    return out;
  };
  const map = (): Record<string, string> => {
    const out: Record<string, string> = {};
    const size = pick([0, 0, 1, 3, 20]);
    for (let i = 0; i < size; i++) out[`${text()}k${i}`] = text();
    return out;
  };
  const nanos = (): string =>
    pick([
      '0', '1', INT64_MAX, INT64_MIN, '-1', '1700000000123456789',
      (BigInt(int(2 ** 31)) * BigInt(int(2 ** 31)) * 2n + BigInt(int(1000))).toString(),
    ]);
  const container = (): Container => ({
    id: text(),
    pod_sandbox_id: text(),
    metadata: pick([null, { name: text(), attempt: pick([0, 1, 4294967295]) }]),
    image: pick([null, { image: text(), annotations: map(), user_specified_image: text() }]),
    image_ref: text(),
    image_id: text(),
    state: pick([0, 1, 2, 3]),
    created_at: nanos(),
    labels: map(),
    annotations: map(),
  });
  const sandbox = (): PodSandbox => ({
    id: text(),
    metadata: pick([null, { name: text(), namespace: text(), uid: text(), attempt: pick([0, 2, 4294967295]) }]),
    state: pick([0, 1]),
    created_at: nanos(),
    labels: map(),
    annotations: map(),
    runtime_handler: text(),
  });
  return { int, container, sandbox };
}

describe('cached list encoding (ListContainers, ListPodSandbox)', () => {
  const definition = runtimeServiceDefinition();

  describe('bytes', () => {
    it('encodes ListContainers byte for byte like the default serializer (random lists, edge values)', () => {
      const fast = withCachedElementEncoding(definition.ListContainers, 'ListContainers');
      const { int, container } = randomCases(20261121);
      const pool = Array.from({ length: 300 }, container);
      for (let round = 0; round < 200; round++) {
        // Lists reuse elements across rounds (cache hits) and mix in new ones (misses).
        const list = Array.from({ length: int(40) }, () => (int(3) === 0 ? container() : pool[int(pool.length)] as Container));
        const expected = definition.ListContainers.responseSerialize({ containers: list });
        const actual = fast.responseSerialize(encodedFromCache('containers', list));
        expect(Buffer.compare(actual, expected), `round ${round}, ${list.length} containers`).to.equal(0);
      }
    });

    it('encodes ListPodSandbox byte for byte like the default serializer (random lists, edge values)', () => {
      const fast = withCachedElementEncoding(definition.ListPodSandbox, 'ListPodSandbox');
      const { int, sandbox } = randomCases(7);
      const pool = Array.from({ length: 300 }, sandbox);
      for (let round = 0; round < 200; round++) {
        const list = Array.from({ length: int(40) }, () => (int(3) === 0 ? sandbox() : pool[int(pool.length)] as PodSandbox));
        const expected = definition.ListPodSandbox.responseSerialize({ items: list });
        const actual = fast.responseSerialize(encodedFromCache('items', list));
        expect(Buffer.compare(actual, expected), `round ${round}, ${list.length} sandboxes`).to.equal(0);
      }
    });

    it('matches on the edge cases: empty list, one element, labels and annotations, int64 extremes, repeats', () => {
      const fast = withCachedListEncoding(definition);
      const full: Container = {
        id: 'c1',
        pod_sandbox_id: 's1',
        metadata: { name: 'web', attempt: 3 },
        image: { image: 'busybox', annotations: { 'a.b/c': 'd' }, user_specified_image: 'busybox' },
        image_ref: 'sha256:00',
        image_id: 'sha256:00',
        state: ContainerState.RUNNING,
        created_at: INT64_MAX,
        labels: { 'io.kubernetes.pod.name': 'web', empty: '' },
        annotations: { note: 'x'.repeat(1000) },
      };
      const cases: Container[][] = [
        [],
        [{}],
        [full],
        [{ ...full, created_at: INT64_MIN, labels: {}, annotations: {} }],
        [{ ...full, created_at: '0', state: ContainerState.CREATED }],
        [full, full, { ...full, id: 'c2' }, full],
      ];
      for (const list of cases) {
        const expected = definition.ListContainers.responseSerialize({ containers: list });
        expect(Buffer.compare(fast.ListContainers.responseSerialize(encodedFromCache('containers', list)), expected), JSON.stringify(list).slice(0, 80))
          .to.equal(0);
      }
      expect(fast.ListContainers.responseSerialize(encodedFromCache('containers', [])).length).to.equal(0);
      const sandboxes: PodSandbox[] = [{ id: 's', state: SandboxState.NOTREADY, created_at: INT64_MAX, labels: { a: 'b' }, annotations: { c: 'd' } }];
      expect(Buffer.compare(
        fast.ListPodSandbox.responseSerialize(encodedFromCache('items', sandboxes)),
        definition.ListPodSandbox.responseSerialize({ items: sandboxes }),
      )).to.equal(0);
    });

    it('sends the last bytes again for a list of the same elements, and builds any other list anew', () => {
      const fast = withCachedElementEncoding(definition.ListContainers, 'ListContainers');
      const a: Container = { id: 'a', state: ContainerState.RUNNING, labels: { app: 'web' } };
      const b: Container = { id: 'b', state: ContainerState.CREATED };
      const bytesOf = (list: Container[]) => definition.ListContainers.responseSerialize({ containers: list });
      const list = [a, b];
      const first = fast.responseSerialize(encodedFromCache('containers', list));
      expect(Buffer.compare(first, bytesOf([a, b]))).to.equal(0);
      expect(fast.responseSerialize(encodedFromCache('containers', list)), 'the same array').to.equal(first);
      expect(fast.responseSerialize(encodedFromCache('containers', [a, b])), 'another array of the same objects').to.equal(first);
      // Equal contents in other objects, another order, fewer, more: built from the elements.
      for (const other of [[{ ...a }, b], [b, a], [a], [a, b, a], []]) {
        const bytes = fast.responseSerialize(encodedFromCache('containers', other));
        expect(bytes).to.not.equal(first);
        expect(Buffer.compare(bytes, bytesOf(other))).to.equal(0);
      }
      // Back to the first list after others: its bytes, not the last list's.
      expect(Buffer.compare(fast.responseSerialize(encodedFromCache('containers', [a, b])), bytesOf([a, b]))).to.equal(0);
      expect(Buffer.compare(first, bytesOf([a, b])), 'bytes handed out are never written to').to.equal(0);
    });

    it('does not keep a response over its limit (the server\'s send limit: it cannot be sent)', () => {
      const a: Container = { id: 'a'.repeat(40) };
      const list = [a, a];
      const size = definition.ListContainers.responseSerialize({ containers: list }).length;
      const within = withCachedElementEncoding(definition.ListContainers, 'ListContainers', size);
      const kept = within.responseSerialize(encodedFromCache('containers', list));
      expect(within.responseSerialize(encodedFromCache('containers', list))).to.equal(kept);
      const over = withCachedElementEncoding(definition.ListContainers, 'ListContainers', size - 1);
      const first = over.responseSerialize(encodedFromCache('containers', list));
      const second = over.responseSerialize(encodedFromCache('containers', list));
      expect(second).to.not.equal(first);
      expect(Buffer.compare(second, first)).to.equal(0);
    });

    it('decodes back to the listed elements, in order', () => {
      const fast = withCachedElementEncoding(definition.ListContainers, 'ListContainers');
      const states = [ContainerState.CREATED, ContainerState.RUNNING, ContainerState.EXITED];
      const list: Container[] = ['a', 'b', 'c'].map((id, i) => ({ id, state: states[i], created_at: String(1000 + i) }));
      const decoded = definition.ListContainers.responseDeserialize(fast.responseSerialize(encodedFromCache('containers', list)));
      expect(decoded.containers.map((c) => [c.id, c.state, c.created_at])).to.deep.equal([['a', 0, '1000'], ['b', 1, '1001'], ['c', 2, '1002']]);
    });

    it('serializes an unmarked response with the default serializer, reading its current contents', () => {
      const fast = withCachedElementEncoding(definition.ListContainers, 'ListContainers');
      const element: Container = { id: 'x', state: ContainerState.RUNNING };
      const first = fast.responseSerialize({ containers: [element] });
      element.state = ContainerState.EXITED;
      const second = fast.responseSerialize({ containers: [element] });
      expect(Buffer.compare(second, definition.ListContainers.responseSerialize({ containers: [{ id: 'x', state: ContainerState.EXITED }] }))).to.equal(0);
      expect(Buffer.compare(first, second)).to.not.equal(0);
    });

    it('refuses a method whose response is not a single repeated message field', () => {
      expect(() => withCachedElementEncoding(definition.Version, 'Version')).to.throw(/Version: the response must have exactly one field, a repeated message, to be encoded or decoded element by element/);
    });
  });

  describe('with the NodeRuntime', () => {
    let dir: string;
    let runtime: NodeRuntime;
    let server: CriServer;
    let client: CriClient;

    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'cri-list-'));
      runtime = await NodeRuntime.open({ stateDir: join(dir, 'state'), pullDelayMs: 0 });
      server = new CriServer({ runtime });
      client = createCriClient(await server.listen(`unix://${join(dir, 'cri.sock')}`));
    });

    afterEach(async () => {
      client.close();
      await server.close();
      await runtime.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('returns the same frozen view object while a record is unchanged, and a new one after it changed', async () => {
      await pull(runtime, BUSYBOX);
      const sandbox = await runSandbox(runtime);
      const id = await createContainer(runtime, sandbox, { command: ['sleep', '1000'] });
      const [created] = (await runtime.listContainers({ filter: null })).containers ?? [];
      const [again] = (await runtime.listContainers({ filter: null })).containers ?? [];
      expect(again).to.equal(created);
      expect(Object.isFrozen(created)).to.equal(true);
      await runtime.startContainer({ container_id: id });
      const [running] = (await runtime.listContainers({ filter: null })).containers ?? [];
      expect(running).to.not.equal(created);
      expect(running?.state).to.equal(ContainerState.RUNNING);
      expect(created?.state).to.equal(ContainerState.CREATED);

      const [ready] = (await runtime.listPodSandbox({ filter: null })).items ?? [];
      expect((await runtime.listPodSandbox({ filter: null })).items?.[0]).to.equal(ready);
      await runtime.stopPodSandbox({ pod_sandbox_id: sandbox.id });
      const [stopped] = (await runtime.listPodSandbox({ filter: null })).items ?? [];
      expect(stopped).to.not.equal(ready);
      expect(stopped?.state).to.equal(SandboxState.NOTREADY);
    });

    it('shows a state change in the next list over the socket (StopContainer, StopPodSandbox)', async () => {
      await unaryCall(client.image, 'PullImage', { image: { image: BUSYBOX } });
      const { pod_sandbox_id: sandboxId } = await unaryCall(client.runtime, 'RunPodSandbox', {
        config: { metadata: { name: 'web', namespace: 'default', uid: 'uid-web', attempt: 0 }, labels: { app: 'web' } },
      });
      const { container_id: containerId } = await unaryCall(client.runtime, 'CreateContainer', {
        pod_sandbox_id: sandboxId,
        config: { metadata: { name: 'app' }, image: { image: BUSYBOX }, command: ['sleep', '1000'], labels: { tier: 'front' } },
      });
      await unaryCall(client.runtime, 'StartContainer', { container_id: containerId });

      const states = async () => (await unaryCall(client.runtime, 'ListContainers', {})).containers.map((c) => [c.id, c.state, c.labels]);
      const running = [[containerId, ContainerState.RUNNING, { tier: 'front' }]];
      expect(await states()).to.deep.equal(running);
      expect(await states(), 'second list, from the cache').to.deep.equal(running);
      await unaryCall(client.runtime, 'StopContainer', { container_id: containerId, timeout: 0 });
      expect(await states()).to.deep.equal([[containerId, ContainerState.EXITED, { tier: 'front' }]]);

      const sandboxes = async () => (await unaryCall(client.runtime, 'ListPodSandbox', {})).items.map((s) => [s.id, s.state]);
      expect(await sandboxes()).to.deep.equal([[sandboxId, SandboxState.READY]]);
      await unaryCall(client.runtime, 'StopPodSandbox', { pod_sandbox_id: sandboxId });
      expect(await sandboxes()).to.deep.equal([[sandboxId, SandboxState.NOTREADY]]);
      await unaryCall(client.runtime, 'RemovePodSandbox', { pod_sandbox_id: sandboxId });
      expect(await sandboxes()).to.deep.equal([]);
      expect(await states()).to.deep.equal([]);
    });

    it('sends the bytes the default serializer makes from the runtime\'s own list', async () => {
      await pull(runtime, BUSYBOX);
      for (let i = 0; i < 5; i++) {
        const sandbox = await runSandbox(runtime, { labels: { i: String(i) }, annotations: { note: `n${i}` } });
        await createContainer(runtime, sandbox, { command: ['sleep', '1000'], labels: { i: String(i) } });
      }
      const fast = withCachedListEncoding(definition);
      for (let round = 0; round < 2; round++) {
        const containers = await runtime.listContainers({ filter: null });
        expect(Buffer.compare(
          fast.ListContainers.responseSerialize(encodedFromCache('containers', containers.containers ?? [])),
          definition.ListContainers.responseSerialize(containers),
        )).to.equal(0);
        const sandboxes = await runtime.listPodSandbox({ filter: null });
        expect(Buffer.compare(
          fast.ListPodSandbox.responseSerialize(encodedFromCache('items', sandboxes.items ?? [])),
          definition.ListPodSandbox.responseSerialize(sandboxes),
        )).to.equal(0);
      }
    });
  });
});
