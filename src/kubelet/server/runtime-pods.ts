/**
 * The runtime's view of a pod, found by the kubelet's labels (pkg/kubelet/types/labels.go):
 * what kubecontainer.Pods(runtime.GetPods(all=false)).FindPod(fullName, uid) and
 * FindContainerByName give the kubelet (ready sandboxes, running containers), and every
 * container of a pod by name, newest first, for its logs.
 */
import { unaryCall, type CriClient } from '../../cri/proto.js';
import type { Container } from '../../generated/runtime/v1/Container.js';
import type { PodSandbox } from '../../generated/runtime/v1/PodSandbox.js';
import { KubernetesContainerNameLabel, KubernetesPodNameLabel, KubernetesPodNamespaceLabel, KubernetesPodUIDLabel } from '../cri-config.js';

const SANDBOX_READY = 0;
const CONTAINER_RUNNING = 1;

const newestFirst = (a: { created_at: string }, b: { created_at: string }): number => {
  const x = BigInt(a.created_at);
  const y = BigInt(b.created_at);
  return x > y ? -1 : x < y ? 1 : 0;
};

export class RuntimePods {
  constructor(private readonly cri: CriClient, private readonly callTimeoutMs: number) {}

  /** Ready sandboxes of the pod `namespace/name` (and `uid` when given), newest first. */
  async readySandboxes(namespace: string, name: string, uid?: string): Promise<PodSandbox[]> {
    const labels: Record<string, string> = { [KubernetesPodNamespaceLabel]: namespace, [KubernetesPodNameLabel]: name };
    if (uid) labels[KubernetesPodUIDLabel] = uid;
    const { items } = await unaryCall(this.cri.runtime, 'ListPodSandbox', { filter: { state: { state: SANDBOX_READY }, label_selector: labels } }, { timeoutMs: this.callTimeoutMs });
    return [...items].sort(newestFirst);
  }

  /** The running container `containerName` of the pod's newest ready sandbox. */
  async runningContainer(namespace: string, name: string, uid: string | undefined, containerName: string): Promise<Container | undefined> {
    const [sandbox] = await this.readySandboxes(namespace, name, uid);
    if (sandbox === undefined) return undefined;
    const { containers } = await unaryCall(this.cri.runtime, 'ListContainers', {
      filter: { pod_sandbox_id: sandbox.id, state: { state: CONTAINER_RUNNING }, label_selector: { [KubernetesContainerNameLabel]: containerName } },
    }, { timeoutMs: this.callTimeoutMs });
    return [...containers].sort(newestFirst)[0];
  }

  /** Every container named `containerName` of the pod with this uid, in any state, newest first. */
  async containersByName(uid: string, containerName: string): Promise<Container[]> {
    const { containers } = await unaryCall(this.cri.runtime, 'ListContainers', {
      filter: { label_selector: { [KubernetesPodUIDLabel]: uid, [KubernetesContainerNameLabel]: containerName } },
    }, { timeoutMs: this.callTimeoutMs });
    return [...containers].sort(newestFirst);
  }
}
