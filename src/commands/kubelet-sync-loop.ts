/**
 * `cri-winsim kubelet --pod-manifest-path DIR`: the static-pod sync loop (src/kubelet/static-pods.ts)
 * over the runtime, until SIGTERM or SIGINT; each pass's events and refusals are logged, and the
 * pod table is printed when a pod's state changed.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { createLogger } from '../log.js';
import { formatPodTable } from '../kubectl/pod-printers.js';
import { PodRecordStore } from '../kubelet/pod-records.js';
import { StaticPodSyncLoop, type SyncReport } from '../kubelet/static-pods.js';
import { UsageError } from './cli-errors.js';
import { gmsaDesign, nodeSettings } from './kubelet-flags.js';
import { clusterSource, requestUser } from './kubelet-cluster.js';
import { withRuntime } from './kubelet-runtime.js';
import { commandGcOptions, standaloneNodeOf } from './gc-flags.js';

const io = {
  out: (text: string): void => {
    process.stdout.write(text);
  },
  err: (text: string): void => {
    process.stderr.write(text);
  },
};

export interface SyncFlags {
  podManifestPath?: string;
}

/** Logged once the loop watches the directory; scripts and tests wait for it. */
export const SYNC_LOOP_READY_MESSAGE = 'cri-winsim kubelet watching the pod manifest path';

export async function kubeletSyncLoop(flags: SyncFlags, command: Command): Promise<number> {
  const settings = nodeSettings(command, io.err);
  if (flags.podManifestPath === undefined) throw new UsageError('give a subcommand (run, get, describe, delete, logs, exec) or --pod-manifest-path DIR');
  const manifestDir = resolve(flags.podManifestPath);
  const info = await stat(manifestDir).catch(() => undefined);
  if (info?.isDirectory() !== true) throw new Error(`--pod-manifest-path ${manifestDir}: not a directory`);
  const cluster = clusterSource(command);
  const user = requestUser(command);
  const logger = createLogger({ level: settings.log.level, name: 'cri-winsim-kubelet', ...(settings.log.format === undefined ? {} : { format: settings.log.format }) });
  return withRuntime(settings, async (cri) => {
    const controller = new AbortController();
    const onSignal = (sig: NodeJS.Signals): void => {
      logger.info({ signal: sig }, 'stopping the sync loop');
      controller.abort();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    try {
      const loop = new StaticPodSyncLoop(cri, {
        manifestDir,
        cluster,
        user,
        design: gmsaDesign(command),
        podLogsRoot: settings.podLogsRoot,
        nodeName: settings.hostname,
        callTimeoutMs: settings.callTimeoutMs,
        records: new PodRecordStore(settings.rootDir),
        node: standaloneNodeOf(command, settings.hostname),
        garbageCollection: { ...commandGcOptions(command), onNodeEvent: (e) => logger.warn({ node: settings.hostname, reason: e.reason }, e.message) },
      });
      let lastTable = '';
      const reported = new Set<string>();
      const onPass = (report: SyncReport | Error): void => {
        if (report instanceof Error) {
          logger.error({ err: report }, 'sync pass failed');
          return;
        }
        // Each refusal is reported once, not on every pass.
        for (const message of report.refused) {
          if (!reported.has(message)) logger.warn({ refused: message }, 'pod not started');
        }
        reported.clear();
        report.refused.forEach((m) => reported.add(m));
        for (const e of report.events) logger[e.type === 'Warning' ? 'warn' : 'info']({ pod: e.pod, container: e.container, reason: e.reason }, e.message);
        for (const p of report.deleted) logger.info({ pod: p }, 'pod removed: its file is gone or changed');
        // The table is printed when a pod's state changed, not because its AGE moved on.
        const state = JSON.stringify(report.pods.map(({ startTime: _, ...rest }) => rest));
        if (state !== lastTable) io.out(formatPodTable(report.pods.map((p) => ({ ...p, podIP: '' })), { namespaceColumn: true }));
        lastTable = state;
      };
      logger.info({ manifestDir, endpoint: settings.endpoint }, SYNC_LOOP_READY_MESSAGE);
      await loop.run(controller.signal, onPass);
      logger.info('sync loop stopped');
      await new Promise<void>((done) => logger.flush(() => done()));
      return 0;
    } finally {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    }
  });
}
