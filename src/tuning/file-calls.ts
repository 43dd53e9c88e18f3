import { open, openSync, unlink, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TidyUp } from '../tidy-up.js';
import { DEFAULT_RECYCLED_CAPACITY, RecycledFiles, SPARE_FILES_DIRECTORY } from './recycled-files.js';

// The callback forms run in the thread pool without the FileHandle objects of fs/promises.
const openAsync = promisify(open);
const unlinkAsync = promisify(unlink);

/**
 * Files a runtime creates and removes again soon (a credential spec lives from CreateContainer to
 * StartContainer): create as open(path, 'wx', mode), remove as unlink (false when nothing was
 * there), close at shutdown.
 */
export interface ShortLivedFiles {
  /** A new, empty file at `path`, open for writing; fails with EEXIST when something is there. */
  create(path: string): Promise<number>;
  /** Removes the file at `path`; false when nothing was there. */
  remove(path: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * How one runtime makes its file system calls: the seam the runtime's code uses for the few
 * files its calls create and remove (the credential spec, the log file). One per runtime: it
 * counts that runtime's calls in flight (`enter`/`leave`).
 */
export interface FileCalls {
  /** The runtime's tidy-up queue: work its calls leave for after their replies. */
  readonly tidyUp: TidyUp;
  /** A runtime call began / ended. */
  enter(): void;
  leave(): void;
  /** Calls in flight now (for tests and metrics). */
  readonly calls: number;
  /** Whether the asking call may make its file operations as synchronous calls now. */
  readonly inline: boolean;
  /** open(2); resolves with the descriptor. */
  open(path: string, flags: string, mode: number): Promise<number>;
  /** unlink(2). */
  unlink(path: string): Promise<void>;
  /**
   * Short-lived files of one kind, created with `mode`. `spareName` names a directory under
   * `stateDir` the policy may keep spare files in (on the same file system).
   */
  shortLivedFiles(stateDir: string, spareName: string, mode: number): Promise<ShortLivedFiles>;
}

/** Which of the measured file tricks a policy uses (bench/README.md, "Tuning tricks"). */
export interface FileCallOptions {
  /** A lone call (the only one in flight) makes its file operations inline, not in the thread pool. */
  readonly inlineWhenAlone: boolean;
  /** Short-lived files keep their inodes (RecycledFiles) instead of being unlinked. */
  readonly recycleInodes: boolean;
  /** How many removed files are kept for reuse at most. */
  readonly recycledCapacity: number;
}

/** The tricks whose figures pay (bench/README.md): what a runtime uses unless told otherwise. */
export const MEASURED_FILE_CALLS: FileCallOptions = { inlineWhenAlone: true, recycleInodes: true, recycledCapacity: DEFAULT_RECYCLED_CAPACITY };
/** Every file call through the thread pool, files created and unlinked as usual. */
export const PLAIN_FILE_CALLS: FileCallOptions = { inlineWhenAlone: false, recycleInodes: false, recycledCapacity: 0 };

/** Where the spare files of every kind live, under the runtime's state dir. */
export { SPARE_FILES_DIRECTORY };

/**
 * The file-call policy. With `inlineWhenAlone`, it counts the runtime calls in flight and a call's
 * few file operations run inline, as the synchronous system call on the event loop, when that call
 * is the only one, and in the thread pool otherwise: through the pool a create or unlink also
 * takes a hand-off to a pool thread and back, two thread switches that on a small machine wait for
 * a core the client and the event loop are using; a lone call has nothing waiting behind it, and
 * when other calls are in flight they must not wait behind the disk.
 */
export class FileCallPolicy implements FileCalls {
  private inFlight = 0;

  constructor(
    readonly options: FileCallOptions = MEASURED_FILE_CALLS,
    readonly tidyUp: TidyUp = new TidyUp(),
  ) {}

  enter(): void {
    this.inFlight++;
  }

  leave(): void {
    this.inFlight--;
  }

  /** Calls running now (for tests and metrics). */
  get calls(): number {
    return this.inFlight;
  }

  /** True when the policy inlines and at most one call (the asking one) is in flight. */
  get inline(): boolean {
    return this.options.inlineWhenAlone && this.inFlight <= 1;
  }

  async open(path: string, flags: string, mode: number): Promise<number> {
    return this.inline ? openSync(path, flags, mode) : openAsync(path, flags, mode);
  }

  async unlink(path: string): Promise<void> {
    if (this.inline) unlinkSync(path);
    else await unlinkAsync(path);
  }

  async shortLivedFiles(stateDir: string, spareName: string, mode: number): Promise<ShortLivedFiles> {
    if (!this.options.recycleInodes) return new PlainShortLivedFiles(this, mode);
    return RecycledFiles.open(join(stateDir, SPARE_FILES_DIRECTORY, spareName), mode, this, this.options.recycledCapacity);
  }
}

/** Created with open(O_CREAT|O_EXCL), removed with unlink. */
export class PlainShortLivedFiles implements ShortLivedFiles {
  constructor(
    private readonly calls: Pick<FileCalls, 'open' | 'unlink'>,
    private readonly mode: number,
  ) {}

  create(path: string): Promise<number> {
    return this.calls.open(path, 'wx', this.mode);
  }

  async remove(path: string): Promise<boolean> {
    try {
      await this.calls.unlink(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  async close(): Promise<void> {}
}
