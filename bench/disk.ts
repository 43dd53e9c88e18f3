/**
 * The machine's own cost of what StartContainer and CreateContainer do to the disk: creating a
 * file (open with O_CREAT, then close) in the directory the runtime writes to, through the same
 * Node API. On a disk where creating an inode takes half a millisecond, that is a floor under
 * StartContainer that no runtime can go below; the report shows it beside the RPC figures.
 */
import { open, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { summarize, type LatencySummary } from './stats.js';

export async function measureFileCreates(dir: string, samples: number): Promise<LatencySummary> {
  const times: number[] = [];
  const paths: string[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const path = join(dir, `create-probe-${i}.log`);
      const startedAt = performance.now();
      const handle = await open(path, 'a', 0o640);
      await handle.close();
      times.push(performance.now() - startedAt);
      paths.push(path);
    }
  } finally {
    await Promise.all(paths.map((p) => unlink(p).catch(() => undefined)));
  }
  return summarize(times);
}
