import { constants, lstatSync, mkdirSync, openSync, closeSync, chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Logger } from '../../log.js';

/** What the database keeps: one row per record, its JSON encoding (record-codec.ts). */
export type RecordKind = 'image' | 'sandbox' | 'container' | 'meta';

export interface StoredRow {
  kind: RecordKind;
  id: string;
  data: string;
}

/** The file name of the metadata database in the state directory. */
export const METADATA_DB_FILE = 'metadata.db';

interface Pending {
  kind: RecordKind;
  id: string;
  /** Encodes the record's current state at commit time; undefined: delete the row. */
  encode: (() => string) | undefined;
}

/**
 * The runtime's metadata, in an SQLite database in the state directory (WAL mode,
 * `synchronous=NORMAL`): images, sandboxes, containers, keyed by kind and id.
 *
 * Writes are group-committed, as containerd's bbolt metadata store batches its updates: a change
 * marks the record dirty, and every record changed in one event-loop turn is encoded and written
 * in one transaction on the next turn (`setImmediate`). A record changed several times in a turn
 * is written once, as it is then. An RPC does not answer before its changes are committed
 * (`committed()`), so an answered change survives a SIGKILL of the runtime; with
 * `synchronous=NORMAL` a committed transaction can be lost on power loss (never corrupted).
 *
 * The connection is opened at open() and, once the runtime has read its records, may be
 * released (release()) until the next change: a runtime that changes nothing holds no connection.
 */
export class MetadataDb {
  private readonly pending = new Map<string, Pending>();
  private flushPromise: Promise<void> | undefined;
  private closed = false;

  private constructor(
    private readonly file: MetadataFile,
    /** Whether this store alone uses the file (it releases and closes it). */
    private readonly ownsFile: boolean,
    /** '' for a file of its own; `<scope>/` before every id in a shared file. */
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Opens (creating) the database in `stateDir`, which must be a real directory, not a symlink;
   * the database file and its WAL must not be symlinks either (a planted link would make the
   * runtime write where the link points). The directory is made mode 0700.
   */
  static open(stateDir: string, logger: Logger): MetadataDb {
    const store = new MetadataDb(MetadataFile.in(stateDir, logger), true, '', logger);
    store.file.connect();
    return store;
  }

  /**
   * The store of one runtime among several that share `file` (node mode: one database for the
   * nodes of a process instead of one per node, each node's rows under `<scope>/`). A database
   * an earlier version left in `stateDir` (a file of the node's own) is moved into `file` first.
   */
  static openShared(file: MetadataFile, scope: string, stateDir: string, logger: Logger): MetadataDb {
    if (scope === '' || scope.includes('/')) throw new Error(`metadata scope ${JSON.stringify(scope)}: expected a non-empty name without '/'`);
    const store = new MetadataDb(file, false, `${scope}/`, logger);
    store.adoptOwnFile(stateDir);
    return store;
  }

  /**
   * Closes the connection while nothing waits to be committed: an idle runtime holds no SQLite
   * connection (its page cache and buffers). The next read or change opens it again, with the
   * checks of open(); what is committed stays committed. A shared file stays open (its owner closes it).
   */
  release(): void {
    if (!this.ownsFile || this.closed || this.pending.size > 0 || this.flushPromise !== undefined) return;
    this.file.release();
  }

  /** Whether a connection is open now (tests; released stores hold none). */
  get connected(): boolean {
    return this.file.connected;
  }

  /** Every stored row, in kind order (images, sandboxes, containers, meta are read by kind). */
  rows(kind: RecordKind): StoredRow[] {
    if (this.prefix === '') return this.file.connect().rows.all(kind) as StoredRow[];
    // '0' follows '/': the scope's ids are exactly those in [prefix, scope + '0').
    const rows = this.file.connect().scopedRows.all(kind, this.prefix, `${this.prefix.slice(0, -1)}0`) as StoredRow[];
    for (const row of rows) row.id = row.id.slice(this.prefix.length);
    return rows;
  }

  /** The record changed: it is encoded and written with the others of this turn. */
  changed(kind: RecordKind, id: string, encode: () => string): void {
    this.queue({ kind, id: this.prefix + id, encode });
  }

  /** The record is gone: its row is deleted with the other changes of this turn. */
  removed(kind: RecordKind, id: string): void {
    this.queue({ kind, id: this.prefix + id, encode: undefined });
  }

  /** Copies the rows of a database file of the runtime's own in `stateDir` into the shared file, then removes it. */
  private adoptOwnFile(stateDir: string): void {
    const own = join(stateDir, METADATA_DB_FILE);
    try {
      lstatSync(own);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    const old = new MetadataFile(own, this.logger);
    let rows: StoredRow[];
    try {
      rows = old.connect().db.prepare('SELECT kind, id, data FROM records').all() as StoredRow[];
    } finally {
      old.release();
    }
    // Committed before the old file goes: a crash in between copies the same rows again next time.
    this.file.connect().writeBatch(rows.map((r) => ({ kind: r.kind, id: this.prefix + r.id, encode: () => r.data })));
    for (const f of [own, `${own}-wal`, `${own}-shm`]) rmSync(f, { force: true });
  }

  /**
   * Settles once every change made so far is committed, rejects when that commit failed;
   * undefined when nothing is waiting.
   */
  committed(): Promise<void> | undefined {
    return this.flushPromise;
  }

  /** Commits what is waiting now (shutdown, tests). */
  flushNow(): void {
    this.flush();
  }

  /** Commits what is waiting and closes the database; later changes are ignored. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    if (this.ownsFile) this.file.release();
  }

  private queue(p: Pending): void {
    if (this.closed) return;
    this.pending.set(`${p.kind}\0${p.id}`, p);
    if (this.flushPromise === undefined) {
      const promise = new Promise<void>((resolve, reject) => {
        setImmediate(() => {
          const err = this.flush();
          if (err === undefined) resolve();
          else reject(err);
        });
      });
      // A change no RPC waits for (a container exit) must not become an unhandled rejection.
      promise.catch(() => undefined);
      this.flushPromise = promise;
    }
  }

  /** Writes what is waiting in one transaction; returns the error of a failed commit. */
  private flush(): Error | undefined {
    this.flushPromise = undefined;
    if (this.pending.size === 0 || this.closed) return undefined;
    const batch = [...this.pending.values()];
    this.pending.clear();
    try {
      this.file.connect().writeBatch(batch);
      return undefined;
    } catch (err) {
      // A full disk, an I/O error, a database that cannot be opened again: the transaction rolled back; the records stay dirty and go
      // with the next commit, and the RPCs waiting for this one fail (committed() rejects).
      this.logger.error({ err, records: batch.length }, 'metadata store commit failed');
      for (const p of batch) {
        const key = `${p.kind}\0${p.id}`;
        if (!this.pending.has(key)) this.pending.set(key, p);
      }
      return err instanceof Error ? err : new Error(String(err));
    }
  }
}

/**
 * The database file: its connection, opened on first use (and again after a release), with the
 * checks of MetadataDb.open. One per runtime, or one for the nodes of a process (openShared).
 */
export class MetadataFile {
  /** The open connection; none while released (reopened by the next read or commit). */
  private connection: Connection | undefined;

  constructor(
    private readonly path: string,
    private readonly logger: Logger,
  ) {}

  /** The file in `stateDir`, which must be a real directory, not a symlink (made mode 0700). */
  static in(stateDir: string, logger: Logger): MetadataFile {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const dir = lstatSync(stateDir);
    if (!dir.isDirectory()) throw new Error(`state directory ${stateDir} is not a directory (a symlink is refused)`);
    if ((dir.mode & 0o077) !== 0) chmodSync(stateDir, 0o700);
    return new MetadataFile(join(stateDir, METADATA_DB_FILE), logger);
  }

  get connected(): boolean {
    return this.connection !== undefined;
  }

  connect(): Connection {
    if (this.connection !== undefined) return this.connection;
    const path = this.path;
    for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) refuseSymlink(file);
    // Created here with O_NOFOLLOW and 0600, so SQLite opens a regular file of ours.
    closeSync(openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600));
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // Node processes on one state root share a file (node-process-shares.ts): a writer waits for another's commit.
      db.pragma('busy_timeout = 5000');
      db.exec('CREATE TABLE IF NOT EXISTS records (kind TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (kind, id)) WITHOUT ROWID');
      this.connection = new Connection(db, this.logger);
    } catch (err) {
      db.close();
      throw err;
    }
    return this.connection;
  }

  /** Closes the connection (what is committed stays committed); the next use opens it again. */
  release(): void {
    this.connection?.db.close();
    this.connection = undefined;
  }
}

/** An open SQLite connection and its prepared statements. */
class Connection {
  readonly writeBatch: (batch: Pending[]) => void;
  readonly rows: Database.Statement<[string]>;
  readonly scopedRows: Database.Statement<[string, string, string]>;

  constructor(
    readonly db: Database.Database,
    logger: Logger,
  ) {
    this.rows = db.prepare('SELECT kind, id, data FROM records WHERE kind = ? ORDER BY id');
    this.scopedRows = db.prepare('SELECT kind, id, data FROM records WHERE kind = ? AND id >= ? AND id < ? ORDER BY id');
    const put = db.prepare<[string, string, string]>('INSERT INTO records (kind, id, data) VALUES (?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET data = excluded.data');
    const del = db.prepare<[string, string]>('DELETE FROM records WHERE kind = ? AND id = ?');
    this.writeBatch = db.transaction((batch: Pending[]) => {
      for (const p of batch) {
        if (p.encode === undefined) {
          del.run(p.kind, p.id);
          continue;
        }
        let data: string;
        try {
          data = p.encode();
        } catch (err) {
          // A record that cannot be encoded keeps its last stored state; the others go on.
          logger.error({ err, kind: p.kind, id: p.id }, 'could not encode a record for the metadata store');
          continue;
        }
        put.run(p.kind, p.id, data);
      }
    });
  }
}

function refuseSymlink(path: string): void {
  let stat;
  try {
    stat = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (stat.isSymbolicLink()) throw new Error(`${path} is a symlink: the metadata store does not follow links in the state directory`);
  if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
}
