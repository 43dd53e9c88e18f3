import type { status } from '@grpc/grpc-js';
import { Session } from 'node:inspector';
import { setFlagsFromString } from 'node:v8';
import type { Logger } from '../log.js';
import type { CallObserver } from './call.js';

/** RPCs that change what the runtime holds (and leave garbage behind); reads do not count. */
const CHANGING_METHODS = new Set([
  'RunPodSandbox',
  'StopPodSandbox',
  'RemovePodSandbox',
  'CreateContainer',
  'StartContainer',
  'StopContainer',
  'RemoveContainer',
  'UpdateContainerResources',
  'ReopenContainerLog',
  'ExecSync',
  'UpdateRuntimeConfig',
  'PullImage',
  'RemoveImage',
]);

/** The default quiet time before the idle collection, seconds. */
export const DEFAULT_IDLE_GC_SECONDS = 5;

/**
 * One full garbage collection once the runtime has been quiet for a while after changes.
 *
 * V8 collects the old generation when it grows, not when the program goes idle: after a burst
 * (thousands of pods created, then nothing but polling) the garbage of the burst stays resident
 * until the next burst. Go runtimes such as containerd force a collection after two idle minutes
 * and return the freed memory to the OS; this does the same sooner, once no changing RPC came
 * for `quietMs` (reads such as the kubelet's List* polling do not count and do not delay it).
 * The timer is re-armed, not re-created, per call, and never keeps the process alive.
 */
export class IdleCollector implements CallObserver {
  private timer: NodeJS.Timeout | undefined;
  private changed = false;
  private closed = false;
  /** Collections done (for tests and logs). */
  collections = 0;

  constructor(
    private readonly quietMs: number,
    private readonly collect: () => Promise<void>,
    private readonly logger?: Logger,
  ) {}

  onCall(method: string): void {
    if (!CHANGING_METHODS.has(method) || this.closed) return;
    this.changed = true;
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.run(), this.quietMs);
      this.timer.unref();
    } else {
      this.timer.refresh();
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private run(): void {
    this.timer = undefined;
    if (!this.changed || this.closed) return;
    this.changed = false;
    const startedAt = performance.now();
    this.collect().then(
      () => {
        this.collections++;
        this.logger?.debug({ ms: Math.round(performance.now() - startedAt) }, 'idle garbage collection');
      },
      (err: unknown) => this.logger?.warn({ err }, 'idle garbage collection failed'),
    );
  }
}

/**
 * V8's most thorough collection (what a heap snapshot or a low-memory notification does): it also
 * compacts, so emptied pages go back to the OS. Through the inspector protocol, which every
 * Node build with an inspector has; no `--expose-gc` needed.
 */
export function compactingCollection(): () => Promise<void> {
  return () =>
    new Promise<void>((resolve, reject) => {
      const session = new Session();
      session.connect();
      // V8 evacuates only the pages its heuristics pick; after a burst of creations the old
      // generation is left with half-empty pages all over. For this one collection, evacuate
      // every page, so the free space becomes whole pages V8 gives back.
      setFlagsFromString('--compact-on-every-full-gc');
      session.post('HeapProfiler.collectGarbage', (err) => {
        setFlagsFromString('--no-compact-on-every-full-gc');
        // Not from inside the session's own callback: Node deadlocks there.
        setImmediate(() => session.disconnect());
        if (err) reject(err);
        else resolve();
      });
    });
}

/** Calls every observer (metrics, idle collection) for each RPC. */
export function combineObservers(...observers: (CallObserver | undefined)[]): CallObserver | undefined {
  const present = observers.filter((o): o is CallObserver => o !== undefined);
  if (present.length <= 1) return present[0];
  return {
    onCall(method: string, durationSeconds: number, code: status): void {
      for (const observer of present) observer.onCall(method, durationSeconds, code);
    },
    onCallStarted(method: string): void {
      for (const observer of present) observer.onCallStarted?.(method);
    },
    onCallEnded(method: string): void {
      for (const observer of present) observer.onCallEnded?.(method);
    },
  };
}
