/** One process of a container as `ps` shows it. */
export interface ProcessEntry {
  readonly pid: number;
  /** The command name (`sleep`, `top`, `cmd`); changes when the process execs. */
  comm: string;
  argv: readonly string[];
  startedAtNanos: bigint;
  /** Nominal CPU load in cores, for stats. */
  cpuLoad: number;
  /** The container the process belongs to (several share a table in a pod PID namespace). */
  readonly group: string;
  /** What /proc/<pid>/cmdline shows when the program rewrites it (nginx: "master process …"). */
  title?: string;
  /** Delivers a signal to the process. */
  kill(signal: string): void;
}

/**
 * A PID namespace: a container's own (pids start at 1 with its init process) or a pod's, shared
 * by the containers that join it (pid 1 is the sandbox's pause process). Pids are never reused.
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

  /** Processes in pid order; with `group`, only that container's. */
  list(group?: string): ProcessEntry[] {
    const all = [...this.entries.values()].sort((a, b) => a.pid - b.pid);
    return group === undefined ? all : all.filter((e) => e.group === group);
  }

  get size(): number {
    return this.entries.size;
  }

  count(group: string): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.group === group) n++;
    return n;
  }

  /**
   * Sends a signal to every process of a container (the kernel does this with SIGKILL when a
   * container's init exits), or to all processes without `group`.
   */
  killAll(signal: string, group?: string): void {
    for (const entry of this.list(group)) entry.kill(signal);
  }
}
