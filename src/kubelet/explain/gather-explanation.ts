/**
 * Reads the records an explanation is made of: the kubelet's pod record (given) and, for each
 * container the kubelet created, the runtime's through its Identity service on the CRI socket.
 */
import type { ServiceError } from '@grpc/grpc-js';
import { unaryCall } from '../../cri/proto.js';
import { isNotFound } from '../../cri/runtime-calls.js';
import type { IdentityClient } from '../../cri/identity-service.js';
import type { ExplainContainerResponse__Output } from '../../generated/criwinsim/identity/v1/ExplainContainerResponse.js';
import type { PodRecord } from '../pod-records.js';
import { explainIdentity, type AdmissionRefusal, type IdentityExplanation } from './identity-explanation.js';
import type { V1Pod } from '@kubernetes/client-node';

type RuntimeAnswers = Map<string, ExplainContainerResponse__Output | { readonly error: string }>;

/** Asks the runtime about every container the record names; a container it no longer has is left out. */
export async function runtimeAnswers(identity: IdentityClient, record: PodRecord, timeoutMs: number): Promise<RuntimeAnswers> {
  const answers: RuntimeAnswers = new Map();
  const ids = Object.values(record.containers).map((c) => c.containerId).filter((id): id is string => id !== undefined);
  await Promise.all(
    ids.map(async (id) => {
      try {
        answers.set(id, await unaryCall(identity, 'ExplainContainer', { container_id: id }, { timeoutMs }));
      } catch (err) {
        const e = err as Partial<ServiceError>;
        if (isNotFound(err)) return;
        answers.set(id, { error: e.details ?? (err instanceof Error ? err.message : String(err)) });
      }
    }),
  );
  return answers;
}

/** The explanation of a pod the kubelet ran, from its record and the runtime's. */
export async function explainRecordedPod(identity: IdentityClient, record: PodRecord, timeoutMs: number): Promise<IdentityExplanation> {
  return explainIdentity({
    pod: record.pod,
    ...(record.applied === undefined ? {} : { sent: record.applied }),
    ...(record.gmsaAdmission === undefined ? {} : { gmsaAdmission: record.gmsaAdmission }),
    containers: record.containers,
    runtime: await runtimeAnswers(identity, record, timeoutMs),
  });
}

/** The explanation of a pod admission refused: it never reached the node. */
export function explainRefusedPod(pod: V1Pod, refusal: AdmissionRefusal): IdentityExplanation {
  return explainIdentity({ pod, sent: pod, refusal, containers: {}, runtime: new Map() });
}
