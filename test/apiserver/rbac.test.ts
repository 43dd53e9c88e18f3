import { expect } from 'chai';
import { snapshotFromDocuments } from '../../src/apiserver/cluster.js';
import { parseDocuments } from '../../src/apiserver/manifests.js';
import { authorize, requestingUser, serviceAccountUser, type ResourceAttributes, type UserInfo } from '../../src/apiserver/rbac.js';

const cluster = (yaml: string) => snapshotFromDocuments(parseDocuments('cluster.yaml', yaml).documents);

const rbac = cluster(`
apiVersion: v1
kind: Namespace
metadata: { name: apps }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: gmsa-webapp-user }
rules:
  - { apiGroups: [windows.k8s.io], resources: [gmsacredentialspecs], verbs: [use], resourceNames: [webapp] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: gmsa-any-user }
rules:
  - { apiGroups: [windows.k8s.io], resources: [gmsacredentialspecs], verbs: [use] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: everything }
rules:
  - { apiGroups: ["*"], resources: ["*"], verbs: ["*"] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: web-sa, namespace: apps }
subjects: [{ kind: ServiceAccount, name: web }]
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gmsa-webapp-user }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: credspec-configmap, namespace: apps }
rules:
  - { apiGroups: [""], resources: [configmaps], verbs: [use, get], resourceNames: [webserver-credspec] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: credspec-users, namespace: apps }
subjects:
  - { kind: User, apiGroup: rbac.authorization.k8s.io, name: alice }
  - { kind: Group, apiGroup: rbac.authorization.k8s.io, name: web-admins }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: credspec-configmap }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: all-service-accounts-of-ops }
subjects: [{ kind: Group, apiGroup: rbac.authorization.k8s.io, name: "system:serviceaccounts:ops" }]
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gmsa-any-user }
---
apiVersion: v1
kind: Namespace
metadata: { name: ops }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: root }
subjects: [{ kind: User, apiGroup: rbac.authorization.k8s.io, name: root }]
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: everything }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: authenticated-can-read, namespace: apps }
subjects: [{ kind: Group, apiGroup: rbac.authorization.k8s.io, name: "system:authenticated" }]
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: reader, namespace: apps }
rules:
  - { apiGroups: [""], resources: [pods], verbs: [get, list] }
`);

const useGmsa = (name: string, namespace = 'apps'): ResourceAttributes => ({ verb: 'use', apiGroup: 'windows.k8s.io', resource: 'gmsacredentialspecs', namespace, name });
const useConfigMap = (name: string, namespace = 'apps'): ResourceAttributes => ({ verb: 'use', apiGroup: '', resource: 'configmaps', namespace, name });

describe('RBAC evaluator', () => {
  const cases: { name: string; user: UserInfo; attrs: ResourceAttributes; allowed: boolean }[] = [
    { name: 'service account bound through a RoleBinding to a ClusterRole with resourceNames', user: serviceAccountUser('apps', 'web'), attrs: useGmsa('webapp'), allowed: true },
    { name: 'resourceNames restrict: another credential spec is refused', user: serviceAccountUser('apps', 'web'), attrs: useGmsa('eventlogger'), allowed: false },
    { name: 'a RoleBinding grants only in its namespace', user: serviceAccountUser('apps', 'web'), attrs: useGmsa('webapp', 'default'), allowed: false },
    { name: 'a service account of the same name in another namespace is someone else', user: serviceAccountUser('default', 'web'), attrs: useGmsa('webapp', 'default'), allowed: false },
    { name: 'the verb must match', user: serviceAccountUser('apps', 'web'), attrs: { ...useGmsa('webapp'), verb: 'get' }, allowed: false },
    { name: 'the API group must match', user: serviceAccountUser('apps', 'web'), attrs: { ...useGmsa('webapp'), apiGroup: 'example.com' }, allowed: false },
    { name: 'User subject via a Role', user: requestingUser('alice'), attrs: useConfigMap('webserver-credspec'), allowed: true },
    { name: 'User subject, other ConfigMap', user: requestingUser('alice'), attrs: useConfigMap('other'), allowed: false },
    { name: 'Group subject (--as-group)', user: requestingUser('bob', ['web-admins']), attrs: useConfigMap('webserver-credspec'), allowed: true },
    { name: 'user without bindings', user: requestingUser('mallory'), attrs: useConfigMap('webserver-credspec'), allowed: false },
    { name: 'system:serviceaccounts:<ns> group via a ClusterRoleBinding, any name, any namespace', user: serviceAccountUser('ops', 'anything'), attrs: useGmsa('sqlreporting', 'ops'), allowed: true },
    { name: 'wildcards in verbs, groups and resources', user: requestingUser('root'), attrs: { verb: 'delete', apiGroup: 'apps', resource: 'deployments', namespace: 'x', name: 'y' }, allowed: true },
    { name: 'system:authenticated is added to every requesting user', user: requestingUser('carol'), attrs: { verb: 'list', apiGroup: '', resource: 'pods', namespace: 'apps', name: '' }, allowed: true },
    // The webhook's SubjectAccessReview user for a service account has no system:authenticated group.
    { name: 'a binding to system:authenticated does not reach the webhook\'s service-account user', user: serviceAccountUser('ops', 'x'), attrs: { verb: 'get', apiGroup: '', resource: 'pods', namespace: 'apps', name: 'p' }, allowed: false },
    { name: 'system:masters may do anything', user: requestingUser('admin', ['system:masters']), attrs: useGmsa('whatever', 'default'), allowed: true },
  ];
  for (const c of cases) {
    it(`${c.allowed ? 'allows' : 'denies'}: ${c.name}`, () => {
      expect(authorize(rbac, c.user, c.attrs).allowed).to.equal(c.allowed);
    });
  }

  it('names the binding that allowed a request', () => {
    expect(authorize(rbac, serviceAccountUser('apps', 'web'), useGmsa('webapp')).reason).to.equal(
      'RBAC: allowed by RoleBinding "web-sa/apps" of ClusterRole "gmsa-webapp-user" to ServiceAccount "web/apps"',
    );
  });

  it('a binding to a role that does not exist grants nothing', () => {
    const dangling = cluster(`
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: dangling }
subjects: [{ kind: User, apiGroup: rbac.authorization.k8s.io, name: alice }]
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: missing }
`);
    expect(authorize(dangling, requestingUser('alice'), useConfigMap('x', 'default')).allowed).to.equal(false);
  });

  // windows-gmsa webhook.go (993de21) isAuthorizedToUseCredSpec: serviceaccount.UserInfo(ns, sa, "").
  it('service account identity: user name and the two service-account groups, not system:authenticated', () => {
    expect(serviceAccountUser('apps', 'web')).to.deep.equal({
      name: 'system:serviceaccount:apps:web',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:apps'],
    });
  });
});
