/**
 * The fake kubelet's record of a pod the API server's admission refused (the pod was never
 * created, so it has no pod record): what was sent and who refused it, for `cri-winsim explain`.
 * `<root>/admission-refusals/<namespace>_<name>.json`, 0600 (the pod may carry a credential spec);
 * removed once a pod of that name is admitted.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { AdmissionRefusal } from './identity-explanation.js';

export interface RecordedRefusal {
  readonly pod: V1Pod;
  readonly refusal: AdmissionRefusal;
  /** RFC 3339. */
  readonly time: string;
}

const namePattern = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export class AdmissionRefusalStore {
  readonly directory: string;

  constructor(rootDir: string) {
    this.directory = join(rootDir, 'admission-refusals');
  }

  /** Undefined for names that cannot be a pod's (nothing is stored for those). */
  private file(namespace: string, name: string): string | undefined {
    if (!namePattern.test(namespace) || !namePattern.test(name)) return undefined;
    return join(this.directory, `${namespace}_${name}.json`);
  }

  async save(record: RecordedRefusal): Promise<void> {
    const file = this.file(record.pod.metadata?.namespace || 'default', record.pod.metadata?.name ?? '');
    if (file === undefined) return;
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
    await rename(temporary, file);
  }

  async load(namespace: string, name: string): Promise<RecordedRefusal | undefined> {
    const file = this.file(namespace, name);
    if (file === undefined) return undefined;
    try {
      return JSON.parse(await readFile(file, 'utf8')) as RecordedRefusal;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`admission refusal record ${file}: ${(err as Error).message}`, { cause: err });
    }
  }

  async remove(namespace: string, name: string): Promise<void> {
    const file = this.file(namespace, name);
    if (file !== undefined) await rm(file, { force: true });
  }
}
