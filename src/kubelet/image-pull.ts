/**
 * The pull itself, with the pod's registry credentials (kuberuntime_image.go PullImage and
 * kubelet_pods.go getPullSecretsForPod, kubernetes v1.34). Credentials go into PullImage's auth
 * and nowhere else.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { unaryCall, type CriClient } from '../cri/proto.js';
import type { PodSandboxConfig } from '../generated/runtime/v1/PodSandboxConfig.js';
import { DockerKeyring, missingPullSecretsMessage, type PullAuth } from './image-pull-credentials.js';
import { type PodEvent, type PodWorkerOptions } from './pod-worker-options.js';
import { grpcErrorString } from './cri-errors.js';

/**
 * The keyring of the pod's imagePullSecrets (getPullSecretsForPod, kubernetes v1.34 kubelet_pods.go):
 * secrets that cannot be read are named in the pod's Warning event FailedToRetrieveImagePullSecret
 * and the pull goes on with the others.
 */
export async function podKeyring(pod: V1Pod, options: PodWorkerOptions, events: PodEvent[]): Promise<DockerKeyring> {
  if (options.pullSecrets === undefined || (pod.spec?.imagePullSecrets ?? []).length === 0) return DockerKeyring.empty();
  const { secrets, missing } = await options.pullSecrets(pod);
  if (missing.length > 0) events.push({ type: 'Warning', reason: 'FailedToRetrieveImagePullSecret', message: missingPullSecretsMessage(missing) });
  return DockerKeyring.fromSecrets(secrets);
}

/** utilerrors.NewAggregate's text: one error alone, else the distinct ones in brackets. */
export class PullErrors extends Error {
  constructor(texts: readonly string[]) {
    const distinct = [...new Set(texts)];
    super(distinct.length === 1 ? distinct[0]! : `[${distinct.join(', ')}]`);
  }
}

/**
 * kuberuntime_image.go PullImage: anonymous when the keyring has nothing for the image, else one
 * PullImage per matching credential until one succeeds. No deadline: the kubelet's CRI client
 * pulls with a cancellable context only (cri-client v0.34 pkg/remote_image.go PullImage).
 */
export async function pullWithCredentials(cri: CriClient, image: string, sandboxConfig: PodSandboxConfig, keyring: () => Promise<DockerKeyring>): Promise<void> {
  let auths: PullAuth[];
  try {
    auths = (await keyring()).lookup(image);
  } catch (err) {
    // MakeDockerKeyring's error (a pull secret that is not JSON) is the pull's error.
    throw new PullErrors([(err as Error).message]);
  }
  const pull = (auth?: PullAuth) => unaryCall(cri.image, 'PullImage', { image: { image }, ...(auth === undefined ? {} : { auth: { username: auth.username, password: auth.password } }), sandbox_config: sandboxConfig }, { timeoutMs: Infinity });
  if (auths.length === 0) {
    await pull();
    return;
  }
  const failures: string[] = [];
  for (const auth of auths) {
    try {
      await pull(auth);
      return;
    } catch (err) {
      if (typeof (err as { code?: unknown }).code !== 'number') throw err;
      failures.push(grpcErrorString(err));
    }
  }
  throw new PullErrors(failures);
}

