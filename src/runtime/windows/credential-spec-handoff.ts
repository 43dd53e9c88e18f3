import { writeFileSync } from 'node:fs';
import { chmod, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../log.js';
import { silentLogger } from '../../log.js';
import { FileCallPolicy, SPARE_FILES_DIRECTORY, type FileCalls, type ShortLivedFiles } from '../../tuning/file-calls.js';
import { RuntimeError } from '../errors.js';
import { RandomSource } from '../ids.js';
import { SimulatedRegistry } from './simulated-registry.js';

/** Where cri-dockerd (and dockershim before it) put credential specs (REFERENCE §7). */
export const CREDENTIAL_SPEC_REGISTRY_KEY =
  'HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Virtualization\\Containers\\CredentialSpecs';

/** cri-dockerd's value name prefix; the name continues with 80 hex digits (40 random bytes). */
export const CREDENTIAL_SPEC_NAME_PREFIX = 'k8s-cred-spec-';

/** Directory under the state dir that `file://` credential specs are relative to, like moby's `<root>\CredentialSpecs`. */
export const CREDENTIAL_SPEC_DIRECTORY = 'CredentialSpecs';

/** The name of the credential spec files' spare directory, for a file-call policy that keeps spares. */
const CREDENTIAL_SPEC_SPARES = 'credential-specs';

/** Where a file-call policy that keeps spare files keeps the credential specs' (under the state dir). */
export const RECYCLED_CREDENTIAL_SPEC_DIRECTORY = join(SPARE_FILES_DIRECTORY, CREDENTIAL_SPEC_SPARES);

/** The staged file's mode: the spec never exists with wider permissions (the umask can only narrow it). */
const CREDENTIAL_SPEC_FILE_MODE = 0o600;

const STAGED_NAME = /^k8s-cred-spec-[0-9a-f]{80}(\.json)?$/;

/**
 * `file`: the GMSA KEP's temporary file, deleted right after StartContainer.
 * `registry`: cri-dockerd's registry value, kept until RemoveContainer.
 */
export type CredentialSpecTransportKind = 'file' | 'registry';

/** Checks a `--credspec-transport` value. */
export function parseCredentialSpecTransport(value: string): CredentialSpecTransportKind {
  if (value === 'file' || value === 'registry') return value;
  throw new RuntimeError('InvalidArgument', `--credspec-transport: must be "file" or "registry", not ${JSON.stringify(value)}`);
}

/** A credential spec handed to the runtime backend for one container. */
export interface StagedCredentialSpec {
  transport: CredentialSpecTransportKind;
  /** File name (in the credential spec directory) or registry value name. */
  name: string;
  /** The Docker security option that references it: `credentialspec=file://<name>` or `…registry://<name>`. */
  securityOption: string;
}

/** Told about every credential spec written and removed (metrics). */
export interface CredentialSpecHandoffObserver {
  onWritten?(staged: StagedCredentialSpec): void;
  onRemoved?(staged: StagedCredentialSpec): void;
}

/** An unguessable name: the prefix and 40 random bytes in hex, as cri-dockerd names registry values. */
export function newCredentialSpecName(random: RandomSource = new RandomSource()): string {
  return `${CREDENTIAL_SPEC_NAME_PREFIX}${random.hex(40)}`;
}

function outstandingKey(staged: StagedCredentialSpec): string {
  return `${staged.transport}:${staged.name}`;
}

/** The staged credential spec a security option refers to, if it is one this layer created. */
export function stagedFromSecurityOption(option: string): StagedCredentialSpec | undefined {
  const match = /^credentialspec=(file|registry):\/\/(.*)$/i.exec(option);
  if (match === null) return undefined;
  const transport = match[1]!.toLowerCase() as CredentialSpecTransportKind;
  const name = match[2]!;
  if (!STAGED_NAME.test(name)) return undefined;
  if ((transport === 'file') !== name.endsWith('.json')) return undefined;
  return { transport, name, securityOption: option };
}

/**
 * The dockershim layer's credential spec hand-off (DESIGN.md "Credential spec hand-off"):
 * writes the CRI credential spec where the backend reads it and returns the security option that
 * names it; removes it again; sweeps leftovers at start-up. Both transports are always readable
 * (a restart may change `--credspec-transport`), and the sweep covers both.
 *
 * Cleanup points for the caller (CreateContainer/StartContainer/RemoveContainer):
 * - CreateContainer: `stageDuring(spec, create)` removes the staged spec if `create` fails.
 * - StartContainer: `releaseAfterStart(securityOptions)` in a `finally` (success or failure);
 *   it removes the KEP's file and keeps cri-dockerd's registry value.
 * - RemoveContainer: `releaseOnRemove(securityOptions)`; its failure fails the removal.
 * - Runtime start-up: `sweep()`.
 */
export class CredentialSpecHandoff {
  readonly transport: CredentialSpecTransportKind;
  /** `<stateDir>/CredentialSpecs`, mode 0700: where staged files live and `file://` is relative to. */
  readonly directory: string;
  readonly registry: SimulatedRegistry;
  private readonly logger: Logger;
  private readonly observer: CredentialSpecHandoffObserver;
  /**
   * `transport:name` of every spec this hand-off staged and has not yet seen removed. Containers
   * do not outlive the runtime and the start-up sweep takes whatever an earlier run left, so a
   * staged spec that is not in here is already gone: RemoveContainer skips the disk for it.
   */
  private readonly outstanding = new Set<string>();

  private constructor(
    transport: CredentialSpecTransportKind,
    directory: string,
    registry: SimulatedRegistry,
    logger: Logger,
    observer: CredentialSpecHandoffObserver,
    private readonly files: ShortLivedFiles,
    private readonly load: FileCalls,
    private readonly random: RandomSource,
  ) {
    this.transport = transport;
    this.directory = directory;
    this.registry = registry;
    this.logger = logger;
    this.observer = observer;
  }

  /** Creates the 0700 credential spec directory and opens the simulated registry under `stateDir`. */
  static async open(
    stateDir: string,
    transport: CredentialSpecTransportKind = 'file',
    logger: Logger = silentLogger(),
    observer: CredentialSpecHandoffObserver = {},
    load: FileCalls = new FileCallPolicy(),
    random: RandomSource = new RandomSource(),
  ): Promise<CredentialSpecHandoff> {
    const directory = join(stateDir, CREDENTIAL_SPEC_DIRECTORY);
    await mkdir(directory, { recursive: true, mode: 0o700 });
    // mkdir's mode is filtered by the umask and ignored for an existing directory.
    await chmod(directory, 0o700);
    const registry = await SimulatedRegistry.open(stateDir);
    const files = await load.shortLivedFiles(stateDir, CREDENTIAL_SPEC_SPARES, CREDENTIAL_SPEC_FILE_MODE);
    return new CredentialSpecHandoff(transport, directory, registry, logger, observer, files, load, random);
  }

  /** True for the KEP's file: delete it as soon as StartContainer returns. */
  get removeAfterStart(): boolean {
    return this.transport === 'file';
  }

  /** Writes the credential spec (file 0600 with an unguessable name, or a registry value). */
  async stage(credentialSpec: string): Promise<StagedCredentialSpec> {
    const staged = await this.write(credentialSpec);
    this.outstanding.add(outstandingKey(staged));
    this.observer.onWritten?.(staged);
    return staged;
  }

  private async write(credentialSpec: string): Promise<StagedCredentialSpec> {
    if (this.transport === 'registry') {
      const name = newCredentialSpecName(this.random);
      await this.registry.setStringValue(CREDENTIAL_SPEC_REGISTRY_KEY, name, credentialSpec);
      return { transport: 'registry', name, securityOption: `credentialspec=registry://${name}` };
    }
    const name = `${newCredentialSpecName(this.random)}.json`;
    const path = join(this.directory, name);
    // Written directly rather than through tmp-promise's `file`: tmp resolves its directory
    // (realpath, an lstat per path component) and stats the name on every call, and the old code
    // also fsynced; together that was most of the GMSA penalty per container start. None of it
    // buys anything here: the directory is ours, created 0700 once in `open`; the 80-hex random
    // name cannot collide; and the create refuses any existing file (O_EXCL, or link(2) for a
    // reused inode). The file lives only from CreateContainer to StartContainer and the start-up
    // sweep removes whatever a crash leaves, so durability (fsync) is not wanted. Mode 0600 at
    // creation, so the file never exists with wider permissions (the umask can only narrow it).
    // The runtime's file-call policy creates and removes it (ShortLivedFiles); writing a few
    // hundred bytes into the page cache is a memory operation, done inline; the close is tidy-up
    // after the reply (TidyUp.closeLater).
    const fd = await this.files.create(path);
    try {
      try {
        // No encoding argument: UTF-8 is the default, and Node copies its default options
        // object for every string one it is given.
        writeFileSync(fd, credentialSpec);
      } finally {
        this.load.tidyUp.closeLater(fd);
      }
    } catch (err) {
      // A failed write leaves the file; never leave a partial spec behind.
      await this.files.remove(path).catch(() => undefined);
      throw err;
    }
    return { transport: 'file', name, securityOption: `credentialspec=file://${name}` };
  }

  /** Deletes a staged credential spec; false when it was already gone. */
  async remove(staged: StagedCredentialSpec): Promise<boolean> {
    if (!STAGED_NAME.test(staged.name)) {
      throw new Error(`refusing to remove ${JSON.stringify(staged.name)}: not a staged credential spec name`);
    }
    const removed = await this.delete(staged);
    this.outstanding.delete(outstandingKey(staged));
    if (removed) this.observer.onRemoved?.(staged);
    return removed;
  }

  private async delete(staged: StagedCredentialSpec): Promise<boolean> {
    if (staged.transport === 'registry') {
      return this.registry.deleteValue(CREDENTIAL_SPEC_REGISTRY_KEY, staged.name);
    }
    // The name is checked against STAGED_NAME, so it is a file of ours; anything else found under
    // it (a directory) fails the removal as unlink would, and the kubelet's retry comes back.
    return this.files.remove(join(this.directory, staged.name));
  }

  /**
   * Deletes the staged credential specs a container's security options name that are still there
   * (RemoveContainer): cri-dockerd's registry value, or the KEP's file when its removal after
   * StartContainer failed. Options that name anything else (a user's own `file://x.json`) are
   * left alone.
   */
  async removeReferenced(securityOptions: readonly string[]): Promise<number> {
    let removed = 0;
    for (const option of securityOptions) {
      const staged = stagedFromSecurityOption(option);
      if (staged !== undefined && this.outstanding.has(outstandingKey(staged)) && (await this.remove(staged))) removed++;
    }
    return removed;
  }

  /**
   * CreateContainer: stages the credential spec, then runs `create` with it. If `create` fails,
   * the staged spec is removed before the error goes on, so no error path between staging and
   * start leaves it behind (a removal that itself fails is logged, as cri-dockerd does, and the
   * start-up sweep takes it).
   * Without a credential spec `create` runs with undefined.
   */
  async stageDuring<T>(credentialSpec: string | undefined, create: (staged: StagedCredentialSpec | undefined) => Promise<T>): Promise<T> {
    if (credentialSpec === undefined || credentialSpec === '') return create(undefined);
    const staged = await this.stage(credentialSpec);
    try {
      return await create(staged);
    } catch (err) {
      try {
        await this.remove(staged);
      } catch (cleanupErr) {
        // The CreateContainer error is the one to report; the start-up sweep removes what is left.
        this.logger.warn({ err: cleanupErr, credentialSpecRef: staged.name }, 'failed to remove credential spec after CreateContainer failed');
      }
      throw err;
    }
  }

  /**
   * StartContainer has returned (success or failure): the KEP's file is no longer needed.
   * Registry values stay until RemoveContainer. Returns how many were removed.
   */
  async releaseAfterStart(securityOptions: readonly string[]): Promise<number> {
    let removed = 0;
    for (const option of securityOptions) {
      const staged = stagedFromSecurityOption(option);
      if (staged?.transport === 'file' && (await this.remove(staged))) removed++;
    }
    return removed;
  }

  /** RemoveContainer: removes whatever is left; a failure fails the removal, so the kubelet retries. */
  async releaseOnRemove(securityOptions: readonly string[]): Promise<number> {
    return this.removeReferenced(securityOptions);
  }

  /** Every staged credential spec that currently exists, both transports. */
  async leftovers(): Promise<StagedCredentialSpec[]> {
    const files = (await readdir(this.directory)).filter((n) => STAGED_NAME.test(n) && n.endsWith('.json'));
    const values = this.registry.valueNames(CREDENTIAL_SPEC_REGISTRY_KEY).filter((n) => STAGED_NAME.test(n) && !n.endsWith('.json'));
    return [
      ...files.map((name) => ({ transport: 'file' as const, name, securityOption: `credentialspec=file://${name}` })),
      ...values.map((name) => ({ transport: 'registry' as const, name, securityOption: `credentialspec=registry://${name}` })),
    ];
  }

  /**
   * Shutdown: removes every staged credential spec but those `keep` names (the security options
   * of containers a durable runtime keeps), then the spare files kept for reuse.
   */
  async close(keep: Iterable<readonly string[]> = []): Promise<void> {
    await this.sweep(keep);
    await this.files.close();
  }

  /**
   * Start-up sweep: removes every leftover staged credential spec that no kept container's
   * security options (`keep`) name; returns what it removed.
   */
  async sweep(keep: Iterable<readonly string[]> = []): Promise<StagedCredentialSpec[]> {
    const needed = new Set<string>();
    for (const options of keep) {
      for (const option of options) {
        const staged = stagedFromSecurityOption(option);
        if (staged !== undefined) needed.add(`${staged.transport}:${staged.name}`);
      }
    }
    const all = await this.leftovers();
    const found = all.filter((staged) => !needed.has(`${staged.transport}:${staged.name}`));
    // What is kept is this runtime's to remove at start or RemoveContainer, as if it had staged it.
    for (const staged of all) if (needed.has(`${staged.transport}:${staged.name}`)) this.outstanding.add(outstandingKey(staged));
    for (const staged of found) await this.remove(staged);
    if (found.length > 0) this.logger.info({ removed: found.length }, 'removed leftover credential specs of a previous run');
    return found;
  }
}
