/**
 * The machine's own cost of what StartContainer and CreateContainer do to the disk: creating a
 * file (open with O_CREAT, then close) in the directory the runtime writes to, through the same
 * Node API. On a disk where creating an inode takes half a millisecond, that is a floor under
 * StartContainer that no runtime can go below; the report shows it beside the RPC figures.
 *
 * The probe's files stay (in their own directory, under `dir`) until the caller removes `dir` at
 * the end of its run: on ext4 without a journal every freed inode makes later creates slower for
 * a minute or more (see src/runtime/recycled-files.ts), so deleting them here would slow down the
 * runs the probe is meant to describe.
 */
import { mkdtemp, open } from 'node:fs/promises';
import { join } from 'node:path';
import { summarize, type LatencySummary } from './stats.js';

export async function measureFileCreates(dir: string, samples: number): Promise<LatencySummary> {
  const probeDir = await mkdtemp(join(dir, 'disk-probe-'));
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const path = join(probeDir, `create-probe-${i}.log`);
    const startedAt = performance.now();
    const handle = await open(path, 'a', 0o640);
    await handle.close();
    times.push(performance.now() - startedAt);
  }
  return summarize(times);
}
