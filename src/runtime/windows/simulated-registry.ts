import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RuntimeError } from '../errors.js';

/**
 * A simulated Windows registry (string values only), persisted as one JSON file under the
 * runtime's state directory so a restarted runtime can sweep what a previous run left behind.
 * Key paths and value names are case-insensitive, as in the real registry; stored as first written.
 * Writes are serialised and atomic (temporary file + rename); the file is 0600 in a 0700 directory.
 */
export class SimulatedRegistry {
  /** The JSON file, as derived from the state directory the user gave. */
  readonly path: string;
  private keys: Map<string, { key: string; values: Map<string, { name: string; data: string }> }>;
  private writes: Promise<void> = Promise.resolve();

  private constructor(path: string, keys: SimulatedRegistry['keys']) {
    this.path = path;
    this.keys = keys;
  }

  /** Opens (or creates) `<stateDir>/registry/registry.json`. */
  static async open(stateDir: string): Promise<SimulatedRegistry> {
    const dir = join(stateDir, 'registry');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
    const path = join(dir, 'registry.json');
    // Temporary files of writes interrupted by a crash.
    for (const leftover of await readdir(dir)) {
      if (/^registry\.json\.[0-9a-f]{16}\.tmp$/.test(leftover)) await rm(join(dir, leftover), { force: true });
    }
    let text: string | undefined;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const keys: SimulatedRegistry['keys'] = new Map();
    if (text !== undefined) {
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch (err) {
        throw new RuntimeError('Internal', `${path}: simulated registry is not valid JSON: ${(err as Error).message}`);
      }
      if (typeof data !== 'object' || data === null || typeof (data as { keys?: unknown }).keys !== 'object') {
        throw new RuntimeError('Internal', `${path}: simulated registry must be an object with "keys"`);
      }
      for (const [key, values] of Object.entries((data as { keys: Record<string, unknown> }).keys)) {
        const entry = { key, values: new Map<string, { name: string; data: string }>() };
        for (const [name, value] of Object.entries((values ?? {}) as Record<string, unknown>)) {
          if (typeof value !== 'string') {
            throw new RuntimeError('Internal', `${path}: keys["${key}"]["${name}"] must be a string`);
          }
          entry.values.set(name.toLowerCase(), { name, data: value });
        }
        keys.set(key.toLowerCase(), entry);
      }
    }
    return new SimulatedRegistry(path, keys);
  }

  getStringValue(key: string, name: string): string | undefined {
    return this.keys.get(key.toLowerCase())?.values.get(name.toLowerCase())?.data;
  }

  valueNames(key: string): string[] {
    return [...(this.keys.get(key.toLowerCase())?.values.values() ?? [])].map((v) => v.name);
  }

  async setStringValue(key: string, name: string, data: string): Promise<void> {
    let entry = this.keys.get(key.toLowerCase());
    if (entry === undefined) {
      entry = { key, values: new Map() };
      this.keys.set(key.toLowerCase(), entry);
    }
    const previous = entry.values.get(name.toLowerCase());
    entry.values.set(name.toLowerCase(), { name, data });
    try {
      await this.persist();
    } catch (err) {
      // Memory must not claim what the disk does not hold.
      if (previous === undefined) entry.values.delete(name.toLowerCase());
      else entry.values.set(name.toLowerCase(), previous);
      throw err;
    }
  }

  /** Deletes a value; false when there was none. */
  async deleteValue(key: string, name: string): Promise<boolean> {
    const entry = this.keys.get(key.toLowerCase());
    const previous = entry?.values.get(name.toLowerCase());
    if (entry === undefined || previous === undefined) return false;
    entry.values.delete(name.toLowerCase());
    try {
      await this.persist();
    } catch (err) {
      entry.values.set(name.toLowerCase(), previous);
      throw err;
    }
    return true;
  }

  private snapshot(): string {
    const keys: Record<string, Record<string, string>> = {};
    for (const { key, values } of this.keys.values()) {
      keys[key] = Object.fromEntries([...values.values()].map((v) => [v.name, v.data]));
    }
    return `${JSON.stringify({ keys }, null, 2)}\n`;
  }

  /** Queues a write of the current state; each write sees every change made before it. */
  private persist(): Promise<void> {
    const run = async (): Promise<void> => {
      const temporary = `${this.path}.${randomBytes(8).toString('hex')}.tmp`;
      try {
        await writeFile(temporary, this.snapshot(), { mode: 0o600, flag: 'wx' });
        await rename(temporary, this.path);
      } catch (err) {
        await rm(temporary, { force: true });
        throw err;
      }
    };
    const next = this.writes.then(run, run);
    this.writes = next.catch(() => undefined);
    return next;
  }
}
