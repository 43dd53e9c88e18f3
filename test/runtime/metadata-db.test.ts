// The metadata store (src/runtime/store/metadata-db.ts) behind a durable NodeRuntime: an answered
// RPC is committed (a second connection sees it), the changes of one turn are one transaction,
// and a reopened runtime has the records back, bigints and all.
import { expect } from 'chai';
import { existsSync, mkdirSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { silentLogger } from '../../src/log.js';
import { NodeRuntime } from '../../src/runtime/node-runtime.js';
import { ContainerState } from '../../src/runtime/store/container-store.js';
import { MetadataDb, MetadataFile } from '../../src/runtime/store/metadata-db.js';
import { decodeJson, encodeJson } from '../../src/runtime/store/record-codec.js';
import { tempDirPerTest } from '../support/temp-dir.js';
import { BUSYBOX, createContainer, pull, runSandbox } from './helpers.js';

describe('runtime: durable metadata store', () => {
  const dir = tempDirPerTest('cri-winsim-metadata-');
  const rows = (kind: string): string[] => {
    const db = new Database(join(dir(), 'metadata.db'), { readonly: true });
    try {
      return (db.prepare('SELECT id FROM records WHERE kind = ? ORDER BY id').all(kind) as { id: string }[]).map((r) => r.id);
    } finally {
      db.close();
    }
  };

  it('an answered RPC is committed: another connection reads its record at once', async () => {
    const runtime = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    try {
      await pull(runtime, BUSYBOX);
      expect(rows('image')).to.have.length(1);
      const sb = await runSandbox(runtime);
      expect(rows('sandbox')).to.deep.equal([sb.id]);
      const id = await createContainer(runtime, sb, { command: ['sleep', '3600'] });
      expect(rows('container')).to.deep.equal([id]);
      await runtime.removeContainer({ container_id: id });
      expect(rows('container')).to.deep.equal([]);
    } finally {
      await runtime.close();
    }
  });

  it('an ephemeral start removes the database a durable run left: a later durable start finds nothing', async () => {
    const first = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    try {
      await runSandbox(first);
    } finally {
      await first.close();
    }
    expect(existsSync(join(dir(), 'metadata.db'))).to.equal(true);
    const ephemeral = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0 });
    try {
      expect([...ephemeral.context.sandboxes.all()]).to.have.length(0);
      expect(existsSync(join(dir(), 'metadata.db'))).to.equal(false);
    } finally {
      await ephemeral.close();
    }
    const durable = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    try {
      expect([...durable.context.sandboxes.all()]).to.have.length(0);
    } finally {
      await durable.close();
    }
  });

  it('a resumed container with stdin: true gets an input channel again; one without gets none', async () => {
    const first = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    const ids: string[] = [];
    try {
      const sb = await runSandbox(first);
      await pull(first, BUSYBOX);
      ids.push(await createContainer(first, sb, { metadata: { name: 'shell', attempt: 0 }, command: ['sh'], stdin: true }));
      ids.push(await createContainer(first, sb, { metadata: { name: 'sleeper', attempt: 0 }, command: ['sleep', '3600'] }));
      for (const id of ids) await first.startContainer({ container_id: id });
    } finally {
      await first.close();
    }
    const second = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    try {
      const [shell, sleeper] = ids.map((id) => second.context.containers.get(id)!);
      expect(shell!.status.state).to.equal(ContainerState.RUNNING);
      expect(shell!.live.stdin).to.not.equal(undefined);
      expect(sleeper!.live.stdin).to.equal(undefined);
    } finally {
      await second.close();
    }
  });

  it('a reopened runtime has the records back; a running container runs with its start time', async () => {
    const first = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    const sb = await runSandbox(first);
    let id: string;
    let startedAt: bigint;
    try {
      await pull(first, BUSYBOX);
      id = await createContainer(first, sb, { command: ['sleep', '3600'] });
      await first.startContainer({ container_id: id });
      startedAt = first.context.containers.get(id)!.status.startedAtNanos;
    } finally {
      await first.close();
    }
    const second = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    try {
      const c = second.context.containers.get(id)!;
      expect(c.status.state).to.equal(ContainerState.RUNNING);
      expect(c.status.startedAtNanos).to.equal(startedAt);
      expect(c.live.process?.startedAtNanos).to.equal(startedAt);
      expect(second.context.sandboxes.get(sb.id)?.ip).to.equal(first.context.sandboxes.get(sb.id)?.ip);
      // The reserved names came back too: the same container name is refused.
      const again = await second.createContainer({ pod_sandbox_id: sb.id, config: second.context.containers.configOf(c), sandbox_config: sb.config }).catch((err: Error) => err.message);
      expect(again).to.contain('is reserved');
    } finally {
      await second.close();
    }
  });

  // containerd v2 internal/cri/server/update_runtime_config.go: the pod CIDR goes into a CNI
  // config file in the conf dir, which a reboot keeps too.
  it('the pod CIDR UpdateRuntimeConfig set survives a simulated reboot; the NOTREADY sandbox\'s IP is free again', async () => {
    const first = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true, podCidr: '127.31.0.0/24' });
    let sandboxId: string;
    try {
      await first.updateRuntimeConfig({ runtime_config: { network_config: { pod_cidr: '127.32.0.0/24' } } });
      const sb = await runSandbox(first);
      sandboxId = sb.id;
      expect(first.context.sandboxes.get(sb.id)?.ip).to.equal('127.32.0.2');
    } finally {
      await first.close();
    }
    const second = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true, podCidr: '127.31.0.0/24', simulateReboot: true });
    try {
      expect(second.context.network.podIps.range).to.equal('127.32.0.0/24');
      expect(second.context.network.podIps.allocated).to.equal(0);
      expect(second.context.sandboxes.get(sandboxId)?.ip).to.equal('127.32.0.2');
      const sb = await runSandbox(second, { metadata: { name: 'after-reboot', namespace: 'default', uid: 'uid-after-reboot', attempt: 0 } });
      expect(second.context.sandboxes.get(sb.id)?.ip).to.equal('127.32.0.2');
    } finally {
      await second.close();
    }
  });

  it('a durable start removes runtime-owned log directories no record owns, and never follows a planted symlink', async () => {
    const first = await NodeRuntime.open({ stateDir: join(dir(), 'state'), pullDelayMs: 0, durable: true });
    let kept: string;
    try {
      await pull(first, BUSYBOX);
      const sb = await runSandbox(first, { log_directory: '' });
      // A runtime-owned log (log_path empty): containers/<id>/container.log.
      kept = await createContainer(first, sb, { command: ['sleep', '3600'] });
      await first.startContainer({ container_id: kept });
    } finally {
      await first.close();
    }
    const outside = join(dir(), 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'precious'), 'x');
    expect(existsSync(join(dir(), 'state', 'containers', kept))).to.equal(true);
    mkdirSync(join(dir(), 'state', 'containers', 'stale-container'), { recursive: true });
    mkdirSync(join(dir(), 'state', 'pods', 'stale-sandbox'), { recursive: true });
    symlinkSync(outside, join(dir(), 'state', 'pods', 'planted'));
    const second = await NodeRuntime.open({ stateDir: join(dir(), 'state'), pullDelayMs: 0, durable: true });
    try {
      expect(existsSync(join(dir(), 'state', 'containers', kept, 'container.log'))).to.equal(true);
      expect(existsSync(join(dir(), 'state', 'containers', 'stale-container'))).to.equal(false);
      expect(existsSync(join(dir(), 'state', 'pods', 'stale-sandbox'))).to.equal(false);
      expect(existsSync(join(dir(), 'state', 'pods', 'planted'))).to.equal(false);
      expect(existsSync(join(outside, 'precious'))).to.equal(true);
    } finally {
      await second.close();
    }
  });

  it('changes of one event-loop turn are written in one transaction, the last state of each record', async () => {
    const db = MetadataDb.open(dir(), silentLogger());
    try {
      let encoded = 0;
      for (let i = 0; i < 100; i++) db.changed('container', `c${i % 10}`, () => `{"n":${++encoded}}`);
      db.removed('container', 'c9');
      await db.committed();
      // Ten records changed ten times each: nine rows, each encoded once, when committed.
      expect(encoded).to.equal(9);
      expect(db.rows('container').map((r) => r.id)).to.deep.equal(['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8']);
      expect(db.committed()).to.equal(undefined);
    } finally {
      db.close();
    }
  });

  it('a failed commit rejects committed(), keeps the changes dirty, and the next commit writes them', async () => {
    const db = MetadataDb.open(dir(), silentLogger());
    try {
      // Another connection makes every insert fail, as a full disk would (the commit rolls back).
      const other = new Database(join(dir(), 'metadata.db'));
      other.exec("CREATE TRIGGER refuse BEFORE INSERT ON records BEGIN SELECT RAISE(ABORT, 'refused for the test'); END");
      db.changed('sandbox', 's1', () => '{}');
      db.changed('sandbox', 's2', () => '{}');
      const failed = await db.committed()!.then(() => 'committed', (err: Error) => err.message);
      expect(failed).to.equal('refused for the test');
      expect(db.rows('sandbox')).to.deep.equal([]);
      other.exec('DROP TRIGGER refuse');
      other.close();
      db.changed('image', 'i1', () => '{}');
      await db.committed();
      expect(db.rows('sandbox').map((r) => r.id)).to.deep.equal(['s1', 's2']);
    } finally {
      db.close();
    }
  });

  it('a released store holds no connection, opens one for the next change and commits it', async () => {
    const db = MetadataDb.open(dir(), silentLogger());
    try {
      db.changed('sandbox', 's1', () => '{}');
      // Not while a change waits for its commit.
      db.release();
      expect(db.connected).to.equal(true);
      await db.committed();
      db.release();
      expect(db.connected).to.equal(false);
      db.changed('sandbox', 's2', () => '{}');
      await db.committed();
      expect(db.connected).to.equal(true);
      expect(rows('sandbox')).to.deep.equal(['s1', 's2']);
      db.release();
      expect(db.rows('sandbox').map((r) => r.id)).to.deep.equal(['s1', 's2']);
    } finally {
      db.close();
    }
  });

  it('a symlink planted as the database while the store is released fails the next commit, which is kept', async () => {
    const db = MetadataDb.open(dir(), silentLogger());
    try {
      db.release();
      const file = join(dir(), 'metadata.db');
      const moved = join(dir(), 'moved.db');
      // The real file moved away and a link put in its place.
      new Database(file).close();
      writeFileSync(join(dir(), 'elsewhere'), '');
      renameSync(file, moved);
      symlinkSync(join(dir(), 'elsewhere'), file);
      db.changed('container', 'c1', () => '{}');
      const failed = await db.committed()!.then(() => 'committed', (err: Error) => err.message);
      expect(failed).to.contain('metadata.db is a symlink');
      unlinkSync(file);
      renameSync(moved, file);
      db.changed('image', 'i1', () => '{}');
      await db.committed();
      expect(rows('container')).to.deep.equal(['c1']);
    } finally {
      db.close();
    }
  });

  it('a durable runtime releases its connection once it has read its records', async () => {
    const first = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    await pull(first, BUSYBOX);
    await first.close();
    // A second connection may write while the runtime holds none; an open one would keep the
    // WAL file in place.
    const runtime = await NodeRuntime.open({ stateDir: dir(), pullDelayMs: 0, durable: true });
    try {
      expect(existsSync(join(dir(), 'metadata.db-wal'))).to.equal(false);
      const sb = await runSandbox(runtime);
      expect(existsSync(join(dir(), 'metadata.db-wal'))).to.equal(true);
      expect(rows('sandbox')).to.deep.equal([sb.id]);
    } finally {
      await runtime.close();
    }
  });

  it('bigints survive the encoding; a look-alike object with more keys stays an object', () => {
    const value = { t: 1_764_000_000_123_456_789n, nested: [{ n: -5n }], other: { $bigint: '1', x: 1 } };
    expect(decodeJson(encodeJson(value))).to.deep.equal(value);
  });
  describe('one file shared by the runtimes of a process (node mode)', () => {
    it("keeps each scope's rows apart, under its name, and reads back only its own", async () => {
      const file = MetadataFile.in(dir(), silentLogger());
      const a = MetadataDb.openShared(file, 'win-1', join(dir(), 'a'), silentLogger());
      const b = MetadataDb.openShared(file, 'win-10', join(dir(), 'b'), silentLogger());
      try {
        a.changed('sandbox', 's1', () => '{"a":1}');
        b.changed('sandbox', 's1', () => '{"b":1}');
        b.changed('sandbox', 's2', () => '{"b":2}');
        await Promise.all([a.committed(), b.committed()]);
        expect(a.rows('sandbox')).to.deep.equal([{ kind: 'sandbox', id: 's1', data: '{"a":1}' }]);
        expect(b.rows('sandbox').map((r) => r.id)).to.deep.equal(['s1', 's2']);
        a.removed('sandbox', 's1');
        await a.committed();
        expect(a.rows('sandbox')).to.deep.equal([]);
        expect(b.rows('sandbox')).to.have.length(2);
        // On disk: one table, each id under its scope.
        const raw = new Database(join(dir(), 'metadata.db'), { readonly: true });
        expect(raw.prepare('SELECT id FROM records ORDER BY id').all()).to.deep.equal([{ id: 'win-10/s1' }, { id: 'win-10/s2' }]);
        raw.close();
        // A scope's store does not close the shared file; its owner does.
        a.close();
        expect(file.connected).to.equal(true);
      } finally {
        b.close();
        file.release();
      }
    });

    it("moves a node's own database into the shared file, then removes it", async () => {
      const own = MetadataDb.open(join(dir(), 'node'), silentLogger());
      own.changed('container', 'c1', () => '{"c":1}');
      own.changed('meta', 'network', () => '{"n":1}');
      await own.committed();
      own.close();
      const file = MetadataFile.in(dir(), silentLogger());
      const scoped = MetadataDb.openShared(file, 'win-1', join(dir(), 'node'), silentLogger());
      try {
        expect(scoped.rows('container')).to.deep.equal([{ kind: 'container', id: 'c1', data: '{"c":1}' }]);
        expect(scoped.rows('meta').map((r) => r.id)).to.deep.equal(['network']);
        expect(existsSync(join(dir(), 'node', 'metadata.db'))).to.equal(false);
      } finally {
        scoped.close();
        file.release();
      }
    });

    it('refuses an empty scope or one with a slash', () => {
      const file = MetadataFile.in(dir(), silentLogger());
      expect(() => MetadataDb.openShared(file, '', dir(), silentLogger())).to.throw("metadata scope \"\": expected a non-empty name without '/'");
      expect(() => MetadataDb.openShared(file, 'a/b', dir(), silentLogger())).to.throw('metadata scope "a/b"');
      file.release();
    });
  });
});
