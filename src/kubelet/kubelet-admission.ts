/**
 * The kubelet's own admission of a pod (pkg/kubelet/lifecycle/predicate.go, kubernetes v1.34.12):
 * what every pod meets on the node, whether it came from the API server or from a static pod file.
 * Static pods meet nothing else: no API admission plugin and no webhook ever sees them.
 */
import type { V1Pod } from '@kubernetes/client-node';

export interface KubeletRejection {
  readonly reason: string;
  readonly message: string;
}

/**
 * The OS checks of predicateAdmitHandler on a Windows node: the `kubernetes.io/os` node selector,
 * then spec.os.name. Undefined when the pod is admitted.
 */
export function admitPodOs(pod: V1Pod, nodeOs = 'windows'): KubeletRejection | undefined {
  const selectorOs = pod.spec?.nodeSelector?.['kubernetes.io/os'];
  if (selectorOs !== undefined && selectorOs !== nodeOs) {
    return { reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" };
  }
  const os = pod.spec?.os?.name;
  if (os !== undefined && os !== null && os !== nodeOs) return { reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  return undefined;
}
