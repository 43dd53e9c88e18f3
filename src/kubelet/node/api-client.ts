/**
 * A small HTTP client for the Kubernetes API, built from a kubeconfig (or the pod's service
 * account with `--in-cluster`) by @kubernetes/client-node, which resolves the credentials (client
 * certificate, bearer token, CA). Requests go through node:https with one keep-alive agent that
 * every simulated node of a process shares; watches are streamed line by line. Raw requests are
 * used where the generated client is awkward: the content type of a status PATCH (strategic
 * merge), DELETE preconditions, and long-running watches with resource versions.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import type { KubeConfig } from '@kubernetes/client-node';

/** An answer of the API server that is not 2xx: its code and the Status message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason?: string,
    /** The Status object's message alone (what kubectl prints after "Error from server"). */
    readonly statusMessage: string = message,
  ) {
    super(message);
  }
}

/** The server could not be reached (connection refused, TLS failure, timeout). */
export class ApiUnreachableError extends Error {}

export interface WatchEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: T;
}

export interface ApiClientSource {
  /** `--kubeconfig FILE`, or undefined for `--in-cluster`. */
  readonly kubeconfig?: string;
  readonly context?: string;
}

const requestTimeoutMs = 30_000;

/** What a controller needs of a client: single requests (a node's own view, rate-limited). */
export interface ApiRequester {
  readonly description: string;
  request<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T>;
  get<T>(path: string): Promise<T>;
}

export class ApiClient implements ApiRequester {
  private constructor(
    /** For errors and logs: the kubeconfig and server it names. */
    readonly description: string,
    readonly server: URL,
    private readonly requestOptions: https.RequestOptions,
    private readonly agent: http.Agent,
    /** The user the credentials authenticate as, when the kubeconfig says (for logs only). */
    readonly userName: string,
    /** The loaded configuration, for clients built with @kubernetes/client-node (the kubelet server's reviews). */
    readonly kubeConfig: KubeConfig,
  ) {}

  /** Loads the kubeconfig (or the in-cluster service account); errors name the file. */
  static async load(source: ApiClientSource): Promise<ApiClient> {
    const what = source.kubeconfig === undefined ? 'in-cluster service account' : `kubeconfig ${source.kubeconfig}`;
    let k8s: typeof import('@kubernetes/client-node');
    try {
      k8s = await import('@kubernetes/client-node');
    } catch (err) {
      throw new Error(`${what}: cannot load the Kubernetes client: ${(err as Error).message}`, { cause: err });
    }
    const config: KubeConfig = new k8s.KubeConfig();
    try {
      if (source.kubeconfig === undefined) config.loadFromCluster();
      else config.loadFromFile(source.kubeconfig);
      if (source.context !== undefined) {
        if (config.getContextObject(source.context) === null) throw new Error(`context "${source.context}" does not exist`);
        config.setCurrentContext(source.context);
      }
    } catch (err) {
      throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
    }
    const cluster = config.getCurrentCluster();
    if (cluster === null) throw new Error(`${what}: the current context "${config.getCurrentContext()}" names no cluster`);
    let server: URL;
    try {
      server = new URL(cluster.server);
    } catch {
      throw new Error(`${what}: cluster ${cluster.name}: server ${JSON.stringify(cluster.server)} is not a URL`);
    }
    if (server.protocol !== 'https:' && server.protocol !== 'http:') throw new Error(`${what}: cluster ${cluster.name}: server ${cluster.server} is neither https nor http`);
    const options: https.RequestOptions = {};
    try {
      await config.applyToHTTPSOptions(options);
    } catch (err) {
      throw new Error(`${what}: reading the credentials: ${(err as Error).message}`, { cause: err });
    }
    const agentOptions = { keepAlive: true, maxSockets: 64, ...pick(options, ['ca', 'cert', 'key', 'rejectUnauthorized', 'servername']) };
    const agent = server.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent({ keepAlive: true, maxSockets: 64 });
    return new ApiClient(`${what} (server ${server.origin})`, server, { headers: options.headers ?? {} }, agent, config.getCurrentUser()?.name ?? '', config);
  }

  close(): void {
    this.agent.destroy();
  }

  /** `watchSignal`: the request is a watch, ended by that signal (or the server) and never idle-timed. */
  private send(method: string, path: string, body: unknown, contentType: string | undefined, watchSignal?: AbortSignal): Promise<http.IncomingMessage> {
    const url = new URL(path, this.server);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: http.OutgoingHttpHeaders = { ...(this.requestOptions.headers as http.OutgoingHttpHeaders), Accept: 'application/json' };
    if (payload !== undefined) {
      headers['Content-Type'] = contentType ?? 'application/json';
      headers['Content-Length'] = payload.length;
    }
    const module = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = module.request(url, { method, headers, agent: this.agent, ...(watchSignal === undefined ? {} : { signal: watchSignal }) }, resolve);
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.name === 'AbortError') reject(err);
        else reject(new ApiUnreachableError(`cannot reach the API server of ${this.description}: ${err.message}`));
      });
      // A watch may be quiet for longer (no change, bookmarks a minute apart): client-go sets no
      // timeout on it either; the server ends it after its timeoutSeconds.
      if (watchSignal === undefined) req.setTimeout(requestTimeoutMs, () => req.destroy(new Error(`no answer within ${requestTimeoutMs / 1000} s`)));
      req.end(payload);
    });
  }

  /** One request; the decoded body on 2xx, an ApiError with the Status message otherwise. */
  async request<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    const res = await this.send(method, path, body, contentType);
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 299) {
      let message = text.trim();
      let reason: string | undefined;
      try {
        const parsed = JSON.parse(text) as { message?: string; reason?: string };
        if (parsed.message !== undefined) message = parsed.message;
        reason = parsed.reason;
      } catch {
        /* not a Status object */
      }
      throw new ApiError(status, `${method} ${path}: ${status} ${message || http.STATUS_CODES[status] || ''}`.trim(), reason, message || http.STATUS_CODES[status] || '');
    }
    return (text === '' ? {} : JSON.parse(text)) as T;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  /** A GET whose answer is text (`/metrics`); an ApiError unless 2xx. */
  async requestText(path: string): Promise<string> {
    const res = await this.send('GET', path, undefined, undefined);
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) > 299) throw new ApiError(res.statusCode ?? 0, `GET ${path}: ${res.statusCode} ${text.trim()}`);
    return text;
  }

  /**
   * Streams a watch until the server ends it, the signal aborts, or onEvent throws. Resolves when
   * the stream ends (the caller watches again from the last resource version).
   */
  async watch<T>(path: string, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal): Promise<void> {
    const res = await this.send('GET', path, undefined, undefined, signal);
    if ((res.statusCode ?? 0) !== 200) {
      const chunks: Buffer[] = [];
      for await (const chunk of res) chunks.push(chunk as Buffer);
      let message = Buffer.concat(chunks).toString('utf8');
      try {
        message = (JSON.parse(message) as { message?: string }).message ?? message;
      } catch {
        /* keep the text */
      }
      throw new ApiError(res.statusCode ?? 0, `GET ${path}: ${res.statusCode} ${message}`);
    }
    let rest = '';
    // A character's bytes may be split between two chunks: decoded whole, not as two U+FFFD.
    const decoder = new StringDecoder('utf8');
    try {
      for await (const chunk of res) {
        rest += decoder.write(chunk as Buffer);
        let newline = rest.indexOf('\n');
        while (newline !== -1) {
          const line = rest.slice(0, newline).trim();
          rest = rest.slice(newline + 1);
          if (line !== '') onEvent(JSON.parse(line) as WatchEvent<T>);
          newline = rest.indexOf('\n');
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      throw err;
    }
  }
}

function pick<T extends object, K extends keyof T>(object: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (object[key] !== undefined) out[key] = object[key];
  return out;
}

/** The API server's answer for an object that does not exist. */
export const isNotFound = (err: unknown): boolean => err instanceof ApiError && err.status === 404;
export const isConflict = (err: unknown): boolean => err instanceof ApiError && err.status === 409;
export const isGone = (err: unknown): boolean => err instanceof ApiError && err.status === 410;

/**
 * client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter): `qps` tokens a second, at most
 * `burst` saved; a request takes one, waiting for it in turn when none is left. A kubelet's client
 * has one (--kube-api-qps 50, --kube-api-burst 100) and its event recorder another (--event-qps
 * 50, --event-burst 100); each simulated node gets its own, as each real kubelet has its own, over
 * the process's one connection pool.
 */
export class RateLimitedApi implements ApiRequester {
  private tokens: number;
  private last = Date.now();

  constructor(
    private readonly api: ApiRequester,
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  get description(): string {
    return this.api.description;
  }

  /** Milliseconds until this request's token (reserved now; a negative balance is the queue). */
  private reserve(): number {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }

  async request<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    const wait = this.reserve();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return this.api.request<T>(method, path, body, contentType);
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }
}

/** A client limited to qps/burst; a negative qps means no limit (client-go: QPS < 0 disables it). */
export function rateLimited(api: ApiRequester, qps: number, burst: number): ApiRequester {
  return qps < 0 ? api : new RateLimitedApi(api, qps, Math.max(1, burst));
}
