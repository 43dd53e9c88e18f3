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
/**
 * The service account's user info as apiserver's serviceaccount.UserInfo builds it, which is what the
 * windows-gmsa webhook puts into its SubjectAccessReview (isAuthorizedToUseCredSpec, webhook.go at
 * 993de21): the two service-account groups and not system:authenticated, which only an
 * authenticator adds to a request's user. So a binding to system:authenticated does not let a
 * service account use a credential spec.
 */
export function serviceAccountUser(namespace: string, name: string): UserInfo {
  return {
    name: `${serviceAccountPrefix}${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
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

/**
 * The RBAC objects of one snapshot, indexed once: bindings by the subjects they name (in their
 * original order, which decides the reason given) and roles by name. Built once per snapshot, kept
 * in its derived views.
 */
interface RbacIndex {
  readonly clusterRoleRules: ReadonlyMap<string, readonly V1PolicyRule[]>;
  /** Keyed `<namespace>/<name>`. */
  readonly roleRules: ReadonlyMap<string, readonly V1PolicyRule[]>;
  /** Positions in cluster.clusterRoleBindings by subject key. */
  readonly clusterBindingsBySubject: ReadonlyMap<string, readonly number[]>;
  /** Positions in cluster.roleBindings by `<namespace>` then subject key. */
  readonly roleBindingsBySubject: ReadonlyMap<string, ReadonlyMap<string, readonly number[]>>;
}

const rbacView = Symbol('RBAC index');

/** The key under which a binding's subject is found (subjectMatches' rules); undefined: it matches nobody. */
function subjectKey(subject: RbacV1Subject, bindingNamespace: string): string | undefined {
  switch (subject.kind) {
    case 'User':
      return `user\0${subject.name}`;
    case 'Group':
      return `group\0${subject.name}`;
    case 'ServiceAccount': {
      const namespace = subject.namespace || bindingNamespace;
      return namespace === '' ? undefined : `user\0${serviceAccountPrefix}${namespace}:${subject.name}`;
    }
    default:
      return undefined;
  }
}

/** The subject keys a user is found under: its name (a service account's too) and each group. */
const userKeys = (user: UserInfo): string[] => [`user\0${user.name}`, ...user.groups.map((g) => `group\0${g}`)];

function addPosition(map: Map<string, number[]>, key: string, position: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [position]);
  else if (list[list.length - 1] !== position) list.push(position);
}

const rbacIndex = (cluster: ClusterSnapshot): RbacIndex => cluster.derived.get(rbacView, () => buildRbacIndex(cluster));

function buildRbacIndex(cluster: ClusterSnapshot): RbacIndex {
  // The first object of a name wins, as a linear search would find it.
  const clusterRoleRules = new Map<string, readonly V1PolicyRule[]>();
  for (const role of cluster.clusterRoles) {
    const name = role.metadata?.name;
    if (name !== undefined && !clusterRoleRules.has(name)) clusterRoleRules.set(name, role.rules ?? []);
  }
  const roleRules = new Map<string, readonly V1PolicyRule[]>();
  for (const role of cluster.roles) {
    const key = `${role.metadata?.namespace}/${role.metadata?.name}`;
    if (!roleRules.has(key)) roleRules.set(key, role.rules ?? []);
  }
  const clusterBindingsBySubject = new Map<string, number[]>();
  cluster.clusterRoleBindings.forEach((binding, i) => {
    for (const subject of binding.subjects ?? []) {
      const key = subjectKey(subject, '');
      if (key !== undefined) addPosition(clusterBindingsBySubject, key, i);
    }
  });
  const roleBindingsBySubject = new Map<string, Map<string, number[]>>();
  cluster.roleBindings.forEach((binding, i) => {
    const namespace = binding.metadata?.namespace ?? 'default';
    let bySubject = roleBindingsBySubject.get(namespace);
    if (bySubject === undefined) roleBindingsBySubject.set(namespace, (bySubject = new Map()));
    for (const subject of binding.subjects ?? []) {
      const key = subjectKey(subject, namespace);
      if (key !== undefined) addPosition(bySubject, key, i);
    }
  });
  return { clusterRoleRules, roleRules, clusterBindingsBySubject, roleBindingsBySubject };
}

/** The positions of the bindings naming any of `keys`, in binding order, each once. */
function candidates(bySubject: ReadonlyMap<string, readonly number[]> | undefined, keys: readonly string[]): number[] {
  if (bySubject === undefined) return [];
  const positions = new Set<number>();
  for (const key of keys) for (const position of bySubject.get(key) ?? []) positions.add(position);
  return [...positions].sort((a, b) => a - b);
}

/** Authorize: system:masters is allowed everything; otherwise the first binding whose role allows it. */
export function authorize(cluster: ClusterSnapshot, user: UserInfo, attrs: ResourceAttributes): Decision {
  if (user.groups.includes('system:masters')) return { allowed: true, reason: 'member of system:masters' };
  const index = rbacIndex(cluster);
  const keys = userKeys(user);
  // A binding to a role that does not exist grants nothing (RBAC allows dangling references).
  const clusterRoleRules = (name: string): readonly V1PolicyRule[] => index.clusterRoleRules.get(name) ?? [];

  for (const position of candidates(index.clusterBindingsBySubject, keys)) {
    const binding = cluster.clusterRoleBindings[position]!;
    if (binding.roleRef.kind !== 'ClusterRole') continue;
    const rules = clusterRoleRules(binding.roleRef.name);
    if (rules.some((rule) => ruleAllows(rule, attrs))) {
      return { allowed: true, reason: `RBAC: allowed by ClusterRoleBinding "${binding.metadata?.name}" of ClusterRole "${binding.roleRef.name}" to ${describeUser(user)}` };
    }
  }

  if (attrs.namespace !== '') {
    const namespace = attrs.namespace;
    for (const position of candidates(index.roleBindingsBySubject.get(namespace), keys)) {
      const binding = cluster.roleBindings[position]!;
      const rules =
        binding.roleRef.kind === 'ClusterRole' ? clusterRoleRules(binding.roleRef.name) : (index.roleRules.get(`${namespace}/${binding.roleRef.name}`) ?? []);
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
