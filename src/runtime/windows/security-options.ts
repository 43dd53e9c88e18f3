import { openSync, readFileSync, readSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { TidyUp } from '../../tidy-up.js';
import { RuntimeError } from '../errors.js';
import { CREDENTIAL_SPEC_REGISTRY_KEY } from './credential-spec-handoff.js';
import type { SimulatedRegistry } from './simulated-registry.js';

/** What the backend needs to resolve `credentialspec=` security options. */
export interface SecurityOptionContext {
  containerId: string;
  /** The directory `file://` paths are relative to (moby: `<root>\CredentialSpecs`), as the user's state dir names it. */
  credentialSpecDirectory: string;
  registry: SimulatedRegistry;
  /** Reads `file://` specs (a runtime has one; default: a reader of its own). */
  reader?: SmallFileReader;
}

// moby's texts, daemon/oci_windows.go at v24.0.0 (unchanged through v28.5.2).
const INVALID_CREDENTIAL_SPEC_OPTION =
  "invalid credential spec security option - value must be prefixed by 'file://', 'registry://', or 'raw://' followed by a non-empty value";

const invalid = (message: string): RuntimeError => new RuntimeError('InvalidArgument', message);

/** Go's %q for the strings we quote (paths, names). */
const quote = (s: string): string => JSON.stringify(s);

/** An options object, not the string 'utf8': Node copies its default options for a string, per call. */
const UTF8 = { encoding: 'utf8' } as const;

/** A Windows path is absolute when it has a drive and a root (`C:\x`) or is a UNC path (`\\server\share`). */
function isWindowsAbsolute(path: string): boolean {
  return /^[A-Za-z]:[\\/]/.test(path) || /^[\\/]{2}[^\\/]/.test(path);
}

/**
 * Resolves a `file://` location the way moby's readCredentialSpecFile does on Windows
 * (daemon/oci_windows.go, v24.0.0 to v28.5.2): `filepath.IsAbs` refuses a path with a drive
 * and a root or a UNC path; the location is joined to `<root>\CredentialSpecs` (Join cleans
 * `..` away); and the result must start with that directory's path — a string prefix, as moby
 * tests it, so `..\CredentialSpecsX\a.json` (a sibling whose name starts the same) is accepted
 * and then fails to load. Backslashes are separators; a rooted path without a drive (`\x`) is
 * joined, as filepath.Join does.
 */
export function credentialSpecFilePath(location: string, directory: string): string {
  if (isWindowsAbsolute(location)) throw invalid('invalid credential spec: file:// path cannot be absolute');
  const base = normalize(directory).replace(/\/+$/, '') || '/';
  const full = join(base, location.replace(/\\/g, '/'));
  if (!full.startsWith(base)) throw invalid(`invalid credential spec: file:// path must be under ${base}`);
  return full;
}

/** Room for a credential spec as New-CredentialSpec writes it (~600 bytes) many times over. */
const READ_BUFFER_BYTES = 16 * 1024;

/**
 * Reads small files: open and one read into a buffer of its own, the close left to tidy-up.
 * readFileSync reads until a read returns nothing and closes at once: two more system calls on
 * the call's clock. A file that fills the buffer is read again
 * whole. One per runtime (its buffer and tidy-up queue are the runtime's).
 */
export class SmallFileReader {
  private buffer: Buffer | undefined;

  constructor(private readonly tidyUp: TidyUp = new TidyUp()) {}

  read(path: string): string {
    const buffer = (this.buffer ??= Buffer.allocUnsafe(READ_BUFFER_BYTES));
    const fd = openSync(path, 'r');
    let length: number;
    try {
      length = readSync(fd, buffer, 0, READ_BUFFER_BYTES, 0);
    } finally {
      this.tidyUp.closeLater(fd);
    }
    return length < READ_BUFFER_BYTES ? buffer.toString('utf8', 0, length) : readFileSync(path, UTF8);
  }
}

async function readCredentialSpecFile(containerId: string, location: string, directory: string, reader: SmallFileReader): Promise<string> {
  const full = credentialSpecFilePath(location, directory);
  try {
    // Synchronous on purpose: the file is the runtime's own, a few hundred bytes written
    // milliseconds ago (in the page cache); one read costs microseconds, where the promise
    // readFile takes four thread-pool round trips (open, fstat, read, close) per start.
    return reader.read(full);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // The Windows wording of the open error, as moby wraps it.
    const reason =
      code === 'ENOENT'
        ? 'The system cannot find the file specified.'
        : code === 'EACCES'
          ? 'Access is denied.'
          : code === 'EISDIR'
            ? 'Is a directory.'
            : (err as Error).message;
    throw new RuntimeError(
      'InvalidArgument',
      // errors.Wrapf around os.ReadFile's *PathError (moby v24+; older moby said
      // `credential spec for container %s could not be read from file %q`).
      `failed to load credential spec for container ${containerId}: open ${full}: ${reason}`,
      { cause: err },
    );
  }
}

/**
 * The credential spec that a container's Docker security options carry (moby's
 * setWindowsCredentialSpec): each option must be `key=value`, the key `credentialspec`
 * (any case), the value `file://`, `registry://` or `raw://` plus a non-empty value
 * (`config://` needs swarm, which this node is not). When several are given, every one is
 * checked and the last one wins. Undefined when there is none.
 */
export async function credentialSpecFromSecurityOptions(
  securityOptions: readonly string[],
  context: SecurityOptionContext,
): Promise<string | undefined> {
  let credentialSpec: string | undefined;
  for (const option of securityOptions) {
    const equals = option.indexOf('=');
    if (equals < 0) throw invalid(`invalid security option: no equals sign in supplied value ${option}`);
    const key = option.slice(0, equals);
    const value = option.slice(equals + 1);
    if (key.toLowerCase() !== 'credentialspec') throw invalid(`security option not supported: ${key}`);
    const separator = value.indexOf('://');
    if (separator < 0 || separator + 3 === value.length) throw invalid(INVALID_CREDENTIAL_SPEC_OPTION);
    const scheme = value.slice(0, separator).toLowerCase();
    const location = value.slice(separator + 3);
    switch (scheme) {
      case 'file':
        credentialSpec = await readCredentialSpecFile(context.containerId, location, context.credentialSpecDirectory, context.reader ?? new SmallFileReader());
        break;
      case 'registry': {
        const found = context.registry.getStringValue(CREDENTIAL_SPEC_REGISTRY_KEY, location);
        if (found === undefined) {
          throw invalid(`registry credential spec ${quote(location)} for container ${context.containerId} was not found`);
        }
        credentialSpec = found;
        break;
      }
      case 'raw':
        credentialSpec = location;
        break;
      default:
        // Includes `config://`: swarm only; without swarm moby answers as for any unknown word.
        throw invalid(INVALID_CREDENTIAL_SPEC_OPTION);
    }
  }
  return credentialSpec === '' ? undefined : credentialSpec;
}
