import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';

/**
 * Who holds a lock file: the process's pid, its start time where the system says it (Linux:
 * /proc/<pid>/stat, so that a pid reused by another process after a crash does not count as the
 * holder), and what the holder chose to add (the state directory, a pod range).
 */
export interface LockHolder {
  readonly pid: number;
  /** Clock ticks after boot the process started at (field 22 of /proc/<pid>/stat); absent off Linux. */
  readonly started?: string;
  readonly hostname?: string;
  readonly [key: string]: unknown;
}

/** What acquire() answers: the lock, or the live process that holds it. */
export type LockOutcome = { readonly lock: PidLockFile } | { readonly heldBy: LockHolder };

/** How many times a stale lock is taken over before acquire() gives up on a lock that keeps changing. */
const ATTEMPTS = 20;
const RETRY_MS = 25;

/** Field 22 of /proc/<pid>/stat (start time), and whether the process is a zombie; undefined without procfs. */
function procStat(pid: number): { started: string; zombie: boolean } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses; the fields follow the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { started: fields[19] ?? '', zombie: fields[0] === 'Z' };
}

/** Whether the process that wrote the lock still runs: its pid answers and, where known, started when it said. */
export function holderAlive(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    // EPERM: a live process of another user.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = procStat(holder.pid);
  if (stat === undefined) return true;
  if (stat.zombie) return false;
  return holder.started === undefined || holder.started === stat.started;
}

/** The holder a lock file names; undefined when there is no such file or it is not a lock file. */
export async function readHolder(path: string): Promise<LockHolder | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return parseHolder(text);
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null && Number.isInteger((parsed as { pid?: unknown }).pid)) return parsed as LockHolder;
  } catch {
    // not a lock file of ours: handled as stale below
  }
  return undefined;
}

/** The live holder of a lock file, if any (a stale lock of a dead process answers undefined). */
export async function liveHolder(path: string): Promise<LockHolder | undefined> {
  const holder = await readHolder(path);
  return holder !== undefined && holderAlive(holder) ? holder : undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A lock file naming the process that holds it (flock(2) is not in Node's core). Taken
 * atomically: the content is written to a file of its own first and then hard-linked to the lock's
 * name, which fails when the name exists, so no process ever reads a half-written lock. A lock
 * whose holder has died is stale and is taken over; the takeover itself runs under a second lock
 * (`<path>.takeover`), so two processes that find the same stale lock do not both take it.
 */
export class PidLockFile {
  private released = false;

  private constructor(
    readonly path: string,
    private readonly content: string,
  ) {}

  /** The lock, or the live process holding it. `details` are written into the lock for whoever finds it taken. */
  static async acquire(path: string, details: Record<string, string | number> = {}): Promise<LockOutcome> {
    const started = procStat(process.pid)?.started;
    const content = `${JSON.stringify({ ...details, pid: process.pid, ...(started === undefined ? {} : { started }), hostname: hostname() })}\n`;
    const staged = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(staged, content, { flag: 'wx', mode: 0o644 });
    try {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        if (await linkIfAbsent(staged, path)) return { lock: new PidLockFile(path, content) };
        const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return undefined;
          throw err;
        });
        if (text === undefined) continue; // released meanwhile
        const holder = parseHolder(text);
        if (holder !== undefined && holderAlive(holder)) return { heldBy: holder };
        await takeOver(path, text, staged);
      }
    } finally {
      await unlink(staged).catch(() => undefined);
    }
    throw new Error(`cannot take the lock ${path}: it kept changing hands`);
  }

  /** Removes the lock file, if it is still this one's. Safe to call twice. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const text = await readFile(this.path, 'utf8').catch(() => undefined);
    if (text === this.content) await unlink(this.path).catch(() => undefined);
  }
}

async function linkIfAbsent(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** Removes the stale lock `path` (whose content was `stale`), unless another process changed it meanwhile. */
async function takeOver(path: string, stale: string, staged: string): Promise<void> {
  const guard = `${path}.takeover`;
  if (!(await linkIfAbsent(staged, guard))) {
    const taking = await readHolder(guard);
    // A process that died while taking over left its guard: remove it and try again.
    if (taking === undefined || !holderAlive(taking)) await unlink(guard).catch(() => undefined);
    else await sleep(RETRY_MS);
    return;
  }
  try {
    const now = await readFile(path, 'utf8').catch(() => undefined);
    if (now === stale) await unlink(path).catch(() => undefined);
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}
