/**
 * Events for identity operations that failed inside a pod's containers: the runtime records each
 * domain operation (nltest, klist, `whoami /upn`) with the status it reported
 * (src/runtime/windows/identity-journal.ts); the kubelet turns each failure it has not reported
 * yet into a Warning event on the pod. The reason `IdentityOperationFailed` and the message are
 * cri-winsim's own: no upstream component posts an event for a failure inside a container.
 */
import type { IdentityClient } from '../../cri/identity-service.js';
import type { PodEvent } from '../pod-worker-options.js';
import { mergeEvents, type PodRecord, type PodRecordStore } from '../pod-records.js';
import { runtimeAnswers } from './gather-explanation.js';

export const IDENTITY_OPERATION_FAILED = 'IdentityOperationFailed';

export interface IdentityFailureEvents {
  readonly events: readonly PodEvent[];
  /** The runtime's sequence number of the last operation seen (the record's identityEventsSeen). */
  readonly seen: string;
}

/** The failed operations after `record.identityEventsSeen`, as events, oldest first. */
export async function identityFailureEvents(identity: IdentityClient, record: PodRecord, timeoutMs: number): Promise<IdentityFailureEvents> {
  let seenBefore = BigInt(record.identityEventsSeen ?? '0');
  const failures: { sequence: bigint; event: PodEvent }[] = [];
  const answers = await runtimeAnswers(identity, record, timeoutMs);
  // A runtime that restarted numbers its operations from 1 again: everything it has is new.
  const newest = [...answers.values()].flatMap((a) => ('error' in a ? [] : a.operations.map((o) => BigInt(o.sequence))));
  if (newest.length > 0 && newest.every((n) => n < seenBefore)) seenBefore = 0n;
  let seen = seenBefore;
  for (const [name, container] of Object.entries(record.containers)) {
    const answer = container.containerId === undefined ? undefined : answers.get(container.containerId);
    if (answer === undefined || 'error' in answer) continue;
    for (const op of answer.operations) {
      const sequence = BigInt(op.sequence);
      if (sequence <= seenBefore) continue;
      if (sequence > seen) seen = sequence;
      if (op.result !== 'failed') continue;
      failures.push({ sequence, event: { type: 'Warning', reason: IDENTITY_OPERATION_FAILED, message: `${op.command}: ${op.status}`, container: name } });
    }
  }
  failures.sort((a, b) => (a.sequence < b.sequence ? -1 : a.sequence > b.sequence ? 1 : 0));
  return { events: failures.map((f) => f.event), seen: String(seen) };
}

/**
 * The fake kubelet's share (it has no daemon between commands): the failures not yet reported
 * are added to each pod record's events, as `kubelet describe` then lists them.
 */
export async function recordIdentityEvents(identity: IdentityClient, records: PodRecordStore, timeoutMs: number, at = new Date()): Promise<void> {
  for (const record of await records.list()) {
    const gmsa = Object.values(record.containers).some((c) => c.containerId !== undefined && (c.identity?.criConfig.credentialSpecBytes ?? 0) > 0);
    if (!gmsa) continue;
    const { events, seen } = await identityFailureEvents(identity, record, timeoutMs);
    if (seen === (record.identityEventsSeen ?? '0')) continue;
    await records.update(record.pod.metadata?.uid ?? '', (r) => ({ ...r, identityEventsSeen: seen, events: mergeEvents(r.events, events, at) }));
  }
}
