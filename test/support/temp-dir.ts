import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A temporary directory (under TMPDIR, named with `prefix`) made before each test of the enclosing
 * `describe` and removed with everything in it after the test. Call it where the hooks would
 * stand; the returned function gives the current test's directory.
 */
export function tempDirPerTest(prefix: string): () => string {
  let path: string | undefined;
  beforeEach(async () => {
    path = await mkdtemp(join(tmpdir(), prefix));
  });
  afterEach(async () => {
    if (path !== undefined) await rm(path, { recursive: true, force: true });
    path = undefined;
  });
  return () => {
    if (path === undefined) throw new Error(`tempDirPerTest(${JSON.stringify(prefix)}) used outside a test`);
    return path;
  };
}
