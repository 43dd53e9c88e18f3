/**
 * One timer for the periodic work of every simulated node of a process (lease renewals, status
 * checks), as kwok keeps thousands of nodes without a sleeping goroutine each: a hashed wheel of
 * slots `resolutionMs` wide, turned by a single interval while anything is scheduled. A task runs
 * in the first turn at or after its due time (so up to one resolution late, never early).
 */
export interface WheelTask {
  cancel(): void;
}

export class TimerWheel {
  private readonly slots: Set<Entry>[];
  private cursor = 0;
  /** The wall time the cursor's slot stands for. */
  private cursorAt = Date.now();
  private size = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly resolutionMs = 100,
    slotCount = 1024,
  ) {
    this.slots = Array.from({ length: slotCount }, () => new Set<Entry>());
  }

  /** Runs `fn` once, `delayMs` from now. */
  schedule(fn: () => void, delayMs: number): WheelTask {
    const entry: Entry = { fn, due: Date.now() + Math.max(0, delayMs), slot: -1 };
    if (this.stopped) return { cancel: () => undefined };
    this.place(entry);
    this.size++;
    if (this.timer === undefined) {
      this.cursorAt = Date.now();
      this.timer = setInterval(() => this.turn(), this.resolutionMs);
    }
    return {
      cancel: () => {
        if (entry.slot >= 0 && this.slots[entry.slot]!.delete(entry)) this.done();
        entry.slot = -1;
      },
    };
  }

  /** Cancels everything; later schedules are ignored. */
  stop(): void {
    this.stopped = true;
    for (const slot of this.slots) slot.clear();
    this.size = 0;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private place(entry: Entry): void {
    // Slots ahead of the cursor's; one more than a revolution ahead waits there for a later pass.
    const ahead = Math.max(0, Math.floor((entry.due - this.cursorAt) / this.resolutionMs));
    entry.slot = (this.cursor + ahead) % this.slots.length;
    this.slots[entry.slot]!.add(entry);
  }

  private done(): void {
    this.size--;
    if (this.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private turn(): void {
    const now = Date.now();
    // The cursor's window is [cursorAt, cursorAt + resolution); an interval that fired late
    // catches up window by window.
    for (;;) {
      const slot = this.slots[this.cursor]!;
      const windowEnd = this.cursorAt + this.resolutionMs;
      const due: Entry[] = [];
      for (const entry of slot) if (entry.due < windowEnd && entry.due <= now) due.push(entry);
      for (const entry of due) {
        slot.delete(entry);
        entry.slot = -1;
        this.done();
        try {
          entry.fn();
        } catch {
          /* a task handles its own errors; one that throws must not stop the others */
        }
      }
      if (windowEnd > now || this.timer === undefined) return;
      this.cursor = (this.cursor + 1) % this.slots.length;
      this.cursorAt = windowEnd;
    }
  }
}

interface Entry {
  readonly fn: () => void;
  readonly due: number;
  slot: number;
}
