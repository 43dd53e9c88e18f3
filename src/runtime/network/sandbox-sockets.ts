/** Something that holds a connection open (a socket, a server). */
export interface Closable {
  destroy(): void;
}

/**
 * Connections the runtime opened for a sandbox (port-forward's TCP connections), so that
 * StopPodSandbox ends them all: nothing stays open after a pod is gone.
 */
export class SandboxSockets {
  private readonly bySandbox = new Map<string, Set<Closable>>();

  of(sandboxId: string): { add(c: Closable): void; delete(c: Closable): void } {
    return {
      add: (c) => {
        let set = this.bySandbox.get(sandboxId);
        if (set === undefined) this.bySandbox.set(sandboxId, (set = new Set()));
        set.add(c);
      },
      delete: (c) => {
        const set = this.bySandbox.get(sandboxId);
        set?.delete(c);
        if (set?.size === 0) this.bySandbox.delete(sandboxId);
      },
    };
  }

  count(sandboxId?: string): number {
    if (sandboxId !== undefined) return this.bySandbox.get(sandboxId)?.size ?? 0;
    let n = 0;
    for (const set of this.bySandbox.values()) n += set.size;
    return n;
  }

  closeAll(sandboxId: string): void {
    const set = this.bySandbox.get(sandboxId);
    this.bySandbox.delete(sandboxId);
    for (const c of set ?? []) c.destroy();
  }
}
