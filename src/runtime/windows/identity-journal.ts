/**
 * What the runtime did with each container's Windows identity, written where it happens: how
 * StartContainer went (and at which step it stopped) and the identity operations run inside the
 * container with the status each reported. `cri-winsim explain` reads it through the Identity
 * service (proto/criwinsim/identity/v1); nothing is decided again for the reader. One journal per
 * runtime, in memory: a runtime restarted from its metadata store has no journal of the
 * containers it reloaded, and says so.
 */

/** Where StartContainer's Windows part stopped (container-start-windows.ts, in its order). */
export type StartStep = 'image' | 'hand-off' | 'hcs-document' | 'logon' | 'process';

export interface StartRecord {
  readonly state: 'started' | 'failed';
  readonly failedStep?: StartStep | 'other';
  /** The gRPC code name the start answered with (FailedPrecondition, Unknown, …). */
  readonly errorCode?: string;
  readonly error?: string;
  /** For a logon failure: the identity failure's reason (container-identity.ts). */
  readonly failureReason?: string;
}

export interface OperationRecord {
  readonly sequence: number;
  /** RFC 3339. */
  readonly time: string;
  readonly command: string;
  readonly exitCode: number;
  readonly result: 'ok' | 'failed';
  /** The status the command reported, or its error line. */
  readonly status: string;
}

/** What a command printed, as the identity commands return it. */
export interface CommandAnswer {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

/** Containers whose records are kept (the latest; a removed container's go at once). */
const MAX_CONTAINERS = 4096;
/** Operations kept per container (the latest). */
export const MAX_OPERATIONS = 20;

/** The identity operations worth a record: they ask the domain something. */
const DOMAIN_OPERATIONS: ReadonlySet<string> = new Set(['nltest', 'klist']);

function programName(arg0: string): string {
  return (arg0.split(/[\\/]/).pop() ?? arg0).replace(/\.exe$/i, '').toLowerCase();
}

/** Whether argv asks the domain (nltest, klist, `whoami /upn`). */
export function isDomainOperation(argv: readonly string[]): boolean {
  const program = programName(argv[0] ?? '');
  if (DOMAIN_OPERATIONS.has(program)) return true;
  return program === 'whoami' && argv.slice(1).some((a) => /^[/-]upn$/i.test(a));
}

/**
 * The status an identity command reported, read from what it printed (nltest's
 * `Status = 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET`, klist's `klist failed with 0xc000018a/…: text`),
 * and whether the operation failed: a non-zero exit, or a Win32 status other than success (nltest
 * /query exits 0 while it reports a broken secure channel).
 */
export function operationStatus(answer: CommandAnswer): { result: 'ok' | 'failed'; status: string } {
  const text = `${answer.stdout}\n${answer.stderr}`;
  const win32 = /Status = (\d+) (0x[0-9a-f]+) (\w+)/.exec(text);
  if (win32 !== null) {
    const failed = answer.exitCode !== 0 || win32[1] !== '0';
    return { result: failed ? 'failed' : 'ok', status: `${win32[1]} ${win32[2]} ${win32[3]}` };
  }
  const klist = /klist failed with (0x[0-9a-f]+)\/-?\d+: ([^\n]*)/.exec(text);
  if (klist !== null) return { result: 'failed', status: `${klist[1]} ${klist[2]}` };
  const tickets = /Cached Tickets: \(\d+\)/.exec(text);
  if (tickets !== null && answer.exitCode === 0) return { result: 'ok', status: tickets[0] };
  const firstLine = text.split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
  return { result: answer.exitCode === 0 ? 'ok' : 'failed', status: firstLine };
}

export class IdentityJournal {
  private readonly starts = new Map<string, StartRecord>();
  private readonly operations = new Map<string, OperationRecord[]>();
  private sequence = 0;

  constructor(private readonly now: () => Date = () => new Date()) {}

  recordStart(containerId: string, record: StartRecord): void {
    this.starts.delete(containerId);
    this.starts.set(containerId, record);
    evict(this.starts);
  }

  /** Records an identity operation that asked the domain; other commands are not kept. */
  recordOperation(containerId: string, argv: readonly string[], answer: CommandAnswer): void {
    if (!isDomainOperation(argv)) return;
    const { result, status } = operationStatus(answer);
    const kept = this.operations.get(containerId) ?? [];
    this.operations.delete(containerId);
    kept.push({ sequence: ++this.sequence, time: this.now().toISOString(), command: argv.join(' '), exitCode: answer.exitCode, result, status });
    if (kept.length > MAX_OPERATIONS) kept.splice(0, kept.length - MAX_OPERATIONS);
    this.operations.set(containerId, kept);
    evict(this.operations);
  }

  startOf(containerId: string): StartRecord | undefined {
    return this.starts.get(containerId);
  }

  operationsOf(containerId: string): readonly OperationRecord[] {
    return this.operations.get(containerId) ?? [];
  }

  /** RemoveContainer: the container's records go with it. */
  forget(containerId: string): void {
    this.starts.delete(containerId);
    this.operations.delete(containerId);
  }
}

/** Drops the oldest entries beyond the bound (a Map iterates in insertion order). */
function evict<V>(map: Map<string, V>): void {
  while (map.size > MAX_CONTAINERS) map.delete(map.keys().next().value!);
}
