import { snapshotFromDocuments, type ClusterSnapshot } from '../../src/apiserver/cluster.js';
import { parseDocuments } from '../../src/apiserver/manifests.js';

/** Namespace `apps` with the service accounts `web` and `batch`. */
const APPS = `
apiVersion: v1
kind: Namespace
metadata: { name: apps }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: web, namespace: apps }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: batch, namespace: apps }
`;

/** `use` of every GMSACredentialSpec (ClusterRole gmsa-users), granted to `web` in `apps` only. */
const WEB_MAY_USE_GMSA = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: gmsa-users }
rules: [{ apiGroups: [windows.k8s.io], resources: [gmsacredentialspecs], verbs: [use] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: web-gmsa, namespace: apps }
subjects: [{ kind: ServiceAccount, name: web, namespace: apps }]
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gmsa-users }
`;

/**
 * The cluster (file `cluster.yaml`) the admission tests run against, in this document order:
 * namespace `apps` with the service accounts `web` and `batch`; `credentialSpecs` (the
 * GMSACredentialSpec documents of the test); the ClusterRole `gmsa-users` (use on
 * gmsacredentialspecs) bound to `web` in `apps`; then `more` (any further documents). Both texts are
 * YAML documents separated by `---`.
 */
export function gmsaAdmissionCluster(credentialSpecs: string, more = ''): ClusterSnapshot {
  const text = [APPS, credentialSpecs, WEB_MAY_USE_GMSA, more].filter((part) => part.trim() !== '').join('\n---\n');
  const { documents, errors } = parseDocuments('cluster.yaml', text);
  if (errors.length > 0) throw new Error(`the admission test cluster does not parse: ${errors.map((e) => e.message).join('; ')}`);
  return snapshotFromDocuments(documents);
}
