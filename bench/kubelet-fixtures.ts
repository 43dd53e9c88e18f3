/**
 * Inputs of the fake kubelet throughput run: a cluster directory that authorises one service
 * account to use one GMSACredentialSpec, and N ordinary pod YAMLs that reference it by name
 * (the shipped webhook's design), each with a RunAsUserName.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { BENCH_CREDENTIAL_SPEC } from './workload.js';

export const KUBELET_BENCH_NAMESPACE = 'bench';
export const KUBELET_BENCH_SERVICE_ACCOUNT = 'webapp-sa';
export const KUBELET_BENCH_GMSA = 'webapp1';
export const KUBELET_BENCH_IMAGE = 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022';

/** The cluster objects: namespace, service account, the GMSACredentialSpec and RBAC granting `use` on it. */
export function clusterManifests(): object[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KUBELET_BENCH_NAMESPACE } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: KUBELET_BENCH_SERVICE_ACCOUNT, namespace: KUBELET_BENCH_NAMESPACE } },
    {
      apiVersion: 'windows.k8s.io/v1',
      kind: 'GMSACredentialSpec',
      metadata: { name: KUBELET_BENCH_GMSA },
      credspec: JSON.parse(BENCH_CREDENTIAL_SPEC) as object,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${KUBELET_BENCH_GMSA}-user` },
      rules: [{ apiGroups: ['windows.k8s.io'], resources: ['gmsacredentialspecs'], verbs: ['use'], resourceNames: [KUBELET_BENCH_GMSA] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${KUBELET_BENCH_SERVICE_ACCOUNT}-uses-${KUBELET_BENCH_GMSA}`, namespace: KUBELET_BENCH_NAMESPACE },
      subjects: [{ kind: 'ServiceAccount', name: KUBELET_BENCH_SERVICE_ACCOUNT, namespace: KUBELET_BENCH_NAMESPACE }],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${KUBELET_BENCH_GMSA}-user` },
    },
  ];
}

export function podName(index: number): string {
  return `gmsa-web-${String(index).padStart(5, '0')}`;
}

/** Pod i: pod-level gMSA by name plus RunAsUserName, one IIS container. */
export function podManifest(index: number): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName(index), namespace: KUBELET_BENCH_NAMESPACE, labels: { app: 'gmsa-web' } },
    spec: {
      serviceAccountName: KUBELET_BENCH_SERVICE_ACCOUNT,
      nodeSelector: { 'kubernetes.io/os': 'windows' },
      securityContext: { windowsOptions: { gmsaCredentialSpecName: KUBELET_BENCH_GMSA, runAsUserName: 'ContainerUser' } },
      containers: [{ name: 'iis', image: KUBELET_BENCH_IMAGE }],
    },
  };
}

/** Writes DIR/cluster/objects.yaml and DIR/pods/<name>.yaml × count; returns both directories. */
export function writeKubeletFixtures(dir: string, count: number): { clusterDir: string; podDir: string; podFiles: string[] } {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`pod count must be a positive integer, got ${count}`);
  const clusterDir = join(dir, 'cluster');
  const podDir = join(dir, 'pods');
  mkdirSync(clusterDir, { recursive: true });
  mkdirSync(podDir, { recursive: true });
  writeFileSync(join(clusterDir, 'objects.yaml'), clusterManifests().map((m) => stringify(m)).join('---\n'));
  const podFiles: string[] = [];
  for (let i = 0; i < count; i++) {
    const file = join(podDir, `${podName(i)}.yaml`);
    writeFileSync(file, stringify(podManifest(i)));
    podFiles.push(file);
  }
  return { clusterDir, podDir, podFiles };
}
