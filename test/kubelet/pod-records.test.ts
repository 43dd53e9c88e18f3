import { expect } from 'chai';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PodRecordStore, recordFirstSync } from '../../src/kubelet/pod-records.js';
import { tempDirPerTest } from '../support/temp-dir.js';

describe('the kubelet pod records (root dir)', () => {
  const dir = tempDirPerTest('winsim-records-');

  const pod = (uid: string) => ({
    metadata: { name: `p-${uid}`, namespace: 'apps', uid },
    spec: { containers: [{ name: 'app', image: 'img', securityContext: { windowsOptions: { gmsaCredentialSpec: '{"secret-free":"but private"}' } } }] },
  });

  it('keeps what the runtime cannot tell: spec, waiting reasons, events; private to the kubelet', async () => {
    const store = new PodRecordStore(dir());
    const outcome = {
      sandboxId: 's1',
      containers: [{ name: 'app', kind: 'regular' as const, state: 'waiting' as const, containerId: 'c1', reason: 'RunContainerError', message: 'logon failure' }],
      events: [{ type: 'Warning' as const, reason: 'Failed', message: 'Error: logon failure', container: 'app' }],
    };
    await store.save(recordFirstSync(pod('u1'), { file: 'p.yaml', document: 1 }, outcome, new Date('2024-01-01T00:00:00Z')));
    const loaded = await store.load('u1');
    expect(loaded).to.deep.include({ startTime: '2024-01-01T00:00:00.000Z', sandboxCreated: true, source: { file: 'p.yaml', document: 1 } });
    expect(loaded!.containers).to.deep.equal({ app: { attempt: 0, containerId: 'c1', reason: 'RunContainerError', message: 'logon failure' } });
    expect(loaded!.events.map((e) => [e.reason, e.count])).to.deep.equal([['Failed', 1]]);
    // The admitted spec holds the inlined credential spec: directory 0700, file 0600.
    expect((await stat(join(dir(), 'pods', 'u1'))).mode & 0o777).to.equal(0o700);
    expect((await stat(join(dir(), 'pods', 'u1', 'pod.json'))).mode & 0o777).to.equal(0o600);
    expect(await readdir(join(dir(), 'pods', 'u1'))).to.deep.equal(['pod.json']);
  });

  it('lists, updates and removes; an absent record is undefined', async () => {
    const store = new PodRecordStore(dir());
    const outcome = { containers: [], events: [], sandboxError: { reason: 'FailedCreatePodSandBox' as const, message: 'no network' } };
    await store.save(recordFirstSync(pod('u1'), undefined, outcome));
    await store.save(recordFirstSync(pod('u2'), undefined, outcome));
    expect((await store.list()).map((r) => [r.pod.metadata?.uid, r.sandboxCreated, r.sandboxError?.reason])).to.deep.equal([
      ['u1', false, 'FailedCreatePodSandBox'],
      ['u2', false, 'FailedCreatePodSandBox'],
    ]);
    await store.update('u2', (r) => ({ ...r, sandboxCreated: true }));
    expect((await store.load('u2'))!.sandboxCreated).to.equal(true);
    await store.remove('u1');
    expect(await store.load('u1')).to.equal(undefined);
    expect((await store.list()).map((r) => r.pod.metadata?.uid)).to.deep.equal(['u2']);
    expect(await new PodRecordStore(join(dir(), 'nothing-here')).list()).to.deep.equal([]);
  });

  it('refuses a UID that is not a plain name (no path escapes)', async () => {
    const store = new PodRecordStore(dir());
    for (const uid of ['../x', 'a/b', '']) {
      const err = await store.remove(uid).catch((e: unknown) => e);
      expect((err as Error).message).to.equal(`pod UID ${JSON.stringify(uid)} cannot name a record`);
    }
  });
});
