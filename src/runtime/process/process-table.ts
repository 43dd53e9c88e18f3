/** One process of a container as `ps` shows it. */
export interface ProcessEntry {
  readonly pid: number;
  /** The command name (`sleep`, `top`, `cmd`); changes when the process execs. */
  comm: string;
  argv: readonly string[];
  startedAtNanos: bigint;
  /** Nominal CPU load in cores, for stats. */
  cpuLoad: number;
  /** Delivers a signal to the process. */
  kill(signal: string): void;
}

/**
 * A container's PID namespace: pids start at 1 (the container's init process) and are never
 * reused while the container exists.
 */
export class ProcessTable {
  private nextPid = 1;
  private readonly entries = new Map<number, ProcessEntry>();

  allocatePid(): number {
    return this.nextPid++;
  }

  add(entry: ProcessEntry): void {
    this.entries.set(entry.pid, entry);
  }

  remove(pid: number): void {
    this.entries.delete(pid);
  }

  get(pid: number): ProcessEntry | undefined {
    return this.entries.get(pid);
  }

  list(): ProcessEntry[] {
    return [...this.entries.values()].sort((a, b) => a.pid - b.pid);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Sends a signal to every process (the kernel does this with SIGKILL when init exits). */
  killAll(signal: string): void {
    for (const entry of this.list()) entry.kill(signal);
  }
}
