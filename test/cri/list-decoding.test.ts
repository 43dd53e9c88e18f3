import { expect } from 'chai';
import type { Container } from '../../src/generated/runtime/v1/Container.js';
import type { PodSandbox } from '../../src/generated/runtime/v1/PodSandbox.js';
import { withCachedElementDecoding } from '../../src/cri/list-decoding.js';
import { runtimeServiceDefinition } from '../../src/cri/proto.js';
import { prng } from '../support/seeded-random.js';

describe('cached list decoding (client side of ListContainers, ListPodSandbox)', () => {
  const definition = runtimeServiceDefinition();
  const random = prng(42);
  const int = (n: number) => Math.floor(random() * n);
  const word = () => ['', 'a', 'web', 'äöü日本', 'x'.repeat(200), '__proto__', 'constructor'][int(7)] as string;
  const map = (): Record<string, string> => {
    const out: Record<string, string> = {};
    for (let i = int(5); i > 0; i--) out[`k${int(50)}${word()}`] = word();
    return out;
  };
  const created = () => ['0', '1', '9223372036854775807', '-9223372036854775808', '1763700000123456789'][int(5)] as string;
  const container = (): Container => ({
    id: `c${int(1e9)}`,
    pod_sandbox_id: word(),
    metadata: int(4) === 0 ? null : { name: word(), attempt: int(3) },
    image: int(4) === 0 ? null : { image: word(), annotations: map(), user_specified_image: word() },
    image_ref: word(),
    image_id: word(),
    state: ([0, 1, 2, 3] as const)[int(4)],
    created_at: created(),
    labels: map(),
    annotations: map(),
  });
  const sandbox = (): PodSandbox => ({
    id: `s${int(1e9)}`,
    metadata: int(4) === 0 ? null : { name: word(), namespace: word(), uid: word(), attempt: int(3) },
    state: ([0, 1] as const)[int(2)],
    created_at: created(),
    labels: map(),
    annotations: map(),
    runtime_handler: word(),
  });

  it('decodes ListContainers to what the default deserializer gives (random lists, repeats, empty)', () => {
    const fast = withCachedElementDecoding(definition.ListContainers, 'ListContainers');
    const pool = Array.from({ length: 100 }, container);
    for (let round = 0; round < 150; round++) {
      const list = round === 0 ? [] : Array.from({ length: int(30) }, () => (int(4) === 0 ? container() : pool[int(pool.length)] as Container));
      const bytes = definition.ListContainers.responseSerialize({ containers: list });
      expect(fast.responseDeserialize(bytes), `round ${round}`).to.deep.equal(definition.ListContainers.responseDeserialize(bytes));
    }
  });

  it('decodes ListPodSandbox to what the default deserializer gives', () => {
    const fast = withCachedElementDecoding(definition.ListPodSandbox, 'ListPodSandbox');
    const pool = Array.from({ length: 100 }, sandbox);
    for (let round = 0; round < 150; round++) {
      const list = Array.from({ length: int(30) }, () => (int(4) === 0 ? sandbox() : pool[int(pool.length)] as PodSandbox));
      const bytes = definition.ListPodSandbox.responseSerialize({ items: list });
      expect(fast.responseDeserialize(bytes), `round ${round}`).to.deep.equal(definition.ListPodSandbox.responseDeserialize(bytes));
    }
  });

  it('shares the cached elements between responses, deep-frozen, in a fresh array', () => {
    const fast = withCachedElementDecoding(definition.ListContainers, 'ListContainers');
    const bytes = definition.ListContainers.responseSerialize({
      containers: [{ id: 'a', labels: { app: 'web' }, metadata: { name: 'n', attempt: 1 }, image: { image: 'i', annotations: { k: 'v' } } }],
    });
    const first = fast.responseDeserialize(bytes);
    const second = fast.responseDeserialize(bytes);
    expect(second).to.deep.equal(definition.ListContainers.responseDeserialize(bytes));
    const element = second.containers[0]!;
    expect(element).to.equal(first.containers[0]);
    for (const part of [element, element.labels, element.metadata, element.image, element.image!.annotations, element.annotations]) {
      expect(Object.isFrozen(part)).to.equal(true);
    }
    expect(() => {
      element.labels['app'] = 'changed';
    }).to.throw(TypeError);
    expect(() => {
      element.metadata!.name = 'changed';
    }).to.throw(TypeError);
    expect(second.containers[0]!.labels).to.deep.equal({ app: 'web' });
    // The array is the caller's own: adding to one response does not show in the next.
    expect(second.containers).to.not.equal(first.containers);
    first.containers.push(first.containers[0]!);
    expect(fast.responseDeserialize(bytes).containers).to.have.length(1);
  });

  it('decodes an unseen element fresh and reuses the others, in any order', () => {
    const fast = withCachedElementDecoding(definition.ListContainers, 'ListContainers');
    const a = { id: 'a', labels: { app: 'web' } };
    const b = { id: 'b', labels: { app: 'db' } };
    const c = { id: 'c', labels: { app: 'db' } };
    const first = fast.responseDeserialize(definition.ListContainers.responseSerialize({ containers: [a, b] }));
    const nextBytes = definition.ListContainers.responseSerialize({ containers: [c, b, a] });
    const next = fast.responseDeserialize(nextBytes);
    expect(next).to.deep.equal(definition.ListContainers.responseDeserialize(nextBytes));
    expect(next.containers[1]).to.equal(first.containers[1]);
    expect(next.containers[2]).to.equal(first.containers[0]);
    expect(first.containers).to.not.include(next.containers[0]);
    expect(next.containers[0]!.id).to.equal('c');
    expect(Object.isFrozen(next.containers[0])).to.equal(true);
  });

  it('keeps its own copy of the bytes: a transport reusing its buffer does not spoil the cache', () => {
    const fast = withCachedElementDecoding(definition.ListContainers, 'ListContainers');
    const bytes = definition.ListContainers.responseSerialize({ containers: [{ id: 'a', state: 1 }, { id: 'b', state: 1 }] });
    const received = Buffer.from(bytes);
    const first = fast.responseDeserialize(received);
    received.fill(0);
    const second = fast.responseDeserialize(Buffer.from(bytes));
    expect(second).to.deep.equal(definition.ListContainers.responseDeserialize(bytes));
    expect(second.containers[0]).to.equal(first.containers[0]);
    expect(second.containers[1]).to.equal(first.containers[1]);
  });

  it('shows a changed element as changed (the cache is keyed by the bytes)', () => {
    const fast = withCachedElementDecoding(definition.ListContainers, 'ListContainers');
    const running = definition.ListContainers.responseSerialize({ containers: [{ id: 'a', state: 1 }] });
    const exited = definition.ListContainers.responseSerialize({ containers: [{ id: 'a', state: 2 }] });
    expect(fast.responseDeserialize(running).containers.map((c) => c.state)).to.deep.equal([1]);
    expect(fast.responseDeserialize(exited).containers.map((c) => c.state)).to.deep.equal([2]);
  });

  it('falls back to the default deserializer for anything but a run of the list field', () => {
    const fast = withCachedElementDecoding(definition.ListContainers, 'ListContainers');
    const list = definition.ListContainers.responseSerialize({ containers: [{ id: 'a' }, { id: 'b' }] });
    // An unknown field 2 (varint 7) after the list, as a newer server might send: skipped by both.
    const withUnknown = Buffer.concat([list, Buffer.from([0x10, 0x07])]);
    expect(fast.responseDeserialize(withUnknown)).to.deep.equal(definition.ListContainers.responseDeserialize(withUnknown));
    expect(fast.responseDeserialize(withUnknown).containers.map((c) => c.id)).to.deep.equal(['a', 'b']);
    // A length running past the end: the same error as the default deserializer.
    const truncated = list.subarray(0, list.length - 1);
    expect(() => fast.responseDeserialize(truncated)).to.throw(RangeError);
    expect(() => definition.ListContainers.responseDeserialize(truncated)).to.throw(RangeError);
  });
});
