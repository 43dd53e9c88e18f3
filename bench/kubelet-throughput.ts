/**
 * Fake kubelet throughput: N pod YAMLs with a pod-level gMSA (by GMSACredentialSpec name) and a
 * RunAsUserName go through the kubelet's whole path — decode and API validation, GMSA admission
 * with the RBAC check, effective security context, CRI configs — and are run by the runtime over
 * its socket. Measured: wall time from the first file read to the last pod's containers started.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createCriClient } from '../src/cri/proto.js';
import { DirectoryClusterSource } from '../src/apiserver/cluster.js';
import { requestingUser } from '../src/apiserver/rbac.js';
import { runPods, summarizePodRun } from '../src/kubelet/run-pods.js';
import { defaultNodeCapacity, standaloneNode } from '../src/kubelet/kubelet-admission.js';
import { writeKubeletFixtures } from './kubelet-fixtures.js';

export interface KubeletRun {
  pods: number;
  running: number;
  /** Pods not Running, by status (e.g. Forbidden, ContainerCreating), for the report. */
  notRunning: Record<string, number>;
  /** One example detail per status that is not Running. */
  examples: Record<string, string>;
  elapsedMs: number;
  podsPerSecond: number;
}

/**
 * Runs `count` gMSA pods through the fake kubelet against the runtime at `endpoint` (a fresh
 * runtime is best: the pods stay running). Fixtures are written under `workDir`.
 */
export async function kubeletThroughput(endpoint: string, workDir: string, count: number): Promise<KubeletRun> {
  mkdirSync(workDir, { recursive: true });
  const { clusterDir, podFiles } = writeKubeletFixtures(workDir, count);
  const cri = createCriClient(endpoint);
  try {
    const started = performance.now();
    const results = await runPods(cri, podFiles, {
      cluster: new DirectoryClusterSource(clusterDir),
      user: requestingUser('bench-admin', ['system:masters']),
      podLogsRoot: join(workDir, 'pod-logs'),
      callTimeoutMs: 30000,
      // A node that takes every pod of the step: the kubelet's admission refuses the 111th pod of
      // the default capacity (110, OutOfpods), which would measure that limit, not the kubelet.
      node: standaloneNode('winnode1', { ...defaultNodeCapacity, maxPods: Math.max(count, defaultNodeCapacity.maxPods) }),
    });
    const elapsedMs = performance.now() - started;
    const notRunning: Record<string, number> = {};
    const examples: Record<string, string> = {};
    let running = 0;
    for (const result of results) {
      const summary = summarizePodRun(result);
      if (summary.status === 'Running') {
        running++;
        continue;
      }
      notRunning[summary.status] = (notRunning[summary.status] ?? 0) + 1;
      examples[summary.status] ??= `${summary.namespace}/${summary.name}: ${summary.detail}`;
    }
    return {
      pods: count,
      running,
      notRunning,
      examples,
      elapsedMs: Math.round(elapsedMs),
      podsPerSecond: Math.round((running / (elapsedMs / 1000)) * 100) / 100,
    };
  } finally {
    cri.close();
  }
}
