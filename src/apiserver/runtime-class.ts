/** The RuntimeClass API object (node.k8s.io/v1), as the cluster directory and the API server hold it. */
import type { V1ObjectMeta } from '@kubernetes/client-node';

/** node.k8s.io/v1 RuntimeClass: cluster-scoped; `handler` names the CRI runtime handler. */
export interface RuntimeClass {
  apiVersion: string;
  kind: 'RuntimeClass';
  metadata: V1ObjectMeta;
  handler: string;
  overhead?: { podFixed?: Record<string, string> };
}

export const runtimeClassApiVersion = 'node.k8s.io/v1';
