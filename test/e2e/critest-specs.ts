// The critest (cri-tools v1.34.0) specs cri-winsim must pass, by their exact names: the
// Describe/Context texts and the It text, as in pkg/validate/*.go of that release. ginkgo
// matches its focus regex against "<suite description> <all node texts joined by spaces>".

export interface CritestSpec {
  /** Container texts from the outermost Describe inward (KubeDescribe adds "[k8s.io] "). */
  containers: string[];
  /** The It text. */
  it: string;
}

const RUNTIME_INFO = ['[k8s.io] Runtime info', 'runtime should support returning runtime info'];
const POD_BASIC = ['[k8s.io] PodSandbox', 'runtime should support basic operations on PodSandbox'];
const CONTAINER_BASIC = ['[k8s.io] Container', 'runtime should support basic operations on container'];
const CONTAINER_LOG = ['[k8s.io] Container', 'runtime should support log'];
const IMAGES = ['[k8s.io] Image Manager'];
const MULTI = ['[k8s.io] Multiple Containers [Conformance]', 'when running multiple containers in a pod'];
const SECURITY_BUCKET = ['[k8s.io] Security Context', 'bucket'];
const STREAMING = ['[k8s.io] Streaming', 'runtime should support streaming interfaces'];
const NETWORKING = ['[k8s.io] Networking', 'runtime should support networking'];

const specs = (containers: string[], its: string[]): CritestSpec[] => its.map((it) => ({ containers, it }));

export const CRITEST_SPECS: readonly CritestSpec[] = [
  // pkg/validate/runtime_info.go
  ...specs(RUNTIME_INFO, [
    'runtime should return version info [Conformance]',
    'runtime should return runtime conditions [Conformance]',
  ]),
  // pkg/validate/pod.go
  ...specs(POD_BASIC, [
    'runtime should support running PodSandbox [Conformance]',
    'runtime should support stopping PodSandbox [Conformance]',
    'runtime should support removing PodSandbox [Conformance]',
  ]),
  // pkg/validate/container.go
  ...specs(CONTAINER_BASIC, [
    'runtime should support creating container [Conformance]',
    'runtime should support starting container [Conformance]',
    'runtime should support stopping container [Conformance]',
    'runtime should support removing created container [Conformance]',
    'runtime should support removing running container [Conformance]',
    'runtime should support removing stopped container [Conformance]',
    'runtime should support execSync [Conformance]',
    'runtime should support execSync with timeout [Conformance]',
    'runtime should support listing container stats [Conformance]',
    'runtime should support listing stats for started containers [Conformance]',
    'runtime should support listing stats for started containers when filter is nil [Conformance]',
    'runtime should support listing stats for three created containers when filter is nil. [Conformance]',
    'runtime should support listing stats for containers filtered by labels [Conformance]',
  ]),
  ...specs(CONTAINER_LOG, [
    'runtime should support starting container with log [Conformance]',
    'runtime should support reopening container log [Conformance]',
  ]),
  // pkg/validate/image.go
  ...specs(IMAGES, [
    'public image with tag should be pulled and removed [Conformance]',
    'public image should timeout if requested [Conformance]',
    'public image without tag should be pulled and removed [Conformance]',
    'public image with digest should be pulled and removed [Conformance]',
    'image status should support all kinds of references [Conformance]',
    'image status get image fields should not have Uid|Username empty [Conformance]',
    'listImage should get exactly 3 image in the result list [Conformance]',
    'listImage should get exactly 3 repoTags in the result image [Conformance]',
  ]),
  // pkg/validate/multi_container_linux.go ("should support network": httpd answers on the pod IP)
  ...specs(MULTI, [
    'should support network',
    'should support container log',
    'should support container exec',
  ]),
  // pkg/validate/streaming.go: the runtime's streaming server (SPDY by default)
  ...specs(STREAMING, [
    'runtime should support exec with tty=false and stdin=false [Conformance]',
    'runtime should support exec with tty=true and stdin=true [Conformance]',
    'runtime should support attach [Conformance]',
    'runtime should support portforward [Conformance]',
  ]),
  // pkg/validate/streaming_linux.go: nginx listening on 12003 in the node's network (127.0.0.1)
  ...specs(STREAMING, [
    'runtime should support portforward in host network',
  ]),
  // pkg/validate/networking.go: web servers on the pod IP and host ports on 127.0.0.1
  ...specs(NETWORKING, [
    'runtime should support DNS config [Conformance]',
    'runtime should support set hostname [Conformance]',
    'runtime should support port mapping with only container port [Conformance]',
    'runtime should support port mapping with host port and container port [Conformance]',
  ]),
  // pkg/validate/security_context_linux.go: create-time validation. (v1.34.0 has no seccomp
  // profile *path* spec any more: seccomp moved to SecurityProfile and its specs need a kernel.)
  ...specs(SECURITY_BUCKET, [
    'runtime should return error if RunAsGroup is set without RunAsUser',
  ]),
];

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The full text ginkgo matches, without the suite description. */
export function specText(spec: CritestSpec): string {
  return [...spec.containers, spec.it].join(' ');
}

/** A -ginkgo.focus regex that selects exactly these specs (each anchored at its end). */
export function focusRegex(list: readonly CritestSpec[] = CRITEST_SPECS): string {
  return list.map((s) => `${escapeRegex(specText(s))}$`).join('|');
}
