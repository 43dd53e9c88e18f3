import { constants, lstatSync, mkdirSync, openSync, closeSync, chmodSync } from 'node:fs';
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
  /** The open connection; none while released (reopened by the next read or commit). */
  private connection: Connection | undefined;

  private constructor(
    private readonly path: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Opens (creating) the database in `stateDir`, which must be a real directory, not a symlink;
   * the database file and its WAL must not be symlinks either (a planted link would make the
   * runtime write where the link points). The directory is made mode 0700.
   */
  static open(stateDir: string, logger: Logger): MetadataDb {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const dir = lstatSync(stateDir);
    if (!dir.isDirectory()) throw new Error(`state directory ${stateDir} is not a directory (a symlink is refused)`);
    if ((dir.mode & 0o077) !== 0) chmodSync(stateDir, 0o700);
    const store = new MetadataDb(join(stateDir, METADATA_DB_FILE), logger);
    store.connect();
    return store;
  }

  /**
   * Closes the connection while nothing waits to be committed: an idle runtime holds no SQLite
   * connection (its page cache and buffers). The next read or change opens it again, with the
   * checks of open(); what is committed stays committed.
   */
  release(): void {
    if (this.closed || this.pending.size > 0 || this.flushPromise !== undefined) return;
    this.connection?.db.close();
    this.connection = undefined;
  }

  /** Whether a connection is open now (tests; released stores hold none). */
  get connected(): boolean {
    return this.connection !== undefined;
  }

  private connect(): Connection {
    if (this.connection !== undefined) return this.connection;
    const path = this.path;
    for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) refuseSymlink(file);
    // Created here with O_NOFOLLOW and 0600, so SQLite opens a regular file of ours.
    closeSync(openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600));
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.exec('CREATE TABLE IF NOT EXISTS records (kind TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (kind, id)) WITHOUT ROWID');
      this.connection = new Connection(db, this.logger);
    } catch (err) {
      db.close();
      throw err;
    }
    return this.connection;
  }

  /** Every stored row, in kind order (images, sandboxes, containers, meta are read by kind). */
  rows(kind: RecordKind): StoredRow[] {
    return this.connect().db.prepare('SELECT kind, id, data FROM records WHERE kind = ? ORDER BY id').all(kind) as StoredRow[];
  }

  /** The record changed: it is encoded and written with the others of this turn. */
  changed(kind: RecordKind, id: string, encode: () => string): void {
    this.queue({ kind, id, encode });
  }

  /** The record is gone: its row is deleted with the other changes of this turn. */
  removed(kind: RecordKind, id: string): void {
    this.queue({ kind, id, encode: undefined });
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
    this.connection?.db.close();
    this.connection = undefined;
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
      this.connect().writeBatch(batch);
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

/** An open SQLite connection and its prepared statements. */
class Connection {
  readonly writeBatch: (batch: Pending[]) => void;

  constructor(
    readonly db: Database.Database,
    logger: Logger,
  ) {
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
