/**
 * What a pod worker is given and what it gives back: options, outcomes, events, and the two
 * objects pods of one run share (the order of RunPodSandbox calls, the image pulls under way).
 */
import type { V1ConfigMap, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { RuntimeClass } from '../apiserver/runtime-class.js';
import type { ContainerIdentityRecord } from './security-context.js';

export type ContainerKind = 'init' | 'regular';

export interface ContainerOutcome {
  readonly name: string;
  readonly kind: ContainerKind;
  /** started: StartContainer succeeded; exited: an init container ran to its end; waiting: not started. */
  readonly state: 'started' | 'exited' | 'waiting';
  readonly containerId?: string;
  /** The kubelet's waiting or terminated reason (ErrImagePull, CreateContainerError, Completed, …). */
  readonly reason?: string;
  readonly message?: string;
  readonly exitCode?: number;
  /** What the kubelet sent for the container's Windows identity, once its CRI config was built. */
  readonly identity?: ContainerIdentityRecord;
}

export interface PodEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  /** The container the event is about (fieldPath spec.containers{name}); absent for the pod. */
  readonly container?: string;
}

export interface PodOutcome {
  readonly sandboxId?: string;
  /** Set when no sandbox could be created; then no container was touched. */
  readonly sandboxError?: { readonly reason: 'FailedCreatePodSandBox'; readonly message: string };
  readonly containers: readonly ContainerOutcome[];
  readonly events: readonly PodEvent[];
}

export interface PodWorkerOptions {
  /** Root of the pod log directories (the kubelet's /var/log/pods). */
  readonly podLogsRoot: string;
  readonly nodeName?: string;
  readonly nodeCpuCount?: number;
  /** ConfigMaps for env and envFrom. */
  readonly configMaps?: readonly V1ConfigMap[];
  /** Deadline of each CRI call. */
  readonly callTimeoutMs?: number;
  /** How long an init container may run before the pass gives up on it. */
  readonly initContainerTimeoutMs?: number;
  /** Interval of ContainerStatus polls while an init container runs. */
  readonly pollIntervalMs?: number;
  /** The runtime handler of a pod without a runtimeClassName lookup (runtimeClasses unset). */
  readonly runtimeHandler?: string;
  /** Where the pod's RuntimeClass is read (cluster directory or API server): spec.runtimeClassName → handler. */
  readonly runtimeClasses?: (name: string) => Promise<RuntimeClass | undefined> | RuntimeClass | undefined;
  /** The pod's imagePullSecrets as read (cluster directory or API server); `missing`: names not found. */
  readonly pullSecrets?: (pod: V1Pod) => Promise<PullSecrets> | PullSecrets;
  /** The image pulls of the run this pass belongs to, shared by pods started in parallel. */
  readonly imagePulls?: ImagePulls;
  /** This pod's turn to send RunPodSandbox, when pods of one run must send theirs in order. */
  readonly sandboxTurn?: Turn;
}

export interface PullSecrets {
  readonly secrets: readonly V1Secret[];
  readonly missing: readonly string[];
}

/** One pod's place in an ordered sequence: take() waits for the earlier pods, release() lets the next go. */
export interface Turn {
  take(): Promise<void>;
  /** Idempotent; also called when the pod never reaches the step. */
  release(): void;
}

/**
 * Turns in a fixed order (0, 1, 2, …): turn i is taken once every turn before it was released.
 * Every turn handed out must be released, on every path, or the later ones wait for ever.
 */
export class TurnSequence {
  private next = 0;
  private readonly released = new Set<number>();
  private readonly waiting = new Map<number, () => void>();

  turn(index: number): Turn {
    return {
      take: () => (index <= this.next ? Promise.resolve() : new Promise<void>((resolve) => this.waiting.set(index, resolve))),
      release: () => {
        if (this.released.has(index) || index < this.next) return;
        this.released.add(index);
        // Move past every released turn; wake the first one still held.
        while (this.released.delete(this.next)) this.next++;
        const wake = this.waiting.get(this.next);
        if (wake !== undefined) {
          this.waiting.delete(this.next);
          wake();
        }
      },
    };
  }
}

/**
 * The image pulls under way in one kubelet run, shared by its pod workers. A pod that finds its
 * image missing while another pod pulls that same image waits for that pull and looks again, so an
 * image is pulled once per run however many pods start at the same time: after the first pull the
 * kubelet's image manager finds it present ("already present on machine").
 */
export class ImagePulls {
  private readonly inFlight = new Map<string, Promise<void>>();

  /** Resolves (never rejects) when the pull of `image` now under way ends; undefined when none is. */
  pending(image: string): Promise<void> | undefined {
    return this.inFlight.get(image);
  }

  /** Registers a pull of `image` for the others to wait on until it settles. */
  track<T>(image: string, pull: Promise<T>): Promise<T> {
    const settled = pull.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.set(image, settled);
    void settled.then(() => {
      if (this.inFlight.get(image) === settled) this.inFlight.delete(image);
    });
    return pull;
  }
}
