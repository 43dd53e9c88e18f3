// A small in-memory double of the runtime for tests whose subject is the gRPC edge:
// it records calls, keeps sandboxes in a map, and can be told to fail or stall a method.
import type { ContainerEventResponse } from '../../src/generated/runtime/v1/ContainerEventResponse.js';
import type { CriBackend } from '../../src/cri/backend.js';
import { RuntimeError } from '../../src/runtime/errors.js';

type Method = keyof CriBackend;

export class FakeRuntime implements CriBackend {
  readonly calls: Method[] = [];
  private readonly failures = new Map<Method, unknown>();
  private readonly stalls = new Map<Method, Promise<void>>();
  private readonly sandboxes = new Map<string, { name: string; namespace: string; uid: string; created: string }>();
  private readonly listeners = new Set<(event: ContainerEventResponse) => void>();
  private nextId = 1;

  /** Make `method` reject with `error` (any value, RuntimeError or not). */
  failNext(method: Method, error: unknown): void {
    this.failures.set(method, error);
  }

  /** Make `method` wait for `gate` before answering. */
  stall(method: Method, gate: Promise<void>): void {
    this.stalls.set(method, gate);
  }

  get subscribers(): number {
    return this.listeners.size;
  }

  emit(event: ContainerEventResponse): void {
    for (const listener of this.listeners) listener(event);
  }

  private async enter(method: Method): Promise<void> {
    this.calls.push(method);
    const stall = this.stalls.get(method);
    if (stall !== undefined) {
      this.stalls.delete(method);
      await stall;
    }
    if (this.failures.has(method)) {
      const error = this.failures.get(method);
      this.failures.delete(method);
      throw error;
    }
  }

  async version(): ReturnType<CriBackend['version']> {
    await this.enter('version');
    return { version: '0.1.0', runtime_name: 'fake', runtime_version: '0.0.1', runtime_api_version: 'v1' };
  }
  async status(): ReturnType<CriBackend['status']> {
    await this.enter('status');
    return { status: { conditions: [{ type: 'RuntimeReady', status: true }, { type: 'NetworkReady', status: true }] } };
  }
  async runtimeConfig(): ReturnType<CriBackend['runtimeConfig']> {
    await this.enter('runtimeConfig');
    return {};
  }
  async updateRuntimeConfig(): ReturnType<CriBackend['updateRuntimeConfig']> {
    await this.enter('updateRuntimeConfig');
    return {};
  }
  async runPodSandbox(req: Parameters<CriBackend['runPodSandbox']>[0]): ReturnType<CriBackend['runPodSandbox']> {
    await this.enter('runPodSandbox');
    const id = `sandbox-${this.nextId++}`;
    const md = req.config!.metadata!;
    this.sandboxes.set(id, { name: md.name, namespace: md.namespace, uid: md.uid, created: String(Date.now() * 1e6) });
    return { pod_sandbox_id: id };
  }
  async stopPodSandbox(req: Parameters<CriBackend['stopPodSandbox']>[0]): ReturnType<CriBackend['stopPodSandbox']> {
    await this.enter('stopPodSandbox');
    if (!this.sandboxes.has(req.pod_sandbox_id)) throw new RuntimeError('NotFound', `pod sandbox "${req.pod_sandbox_id}" not found`);
    return {};
  }
  async removePodSandbox(req: Parameters<CriBackend['removePodSandbox']>[0]): ReturnType<CriBackend['removePodSandbox']> {
    await this.enter('removePodSandbox');
    this.sandboxes.delete(req.pod_sandbox_id);
    return {};
  }
  async podSandboxStatus(req: Parameters<CriBackend['podSandboxStatus']>[0]): ReturnType<CriBackend['podSandboxStatus']> {
    await this.enter('podSandboxStatus');
    const sb = this.sandboxes.get(req.pod_sandbox_id);
    if (sb === undefined) throw new RuntimeError('NotFound', `pod sandbox "${req.pod_sandbox_id}" not found`);
    return { status: { id: req.pod_sandbox_id, metadata: { name: sb.name, namespace: sb.namespace, uid: sb.uid }, created_at: sb.created } };
  }
  async listPodSandbox(): ReturnType<CriBackend['listPodSandbox']> {
    await this.enter('listPodSandbox');
    return {
      items: [...this.sandboxes].map(([id, sb]) => ({ id, metadata: { name: sb.name, namespace: sb.namespace, uid: sb.uid }, created_at: sb.created })),
    };
  }
  async updatePodSandboxResources(): ReturnType<CriBackend['updatePodSandboxResources']> {
    await this.enter('updatePodSandboxResources');
    return {};
  }
  async createContainer(): ReturnType<CriBackend['createContainer']> {
    await this.enter('createContainer');
    return { container_id: `container-${this.nextId++}` };
  }
  async startContainer(): ReturnType<CriBackend['startContainer']> {
    await this.enter('startContainer');
    return {};
  }
  async stopContainer(): ReturnType<CriBackend['stopContainer']> {
    await this.enter('stopContainer');
    return {};
  }
  async removeContainer(): ReturnType<CriBackend['removeContainer']> {
    await this.enter('removeContainer');
    return {};
  }
  async listContainers(): ReturnType<CriBackend['listContainers']> {
    await this.enter('listContainers');
    return { containers: [] };
  }
  async containerStatus(req: Parameters<CriBackend['containerStatus']>[0]): ReturnType<CriBackend['containerStatus']> {
    await this.enter('containerStatus');
    throw new RuntimeError('NotFound', `container "${req.container_id}" not found`);
  }
  async updateContainerResources(): ReturnType<CriBackend['updateContainerResources']> {
    await this.enter('updateContainerResources');
    return {};
  }
  async reopenContainerLog(): ReturnType<CriBackend['reopenContainerLog']> {
    await this.enter('reopenContainerLog');
    return {};
  }
  async execSync(req: Parameters<CriBackend['execSync']>[0]): ReturnType<CriBackend['execSync']> {
    await this.enter('execSync');
    return { stdout: Buffer.from(`${req.cmd.join(' ')}\n`), stderr: Buffer.alloc(0), exit_code: 0 };
  }
  async exec(req: Parameters<CriBackend['exec']>[0]): ReturnType<CriBackend['exec']> {
    await this.enter('exec');
    return { url: `http://127.0.0.1:1/exec/${req.container_id}` };
  }
  async attach(req: Parameters<CriBackend['attach']>[0]): ReturnType<CriBackend['attach']> {
    await this.enter('attach');
    return { url: `http://127.0.0.1:1/attach/${req.container_id}` };
  }
  async portForward(req: Parameters<CriBackend['portForward']>[0]): ReturnType<CriBackend['portForward']> {
    await this.enter('portForward');
    return { url: `http://127.0.0.1:1/portforward/${req.pod_sandbox_id}` };
  }
  async containerStats(): ReturnType<CriBackend['containerStats']> {
    await this.enter('containerStats');
    return {};
  }
  async listContainerStats(): ReturnType<CriBackend['listContainerStats']> {
    await this.enter('listContainerStats');
    return { stats: [] };
  }
  async podSandboxStats(): ReturnType<CriBackend['podSandboxStats']> {
    await this.enter('podSandboxStats');
    return {};
  }
  async listPodSandboxStats(): ReturnType<CriBackend['listPodSandboxStats']> {
    await this.enter('listPodSandboxStats');
    return { stats: [] };
  }
  async listMetricDescriptors(): ReturnType<CriBackend['listMetricDescriptors']> {
    await this.enter('listMetricDescriptors');
    return { descriptors: [] };
  }
  async listPodSandboxMetrics(): ReturnType<CriBackend['listPodSandboxMetrics']> {
    await this.enter('listPodSandboxMetrics');
    return { pod_metrics: [] };
  }
  async listImages(): ReturnType<CriBackend['listImages']> {
    await this.enter('listImages');
    return { images: [] };
  }
  async imageStatus(): ReturnType<CriBackend['imageStatus']> {
    await this.enter('imageStatus');
    return {};
  }
  async pullImage(req: Parameters<CriBackend['pullImage']>[0]): ReturnType<CriBackend['pullImage']> {
    await this.enter('pullImage');
    return { image_ref: `sha256:${req.image!.image.length}` };
  }
  async removeImage(): ReturnType<CriBackend['removeImage']> {
    await this.enter('removeImage');
    return {};
  }
  async imageFsInfo(): ReturnType<CriBackend['imageFsInfo']> {
    await this.enter('imageFsInfo');
    return { image_filesystems: [] };
  }
  subscribeContainerEvents(listener: (event: ContainerEventResponse) => void): () => void {
    this.calls.push('subscribeContainerEvents');
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
