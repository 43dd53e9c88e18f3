/**
 * One list+watch of the pods bound to the simulated nodes of a process, shared by all of them
 * (kwok's shared informer): a single node watches `spec.nodeName=<node>` (what the Node
 * authorizer lets system:node:<node> list and watch); several nodes watch every bound pod once
 * and the informer hands each pod to its node. Watches resume from the last resource version
 * (bookmarks keep it fresh); 410 Gone, or a lost stream the server no longer has a version for,
 * gives a relist, after which each node gets its full set again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import type { Logger } from '../../log.js';
import { isGone, type ApiClient, type WatchEvent } from './api-client.js';
import { errorText } from './node-controller.js';

export interface PodHandler {
  /** A pod bound to the node was added or changed. */
  onPod(pod: V1Pod): void;
  /** A pod bound to the node is gone from the API. */
  onPodDeleted(pod: V1Pod): void;
  /** After a (re)list: the complete set of the node's pods; those not in it are gone. */
  onRelist(pods: readonly V1Pod[]): void;
}

export interface PodInformerOptions {
  /** Server-side watch timeout, so streams are renewed now and then (the reflector's 5-10 min). */
  readonly watchTimeoutSeconds?: number;
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
}

export class PodInformer {
  private readonly handlers = new Map<string, PodHandler>();
  private readonly abort = new AbortController();
  private resourceVersion = '';
  private failures = 0;
  private running: Promise<void> | undefined;
  private firstList: { resolve: () => void; reject: (err: Error) => void; promise: Promise<void> } | undefined;

  constructor(
    private readonly api: ApiClient,
    private readonly logger: Logger,
    private readonly options: PodInformerOptions = {},
  ) {}

  /** Registers a node before start(). */
  subscribe(nodeName: string, handler: PodHandler): void {
    this.handlers.set(nodeName, handler);
  }

  private fieldSelector(): string {
    const names = [...this.handlers.keys()];
    return names.length === 1 ? `spec.nodeName=${names[0]}` : 'spec.nodeName!=';
  }

  /** Starts the loop; resolves after the first successful list (rejects if it is refused for good). */
  start(): Promise<void> {
    let resolve!: () => void;
    let reject!: (err: Error) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.firstList = { resolve, reject, promise };
    this.running = this.loop();
    return promise;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private dispatch(pod: V1Pod, deleted: boolean): void {
    const handler = this.handlers.get(pod.spec?.nodeName ?? '');
    if (handler === undefined) return;
    if (deleted) handler.onPodDeleted(pod);
    else handler.onPod(pod);
  }

  private async list(): Promise<void> {
    const selector = encodeURIComponent(this.fieldSelector());
    const list = await this.api.get<V1PodList>(`/api/v1/pods?fieldSelector=${selector}&limit=5000`);
    let items = list.items;
    let next = list.metadata?._continue;
    while (next) {
      const page = await this.api.get<V1PodList>(`/api/v1/pods?fieldSelector=${selector}&limit=5000&continue=${encodeURIComponent(next)}`);
      items = items.concat(page.items);
      next = page.metadata?._continue;
    }
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    const byNode = new Map<string, V1Pod[]>();
    for (const pod of items) {
      const node = pod.spec?.nodeName ?? '';
      const pods = byNode.get(node);
      if (pods === undefined) byNode.set(node, [pod]);
      else pods.push(pod);
    }
    for (const [node, handler] of this.handlers) handler.onRelist(byNode.get(node) ?? []);
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    let listed = false;
    while (!signal.aborted) {
      try {
        if (!listed) {
          await this.list();
          listed = true;
          this.firstList?.resolve();
        }
        const timeout = this.options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
        const path =
          `/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=${timeout}` +
          `&fieldSelector=${encodeURIComponent(this.fieldSelector())}&resourceVersion=${encodeURIComponent(this.resourceVersion)}`;
        let gone = false;
        await this.api.watch<V1Pod>(
          path,
          (event: WatchEvent<V1Pod>) => {
            if (event.type === 'ERROR') {
              const status = event.object as unknown as { code?: number; message?: string };
              if (status.code === 410) gone = true;
              else this.logger.warn({ code: status.code, message: status.message }, 'pod watch error');
              return;
            }
            const rv = event.object.metadata?.resourceVersion;
            if (rv !== undefined) this.resourceVersion = rv;
            if (event.type === 'BOOKMARK') return;
            this.dispatch(event.object, event.type === 'DELETED');
          },
          signal,
        );
        if (gone) {
          this.logger.info({ resourceVersion: this.resourceVersion }, 'pod watch: resource version too old (410 Gone); listing again');
          listed = false;
        }
        if (this.failures > 0) this.logger.info({ after: this.failures }, 'pod watch connected again');
        this.failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          // The watch refused at once (HTTP 410) rather than by an ERROR event: the same relist.
          this.logger.info({ resourceVersion: this.resourceVersion }, 'pod watch: resource version too old (410 Gone); listing again');
          listed = false;
          continue;
        }
        this.failures++;
        // Forbidden or unauthorised on the first list is a configuration error: report it.
        const status = (err as { status?: number }).status;
        if (!listed && this.failures === 1 && (status === 401 || status === 403)) {
          this.firstList?.reject(err as Error);
        }
        const delay = Math.min((this.options.retryInitialMs ?? 200) * 2 ** (this.failures - 1), this.options.retryMaxMs ?? 7_000);
        this.logger.warn({ attempt: this.failures, retryInMs: delay, err: errorText(err) }, 'pod list/watch failed, will retry');
        await retryPause(delay, signal);
      }
    }
  }
}

/**
 * One watch of the Nodes of the simulated nodes of a process (a single node watches
 * `metadata.name=<node>`; several watch the Windows nodes and pick theirs), so a Node deleted
 * behind a kubelet's back is registered again at once, with no GET per node and tick.
 */
export class NodeDeletionWatch {
  private readonly handlers = new Map<string, () => void>();
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;

  constructor(
    private readonly api: ApiClient,
    private readonly logger: Logger,
  ) {}

  subscribe(nodeName: string, onDeleted: () => void): void {
    this.handlers.set(nodeName, onDeleted);
  }

  start(): void {
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private selector(): string {
    const names = [...this.handlers.keys()];
    return names.length === 1 ? `fieldSelector=${encodeURIComponent(`metadata.name=${names[0]}`)}` : `labelSelector=${encodeURIComponent('kubernetes.io/os=windows')}`;
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    let failures = 0;
    let resourceVersion = '';
    while (!signal.aborted) {
      try {
        if (resourceVersion === '') {
          const list = await this.api.get<{ metadata?: { resourceVersion?: string }; items: { metadata?: { name?: string } }[] }>(`/api/v1/nodes?${this.selector()}`);
          resourceVersion = list.metadata?.resourceVersion ?? '';
          const present = new Set(list.items.map((n) => n.metadata?.name));
          for (const [name, onDeleted] of this.handlers) if (!present.has(name)) onDeleted();
        }
        let gone = false;
        await this.api.watch<{ metadata?: { name?: string; resourceVersion?: string }; code?: number }>(
          `/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=${300 + Math.floor(Math.random() * 300)}&${this.selector()}&resourceVersion=${encodeURIComponent(resourceVersion)}`,
          (event) => {
            if (event.type === 'ERROR') {
              if (event.object.code === 410) gone = true;
              return;
            }
            resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
            if (event.type === 'DELETED') this.handlers.get(event.object.metadata?.name ?? '')?.();
          },
          signal,
        );
        if (gone) resourceVersion = '';
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          resourceVersion = '';
          continue;
        }
        failures++;
        const delay = Math.min(200 * 2 ** (failures - 1), 7_000);
        this.logger.debug({ attempt: failures, retryInMs: delay, err: errorText(err) }, 'node watch failed, will retry');
        await retryPause(delay, signal);
      }
    }
  }
}

/**
 * Waits out a retry's back-off, ending early when the watch is stopped. node:timers/promises
 * removes its abort listener when the timer fires, so retries do not pile listeners up.
 */
async function retryPause(ms: number, signal: AbortSignal): Promise<void> {
  await sleep(ms, undefined, { signal }).catch(() => undefined);
}
