import { closeSync, constants, ftruncateSync, linkSync, openSync, renameSync, unlinkSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { closeQuietly, type TidyUp } from '../tidy-up.js';

/** Directory under the runtime's state dir that holds one spare directory per kind of file. */
export const SPARE_FILES_DIRECTORY = 'spare-files';

/** open(2) flags of a removal: read-write to empty the file, no symbolic link, no wait on a FIFO. */
const RECYCLE_OPEN_FLAGS = constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** How many removed files are kept for reuse by default; beyond that a removal unlinks. */
export const DEFAULT_RECYCLED_CAPACITY = 1024;

/** The file calls RecycledFiles makes through its runtime's policy (FileCalls). */
export interface SpareFileCalls {
  readonly tidyUp: TidyUp;
  open(path: string, flags: string, mode: number): Promise<number>;
  unlink(path: string): Promise<void>;
}

/**
 * Short-lived files of one kind keep their inodes: a removed file is renamed into a directory of
 * spares and emptied instead of being unlinked, and the next create links a spare to the new name
 * instead of making an inode. The named files appear and disappear exactly as with
 * open(O_CREAT|O_EXCL) and unlink; only the inode is reused. The credential spec file is one
 * (created at CreateContainer, removed after StartContainer): a runtime that starts containers
 * creates and removes one per container.
 *
 * Why: on ext4 without a journal (the file systems of many small VMs and CI machines), the inode
 * allocator passes over every inode freed in the last minute or more (`recently_deleted` in
 * fs/ext4/ialloc.c, an inode-table lookup each), so each unlink made every later create on the
 * file system slower for minutes — the runtime's own log files and credential specs, and
 * everything else on the machine. Linking a spare frees and allocates no inode. The figures:
 * bench/README.md, "Tuning tricks".
 *
 * The spare operations act on existing inodes in directories in constant use and run inline; a
 * create without a spare goes through the file-call policy (it may wait on the disk). The spare directory
 * must be on the file system of the files it serves; where it is not (EXDEV) or hard links are not
 * supported, files are created and unlinked as usual.
 */
export class RecycledFiles {
  /** Spare files, empty, newest last. */
  private readonly spares: string[] = [];
  private named = 0;
  private recycling = true;
  /** Removed files still to be emptied (their tidy-up is queued): spares soon, within the capacity. */
  private emptying = 0;
  /** False once closed: a file emptied after that is unlinked, not kept. */
  private open = true;

  private constructor(
    readonly directory: string,
    private readonly mode: number,
    private readonly load: SpareFileCalls,
    readonly capacity: number,
  ) {}

  /**
   * Creates the 0700 spare directory (or empties it: spares a crash left may still hold a file's
   * content) for files created with `mode`.
   */
  static async open(directory: string, mode: number, load: SpareFileCalls, capacity = DEFAULT_RECYCLED_CAPACITY): Promise<RecycledFiles> {
    if (!Number.isInteger(capacity) || capacity < 0) throw new Error(`recycled file capacity must be a non-negative integer, not ${capacity}`);
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const leftovers = await readdir(directory);
    await Promise.all(leftovers.map((name) => rm(join(directory, name), { recursive: true, force: true })));
    return new RecycledFiles(directory, mode, load, capacity);
  }

  /** Spare files now (for tests). */
  get spareCount(): number {
    return this.spares.length;
  }

  /**
   * A new, empty file at `path`, open for writing; resolves with its descriptor. Like
   * open(path, 'wx', mode): fails with EEXIST when something is at `path`, never replaces it.
   * A spare taken for it keeps its name in the spare directory, a second link, until tidy-up
   * (TidyUp) unlinks it after the reply.
   */
  async create(path: string): Promise<number> {
    for (let spare = this.spares.pop(); spare !== undefined; spare = this.spares.pop()) {
      let fd: number;
      try {
        fd = openSync(spare, 'r+');
      } catch {
        continue; // The spare was removed behind our back: try the next one.
      }
      try {
        // link, not rename: it refuses an existing target as O_EXCL does.
        linkSync(spare, path);
      } catch (err) {
        closeSync(fd);
        this.spares.push(spare);
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST' || code === 'ENOENT') throw err;
        // No hard links here (EXDEV, EPERM): stop recycling and create as usual.
        this.recycling = false;
        await this.close();
        break;
      }
      // The spare's own name goes as tidy-up: the inode keeps its new name, nothing is freed.
      this.load.tidyUp.later(() => unlinkQuietly(spare));
      return fd;
    }
    return this.load.open(path, 'wx', this.mode);
  }

  /**
   * Removes the file at `path` and keeps its inode as a spare, emptied; anything but a regular
   * file (a directory fails as unlink fails on it) and any file beyond the capacity is unlinked.
   * False when nothing was at `path`. The name is gone when this resolves; the inode is emptied
   * and becomes a spare just after, as tidy-up (TidyUp): two of the four system calls of a
   * removal were on the clock of the call that removed the file (StartContainer).
   */
  async remove(path: string): Promise<boolean> {
    if (!this.recycling || this.spares.length + this.emptying >= this.capacity) return this.unlink(path);
    let fd: number;
    try {
      // Not through a symbolic link (ELOOP), never waiting on a FIFO; a directory fails (EISDIR).
      fd = openSync(path, RECYCLE_OPEN_FLAGS);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      return this.unlink(path); // Not a file we can empty: removed as unlink removes it (or fails as it does).
    }
    const spare = join(this.directory, `spare-${++this.named}`);
    try {
      renameSync(path, spare);
    } catch (err) {
      closeQuietly(fd);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return false;
      if (code !== 'EXDEV') throw err;
      return this.unlink(path); // Another file system: nothing to reuse.
    }
    this.emptying++;
    this.load.tidyUp.later(() => this.keepEmptied(fd, spare));
    return true;
  }

  /**
   * A removed file's inode, moved to `spare`: emptied, it becomes a spare. Only a regular file can
   * be truncated, so nothing else (a FIFO), and nothing it held, is kept; it is unlinked instead.
   */
  private keepEmptied(fd: number, spare: string): void {
    this.emptying--;
    try {
      ftruncateSync(fd, 0);
      if (this.open) this.spares.push(spare);
      else unlinkQuietly(spare);
    } catch {
      unlinkQuietly(spare);
    } finally {
      closeQuietly(fd);
    }
  }

  /** Unlinks every spare (shutdown). */
  async close(): Promise<void> {
    this.open = false;
    this.load.tidyUp.now(); // Removed files still being emptied.
    const spares = this.spares.splice(0);
    await Promise.all(spares.map((s) => this.unlink(s)));
  }

  private async unlink(path: string): Promise<boolean> {
    try {
      await this.load.unlink(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }
}

/** Unlinks a name nothing waits for; one left behind goes with the next open of the spare directory. */
function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Left in the spare directory.
  }
}
