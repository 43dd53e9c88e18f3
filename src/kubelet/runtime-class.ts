/**
 * spec.runtimeClassName → the RuntimeClass's handler → RunPodSandbox's runtime_handler, as the
 * kubelet's runtimeclass.Manager.LookupRuntimeHandler does it (pkg/kubelet/runtimeclass,
 * kubernetes v1.34): no name is the runtime's default handler (''); a name with no RuntimeClass
 * fails the sandbox with the lister's NotFound error, which kuberuntime's SyncPod reports as the
 * Warning event FailedCreatePodSandBox "Failed to create pod sandbox: runtimeclass.node.k8s.io
 * "<name>" not found". A handler the runtime does not have is the runtime's refusal of
 * RunPodSandbox, reported the same way with the runtime's text.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { RuntimeClass } from '../apiserver/runtime-class.js';


/** The NotFound error the RuntimeClass lister returns (errors.NewNotFound(node.k8s.io runtimeclass)). */
export class RuntimeClassNotFoundError extends Error {
  constructor(readonly runtimeClassName: string) {
    super(`runtimeclass.node.k8s.io ${JSON.stringify(runtimeClassName)} not found`);
  }
}

/**
 * LookupRuntimeHandler: '' without a runtimeClassName, else the named RuntimeClass's handler.
 * `find` reads the RuntimeClass (the cluster directory's snapshot or the API server).
 */
export async function lookupRuntimeHandler(pod: V1Pod, find: (name: string) => Promise<RuntimeClass | undefined> | RuntimeClass | undefined): Promise<string> {
  const name = pod.spec?.runtimeClassName;
  if (name === undefined || name === null || name === '') return '';
  let runtimeClass: RuntimeClass | undefined;
  try {
    runtimeClass = await find(name);
  } catch (err) {
    throw new Error(`failed to lookup RuntimeClass ${name}: ${(err as Error).message}`, { cause: err });
  }
  if (runtimeClass === undefined) throw new RuntimeClassNotFoundError(name);
  return runtimeClass.handler;
}
