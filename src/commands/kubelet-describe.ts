/**
 * `cri-winsim kubelet describe` and `kubelet delete`: the pods the kubelet ran, read back over CRI
 * and from its records; kubelet.ts wires them to their flags.
 */
import type { Command } from 'commander';
import { deleteNodePod } from '../kubelet/node-pods.js';
import { describePod } from '../kubectl/pod-printers.js';
import { PodRecordStore } from '../kubelet/pod-records.js';
import { readPodViews } from '../kubelet/pod-views.js';
import { createIdentityClient } from '../cri/identity-service.js';
import { recordIdentityEvents } from '../kubelet/explain/identity-events.js';
import { UsageError, integerFlag } from './cli-errors.js';
import { nodeSettings } from './kubelet-flags.js';
import { noResourcesText, selectViews, selectorFlag } from './kubelet-get.js';
import { withRuntime } from './kubelet-runtime.js';
import { io, writeError } from './kubelet-io.js';

export interface ScopeFlags {
  namespace?: string;
  allNamespaces?: boolean;
  selector?: string;
}

export async function kubeletDescribe(names: string[], flags: ScopeFlags, command: Command): Promise<number> {
  const settings = nodeSettings(command, io.err);
  const selector = selectorFlag(flags.selector);
  if (names.length === 0 && selector === undefined && flags.allNamespaces !== true) throw new UsageError('give pod names, -l SELECTOR or -A');
  return withRuntime(settings, async (cri) => {
    const records = new PodRecordStore(settings.rootDir);
    // Failures of identity operations inside the containers become events first (identity-events.ts).
    const identity = createIdentityClient(settings.endpoint);
    try {
      await recordIdentityEvents(identity, records, settings.callTimeoutMs);
    } finally {
      identity.close();
    }
    const views = await readPodViews(cri, records, { callTimeoutMs: settings.callTimeoutMs });
    const { views: found, errors } = selectViews(views, names, flags, selector);
    io.out(found.map((v) => describePod({ pod: v.pod, status: v.status, events: v.record?.events ?? [], nodeName: settings.hostname })).join('\n\n'));
    errors.forEach(writeError);
    if (names.length === 0 && found.length === 0) writeError(noResourcesText(flags));
    return errors.length > 0 ? 1 : 0;
  });
}

export async function kubeletDelete(names: string[], flags: ScopeFlags & { all?: boolean; gracePeriod: string }, command: Command): Promise<number> {
  const settings = nodeSettings(command, io.err);
  const selector = selectorFlag(flags.selector);
  if (flags.all === true && names.length > 0) throw new UsageError('names cannot be provided when --all is specified');
  if (selector !== undefined && names.length > 0) throw new UsageError('name cannot be provided when a selector is specified');
  if (flags.all !== true && names.length === 0 && selector === undefined) throw new UsageError('resource(s) were provided, but no name was specified: give pod names, -l SELECTOR or --all');
  const grace = integerFlag('--grace-period', flags.gracePeriod, { min: 0 });
  return withRuntime(settings, async (cri) => {
    const records = new PodRecordStore(settings.rootDir);
    const views = await readPodViews(cri, records, { callTimeoutMs: settings.callTimeoutMs });
    const { views: found, errors } = selectViews(views, names, flags, selector);
    let failed = errors.length > 0;
    for (const view of found) {
      try {
        if (view.nodePod !== undefined) await deleteNodePod(cri, view.nodePod, { gracePeriodSeconds: grace, callTimeoutMs: settings.callTimeoutMs });
        await records.remove(view.pod.metadata?.uid ?? view.row.name);
        io.out(`pod ${JSON.stringify(view.row.name)} deleted${found.some((o) => o !== view && o.row.name === view.row.name) ? ` from ${view.row.namespace} namespace` : ''}\n`);
      } catch (err) {
        failed = true;
        writeError(`error: ${(err as Error).message}`);
      }
    }
    errors.forEach(writeError);
    if (names.length === 0 && found.length === 0) writeError(noResourcesText(flags));
    return failed ? 1 : 0;
  });
}
