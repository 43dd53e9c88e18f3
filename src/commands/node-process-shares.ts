/**
 * What the runtimes of a `cri-winsim node` process share instead of holding one each: the
 * metadata database (one SQLite file under the state root, each node's rows under its name) and
 * the budget of open container log files. A node of its own holds three descriptors for its
 * database and up to 128 for its logs; a process of thousands of nodes would run out of
 * descriptors (EMFILE) long before memory.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import { LogFileHandles } from '../runtime/logging/cri-log-writer.js';
import { METADATA_DB_FILE, MetadataFile } from '../runtime/store/metadata-db.js';

/** Open container log files kept across all the nodes of a process (a node alone keeps 128). */
export const PROCESS_OPEN_LOG_FILES = 1024;

export interface NodeProcessShares {
  /** The options of node `name`'s runtime that point at the shared parts. */
  forNode(name: string): { sharedMetadata?: { file: MetadataFile; scope: string }; logFiles?: LogFileHandles };
  /** After every runtime closed: closes the database and what the log budget still holds. */
  close(): void;
}

/**
 * For several nodes: one database at `<stateRoot>/metadata.db` (durable) and one log budget.
 * One node keeps the runtime's own (its database in its state directory, as `cri-winsim runtime`).
 * Ephemeral nodes keep nothing, and the shared database an earlier durable run left is removed
 * (a later durable start must not bring back records whose files this run removes).
 */
export async function openNodeProcessShares(stateRoot: string, nodes: number, durable: boolean, logger: Logger): Promise<NodeProcessShares> {
  if (nodes === 1) return { forNode: () => ({}), close: () => undefined };
  const logFiles = new LogFileHandles(PROCESS_OPEN_LOG_FILES);
  const path = join(stateRoot, METADATA_DB_FILE);
  if (!durable) await Promise.all([path, `${path}-wal`, `${path}-shm`].map((f) => rm(f, { force: true })));
  const file = durable ? MetadataFile.in(stateRoot, logger.child({ subsystem: 'metadata' })) : undefined;
  return {
    forNode: (name) => ({ logFiles, ...(file === undefined ? {} : { sharedMetadata: { file, scope: name } }) }),
    close: () => {
      file?.release();
      logFiles.tidyUp.now();
    },
  };
}
