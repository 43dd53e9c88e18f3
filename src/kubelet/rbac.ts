/**
 * An RBAC evaluator over a cluster snapshot, answering the SubjectAccessReviews admission asks
 * (kubernetes plugin/pkg/auth/authorizer/rbac): ClusterRoleBindings grant everywhere, RoleBindings
 * only in their namespace (to a Role there or to a ClusterRole), rules match by verb, API group,
 * resource and, when listed, resource name; `*` matches anything.
 */
import type { RbacV1Subject, V1PolicyRule } from '@kubernetes/client-node';
import type { ClusterSnapshot } from './cluster.js';

export interface UserInfo {
  readonly name: string;
  readonly groups: readonly string[];
}

export interface ResourceAttributes {
  readonly verb: string;
  readonly apiGroup: string;
  readonly resource: string;
  /** The namespace of the request; '' for a cluster-wide request. */
  readonly namespace: string;
  readonly name: string;
}

export interface Decision {
  readonly allowed: boolean;
  /** Which binding and role allowed it, or why nothing did. */
  readonly reason: string;
}

const serviceAccountPrefix = 'system:serviceaccount:';

/** serviceaccount.UserInfo: the user name and groups a service account authenticates as. */
export function serviceAccountUser(namespace: string, name: string): UserInfo {
  return {
    name: `${serviceAccountPrefix}${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
  };
}

/** An impersonated user (`--as`, `--as-group`): authenticated users are always in system:authenticated. */
export function requestingUser(name: string, groups: readonly string[] = []): UserInfo {
  return { name, groups: groups.includes('system:authenticated') ? [...groups] : [...groups, 'system:authenticated'] };
}

const matches = (values: readonly string[] | undefined, wanted: string): boolean =>
  (values ?? []).some((v) => v === '*' || v === wanted);

/** RuleAllows: verb, group, resource, and resourceNames when the rule lists any. */
export function ruleAllows(rule: V1PolicyRule, attrs: ResourceAttributes): boolean {
  if (!matches(rule.verbs, attrs.verb)) return false;
  if (!matches(rule.apiGroups, attrs.apiGroup)) return false;
  if (!matches(rule.resources, attrs.resource)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(attrs.name);
}

/** appliesTo: a subject names the user, one of its groups, or (as a service account) the user itself. */
export function subjectMatches(subject: RbacV1Subject, user: UserInfo, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case 'User':
      return subject.name === user.name;
    case 'Group':
      return user.groups.includes(subject.name);
    case 'ServiceAccount': {
      // A RoleBinding's service account subject without a namespace means the binding's own.
      const namespace = subject.namespace || bindingNamespace;
      return namespace !== '' && user.name === `${serviceAccountPrefix}${namespace}:${subject.name}`;
    }
    default:
      return false;
  }
}

/** Authorize: system:masters is allowed everything; otherwise the first binding whose role allows it. */
export function authorize(cluster: ClusterSnapshot, user: UserInfo, attrs: ResourceAttributes): Decision {
  if (user.groups.includes('system:masters')) return { allowed: true, reason: 'member of system:masters' };

  // A binding to a role that does not exist grants nothing (RBAC allows dangling references).
  const clusterRoleRules = (name: string): V1PolicyRule[] => cluster.clusterRoles.find((r) => r.metadata?.name === name)?.rules ?? [];

  for (const binding of cluster.clusterRoleBindings) {
    if (!(binding.subjects ?? []).some((s) => subjectMatches(s, user, ''))) continue;
    if (binding.roleRef.kind !== 'ClusterRole') continue;
    const rules = clusterRoleRules(binding.roleRef.name);
    if (rules.some((rule) => ruleAllows(rule, attrs))) {
      return { allowed: true, reason: `RBAC: allowed by ClusterRoleBinding "${binding.metadata?.name}" of ClusterRole "${binding.roleRef.name}" to ${describeUser(user)}` };
    }
  }

  if (attrs.namespace !== '') {
    for (const binding of cluster.roleBindings) {
      const namespace = binding.metadata?.namespace ?? 'default';
      if (namespace !== attrs.namespace) continue;
      if (!(binding.subjects ?? []).some((s) => subjectMatches(s, user, namespace))) continue;
      const rules =
        binding.roleRef.kind === 'ClusterRole'
          ? clusterRoleRules(binding.roleRef.name)
          : (cluster.roles.find((r) => r.metadata?.namespace === namespace && r.metadata?.name === binding.roleRef.name)?.rules ?? []);
      if (rules.some((rule) => ruleAllows(rule, attrs))) {
        return {
          allowed: true,
          reason: `RBAC: allowed by RoleBinding "${binding.metadata?.name}/${namespace}" of ${binding.roleRef.kind} "${binding.roleRef.name}" to ${describeUser(user)}`,
        };
      }
    }
  }
  return { allowed: false, reason: '' };
}

function describeUser(user: UserInfo): string {
  if (user.name.startsWith(serviceAccountPrefix)) {
    const [namespace, name] = user.name.slice(serviceAccountPrefix.length).split(':');
    return `ServiceAccount "${name}/${namespace}"`;
  }
  return `User "${user.name}"`;
}
