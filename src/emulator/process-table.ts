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
  /** Most tables hold one process (a container's init): kept without a Map until a second one. */
  private only: ProcessEntry | undefined = undefined;
  private entries: Map<number, ProcessEntry> | undefined = undefined;

  allocatePid(): number {
    return this.nextPid++;
  }

  add(entry: ProcessEntry): void {
    if (this.entries !== undefined) {
      this.entries.set(entry.pid, entry);
    } else if (this.only === undefined || this.only.pid === entry.pid) {
      this.only = entry;
    } else {
      this.entries = new Map([[this.only.pid, this.only], [entry.pid, entry]]);
      this.only = undefined;
    }
  }

  remove(pid: number): void {
    if (this.entries !== undefined) this.entries.delete(pid);
    else if (this.only?.pid === pid) this.only = undefined;
  }

  get(pid: number): ProcessEntry | undefined {
    if (this.entries !== undefined) return this.entries.get(pid);
    return this.only?.pid === pid ? this.only : undefined;
  }

  /** Processes in pid order; with `group`, only that container's. */
  list(group?: string): ProcessEntry[] {
    const all = this.all().sort((a, b) => a.pid - b.pid);
    return group === undefined ? all : all.filter((e) => e.group === group);
  }

  get size(): number {
    return this.entries !== undefined ? this.entries.size : this.only === undefined ? 0 : 1;
  }

  count(group: string): number {
    let n = 0;
    for (const e of this.all()) if (e.group === group) n++;
    return n;
  }

  /**
   * Sends a signal to every process of a container (the kernel does this with SIGKILL when a
   * container's init exits), or to all processes without `group`.
   */
  killAll(signal: string, group?: string): void {
    for (const entry of this.list(group)) entry.kill(signal);
  }

  private all(): ProcessEntry[] {
    if (this.entries !== undefined) return [...this.entries.values()];
    return this.only === undefined ? [] : [this.only];
  }
}
