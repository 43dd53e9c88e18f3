/**
 * API validation of a pod as the API server does it before anything reaches a node
 * (kubernetes pkg/apis/core/validation): the identity fields, container names and images, and the
 * Windows rules (windowsOptions, hostProcess) with their upstream messages and order.
 */
import type { V1Container, V1Pod, V1PodSpec, V1Probe, V1Toleration, V1WindowsSecurityContextOptions } from '@kubernetes/client-node';
import { child, duplicate, forbidden, index, invalid, notSupported, required, type FieldError } from './field-errors.js';

// apimachinery's RegexError shape, quirks included ("'my-name',  or '123-abc'").
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e, i) => `${i > 0 ? ' or ' : ''}'${e}', `).join('')}regex used for validation is '${fmt}')`;
}

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123Label = new RegExp(`^${dns1123LabelFmt}$`);
const dns1123Subdomain = new RegExp(`^${dns1123SubdomainFmt}$`);

export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push('must be no more than 253 characters');
  if (!dns1123Subdomain.test(value)) {
    errs.push(
      regexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        dns1123SubdomainFmt,
        'example.com',
      ),
    );
  }
  return errs;
}

export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!dns1123Label.test(value)) {
    errs.push(
      regexError(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        dns1123LabelFmt,
        'my-name',
        '123-abc',
      ),
    );
  }
  return errs;
}

// apimachinery v0.34.12 pkg/util/validation/validation.go: qualified names (label keys) and label values.
const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const qualifiedName = new RegExp(`^${qualifiedNameFmt}$`);
const labelValueFmt = `(${qualifiedNameFmt})?`;
const labelValue = new RegExp(`^${labelValueFmt}$`);

/** IsQualifiedName: `[prefix/]name`, the prefix a DNS subdomain, the name at most 63 characters. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDNS1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [`a qualified name ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (!qualifiedName.test(name)) errs.push(`name part ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

/** IsValidLabelValue: empty, or a qualified name part of at most 63 characters. */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!labelValue.test(value)) {
    errs.push(regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", labelValueFmt, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

/**
 * ValidateTolerations (kubernetes v1.34.12 pkg/apis/core/validation/validation.go): key a label
 * name, an empty key only with Exists, tolerationSeconds only with NoExecute, the value per
 * operator (Equal or empty: a label value; Exists: empty), a known effect.
 */
export function validateTolerations(tolerations: readonly V1Toleration[], path: string): FieldError[] {
  const errs: FieldError[] = [];
  tolerations.forEach((t, i) => {
    const at = index(path, i);
    const key = t.key ?? '';
    const operator = t.operator ?? '';
    const value = t.value ?? '';
    const effect = t.effect ?? '';
    if (key.length > 0) errs.push(...isQualifiedName(key).map((m) => invalid(child(at, 'key'), key, m)));
    if (key.length === 0 && operator !== 'Exists') {
      errs.push(invalid(child(at, 'operator'), operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    }
    if (t.tolerationSeconds !== undefined && t.tolerationSeconds !== null && effect !== 'NoExecute') {
      errs.push(invalid(child(at, 'effect'), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (operator === 'Equal' || operator === '') {
      const msgs = isValidLabelValue(value);
      if (msgs.length > 0) errs.push(invalid(child(at, 'operator'), value, msgs.join(';')));
    } else if (operator === 'Exists') {
      if (value.length > 0) errs.push(invalid(child(at, 'operator'), value, "value must be empty when `operator` is 'Exists'"));
    } else {
      errs.push(notSupported(child(at, 'operator'), operator, ['Equal', 'Exists']));
    }
    if (effect.length > 0 && !['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(effect)) {
      errs.push(notSupported(child(at, 'effect'), effect, ['NoSchedule', 'PreferNoSchedule', 'NoExecute']));
    }
  });
  return errs;
}

// Limits and patterns of validateWindowsSecurityContextOptions. Lengths are in bytes, as Go's len().
const maxGMSACredentialSpecLengthInKiB = 64;
const maxGMSACredentialSpecLength = maxGMSACredentialSpecLengthInKiB * 1024;
const maxRunAsUserNameDomainLength = 256;
const maxRunAsUserNameUserLength = 104;
// Go's [[:cntrl:]] is ASCII control characters only.
// eslint-disable-next-line no-control-regex -- control characters are what this matches
const controlCharacters = /[\x00-\x1f\x7f]/;
// NetBIOS: 1 to 15 characters, not starting with a dot, none of \ / : * ? " < > |
const netBiosDomain = /^[^\\/:*?"<>|.][^\\/:*?"<>|]{0,14}$/u;
const dnsLabelFormat = '[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?';
const dnsDomain = new RegExp(`^${dnsLabelFormat}(?:\\.${dnsLabelFormat})*$`);
const invalidUserNameCharacters = /["/\\:;|=,+*?<>@[\]]/;
const onlyDotsOrSpaces = /^[. ]+$/;

const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8');

/** validateWindowsSecurityContextOptions: every message, in upstream order. */
export function validateWindowsOptions(options: V1WindowsSecurityContextOptions | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (options === undefined || options === null) return errs;

  if (options.gmsaCredentialSpecName !== undefined) {
    for (const msg of isDNS1123Subdomain(options.gmsaCredentialSpecName)) {
      errs.push(invalid(child(path, 'gmsaCredentialSpecName'), options.gmsaCredentialSpecName, msg));
    }
  }

  if (options.gmsaCredentialSpec !== undefined) {
    const specPath = child(path, 'gmsaCredentialSpec');
    const length = byteLength(options.gmsaCredentialSpec);
    if (length === 0) {
      errs.push(invalid(specPath, options.gmsaCredentialSpec, 'gmsaCredentialSpec cannot be an empty string'));
    } else if (length > maxGMSACredentialSpecLength) {
      errs.push(invalid(specPath, options.gmsaCredentialSpec, `gmsaCredentialSpec size must be under ${maxGMSACredentialSpecLengthInKiB} KiB`));
    }
  }

  if (options.runAsUserName !== undefined) {
    errs.push(...validateRunAsUserName(options.runAsUserName, child(path, 'runAsUserName')));
  }
  return errs;
}

function validateRunAsUserName(userName: string, path: string): FieldError[] {
  const fail = (msg: string): FieldError => invalid(path, userName, msg);
  // The first three stop further checks.
  if (byteLength(userName) === 0) return [fail('runAsUserName cannot be an empty string')];
  if (controlCharacters.test(userName)) return [fail('runAsUserName cannot contain control characters')];
  const parts = userName.split('\\');
  if (parts.length > 2) return [fail('runAsUserName cannot contain more than one backslash')];

  const errs: FieldError[] = [];
  const hasDomain = parts.length === 2;
  const domain = hasDomain ? parts[0]! : '';
  const user = hasDomain ? parts[1]! : parts[0]!;

  if (byteLength(domain) >= maxRunAsUserNameDomainLength) {
    errs.push(fail(`runAsUserName's Domain length must be under ${maxRunAsUserNameDomainLength} characters`));
  }
  if (hasDomain && !(netBiosDomain.test(domain) || dnsDomain.test(domain))) {
    errs.push(fail("runAsUserName's Domain doesn't match the NetBios nor the DNS format"));
  }
  const userLength = byteLength(user);
  if (userLength === 0) {
    errs.push(fail("runAsUserName's User cannot be empty"));
  } else if (userLength > maxRunAsUserNameUserLength) {
    errs.push(fail(`runAsUserName's User length must not be longer than ${maxRunAsUserNameUserLength} characters`));
  }
  if (onlyDotsOrSpaces.test(user)) {
    errs.push(fail("runAsUserName's User cannot contain only periods or spaces"));
  }
  if (invalidUserNameCharacters.test(user)) {
    errs.push(fail(`runAsUserName's User cannot contain the following characters: "/\\:;|=,+*?<>@[]`));
  }
  return errs;
}

export interface PodValidationOptions {
  /** The API server's --allow-privileged; HostProcess pods are refused without it. */
  readonly allowPrivileged: boolean;
}

export const defaultPodValidationOptions: PodValidationOptions = { allowPrivileged: true };

interface VisitedContainer {
  readonly container: V1Container;
  readonly path: string;
}

/** Init containers, then containers, then ephemeral containers, as VisitContainersWithPath. */
export function containersWithPaths(spec: V1PodSpec, specPath = 'spec'): VisitedContainer[] {
  const visited: VisitedContainer[] = [];
  (spec.initContainers ?? []).forEach((c, i) => visited.push({ container: c, path: index(child(specPath, 'initContainers'), i) }));
  (spec.containers ?? []).forEach((c, i) => visited.push({ container: c, path: index(child(specPath, 'containers'), i) }));
  (spec.ephemeralContainers ?? []).forEach((c, i) =>
    visited.push({ container: c as V1Container, path: index(child(specPath, 'ephemeralContainers'), i) }),
  );
  return visited;
}

/** validateWindowsHostProcessPod. */
export function validateWindowsHostProcessPod(spec: V1PodSpec, path: string, options: PodValidationOptions): FieldError[] {
  const errs: FieldError[] = [];
  const podHostProcess = spec.securityContext?.windowsOptions?.hostProcess;
  const hostNetwork = spec.hostNetwork === true;
  let containerCount = 0;
  let hostProcessCount = 0;

  for (const { container, path: containerPath } of containersWithPaths(spec, path)) {
    containerCount++;
    const containerHostProcess = container.securityContext?.windowsOptions?.hostProcess;
    if (podHostProcess !== undefined && containerHostProcess !== undefined && podHostProcess !== containerHostProcess) {
      errs.push(
        invalid(
          child(containerPath, 'securityContext', 'windowsOptions', 'hostProcess'),
          containerHostProcess,
          `pod hostProcess value must be identical if both are specified, was ${podHostProcess}`,
        ),
      );
    }
    if (containerHostProcess === true || (containerHostProcess === undefined && podHostProcess === true)) hostProcessCount++;
  }

  if (hostProcessCount > 0) {
    if (hostProcessCount !== containerCount) {
      errs.push(invalid(path, '', 'If pod contains any hostProcess containers then all containers must be HostProcess containers'));
    }
    if (!hostNetwork) {
      errs.push(invalid(child(path, 'hostNetwork'), hostNetwork, 'hostNetwork must be true if pod contains any hostProcess containers'));
    }
    if (!options.allowPrivileged) {
      errs.push(forbidden(path, 'hostProcess containers are disallowed by cluster policy'));
    }
  }
  return errs;
}

const httpHeaderNameFmt = '[-A-Za-z0-9]+';
const probeKinds = [['livenessProbe', 'Liveness'], ['readinessProbe', 'Readiness'], ['startupProbe', 'Startup']] as const;

/** ValidatePortNumOrName (validation.go, kubernetes v1.34.12; IsValidPortNum, IsValidPortName of apimachinery). */
function validatePortNumOrName(port: number | string | undefined, path: string): FieldError[] {
  if (typeof port === 'number') return Number.isInteger(port) && port >= 1 && port <= 65535 ? [] : [invalid(path, port, 'must be between 1 and 65535, inclusive')];
  if (typeof port !== 'string') return [required(path)];
  const errs: FieldError[] = [];
  if (port.length > 15) errs.push(invalid(path, port, 'must be no more than 15 characters'));
  if (!/^[-a-z0-9]+$/.test(port)) errs.push(invalid(path, port, 'must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'));
  if (!/[a-z]/.test(port)) errs.push(invalid(path, port, 'must contain at least one letter (a-z)'));
  if (port.includes('--')) errs.push(invalid(path, port, 'must not contain consecutive hyphens'));
  if (port.startsWith('-') || port.endsWith('-')) errs.push(invalid(path, port, 'must not begin or end with a hyphen'));
  return errs;
}

/**
 * validateProbe and validateHandler, with validateLivenessProbe/validateStartupProbe's
 * successThreshold and validateReadinessProbe's terminationGracePeriodSeconds rules (validation.go,
 * kubernetes v1.34.12). The API server defaults a probe before validating it (SetDefaults_Probe,
 * SetDefaults_HTTPGetAction); a pod from a file is not defaulted, so unset fields count as their
 * defaults here.
 */
export function validateProbe(probe: V1Probe, kind: 'Liveness' | 'Readiness' | 'Startup', path: string): FieldError[] {
  const errs: FieldError[] = [];
  let handlers = 0;
  const handler = (name: 'exec' | 'httpGet' | 'tcpSocket' | 'grpc', validate: () => FieldError[]): void => {
    if (probe[name] == null) return;
    if (handlers++ > 0) errs.push(forbidden(child(path, name), 'may not specify more than 1 handler type'));
    else errs.push(...validate());
  };
  handler('exec', () => ((probe.exec!.command ?? []).length === 0 ? [required(child(path, 'exec', 'command'))] : []));
  handler('httpGet', () => {
    const get = probe.httpGet!;
    const getPath = child(path, 'httpGet');
    const out: FieldError[] = [];
    if (get.path === '') out.push(required(child(getPath, 'path')));
    out.push(...validatePortNumOrName(get.port, child(getPath, 'port')));
    const scheme = get.scheme ?? 'HTTP';
    if (scheme !== 'HTTP' && scheme !== 'HTTPS') out.push(notSupported(child(getPath, 'scheme'), scheme, ['HTTP', 'HTTPS']));
    for (const header of get.httpHeaders ?? []) {
      if (!new RegExp(`^${httpHeaderNameFmt}$`).test(header.name)) {
        out.push(invalid(child(getPath, 'httpHeaders'), header.name, regexError("a valid HTTP header must consist of alphanumeric characters or '-'", httpHeaderNameFmt, 'X-Header-Name')));
      }
    }
    return out;
  });
  handler('tcpSocket', () => validatePortNumOrName(probe.tcpSocket!.port, child(path, 'tcpSocket', 'port')));
  handler('grpc', () => validatePortNumOrName(probe.grpc!.port, child(path, 'grpc', 'port')));
  if (handlers === 0) errs.push(required(path, 'must specify a handler type'));
  for (const field of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold'] as const) {
    const value = probe[field];
    if (value != null && value < 0) errs.push(invalid(child(path, field), value, 'must be greater than or equal to 0'));
  }
  const grace = probe.terminationGracePeriodSeconds;
  if (grace != null && grace <= 0) errs.push(invalid(child(path, 'terminationGracePeriodSeconds'), grace, 'must be greater than 0'));
  if (kind !== 'Readiness' && (probe.successThreshold ?? 1) !== 1) errs.push(invalid(child(path, 'successThreshold'), probe.successThreshold, 'must be 1'));
  if (kind === 'Readiness' && grace != null) errs.push(invalid(child(path, 'terminationGracePeriodSeconds'), grace, 'must not be set for readinessProbes'));
  return errs;
}

/** Probes of a container: validated on regular containers and sidecars, forbidden on other init containers. */
function validateContainerProbes(container: V1Container, path: string, init: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const sidecar = init && container.restartPolicy === 'Always';
  for (const [field, kind] of probeKinds) {
    const probe = container[field];
    if (probe == null) continue;
    if (init && !sidecar) errs.push(forbidden(child(path, field), 'may not be set for init containers without restartPolicy=Always'));
    else errs.push(...validateProbe(probe, kind, child(path, field)));
  }
  return errs;
}

function validateContainerList(containers: readonly V1Container[], path: string, seen: Set<string>): FieldError[] {
  const errs: FieldError[] = [];
  containers.forEach((container, i) => {
    const containerPath = index(path, i);
    const namePath = child(containerPath, 'name');
    if (container.name === undefined || container.name === '') {
      errs.push(required(namePath));
    } else {
      for (const msg of isDNS1123Label(container.name)) errs.push(invalid(namePath, container.name, msg));
      if (seen.has(container.name)) errs.push(duplicate(namePath, container.name));
      seen.add(container.name);
    }
    if (container.image === undefined || container.image.trim() === '') errs.push(required(child(containerPath, 'image')));
    errs.push(...validateWindowsOptions(container.securityContext?.windowsOptions, child(containerPath, 'securityContext', 'windowsOptions')));
    if (path !== 'spec.ephemeralContainers') errs.push(...validateContainerProbes(container, containerPath, path === 'spec.initContainers'));
  });
  return errs;
}

/**
 * ValidatePod, reduced to what a Windows node's pod path depends on: metadata identity, container
 * names and images, probes, windowsOptions at every level, the HostProcess rules and tolerations.
 */
export function validatePod(pod: V1Pod, options: PodValidationOptions = defaultPodValidationOptions): FieldError[] {
  const errs: FieldError[] = [];
  const name = pod.metadata?.name;
  if (name === undefined || name === '') {
    errs.push(required('metadata.name', 'name or generateName is required'));
  } else {
    for (const msg of isDNS1123Subdomain(name)) errs.push(invalid('metadata.name', name, msg));
  }
  const namespace = pod.metadata?.namespace;
  if (namespace !== undefined && namespace !== '') {
    for (const msg of isDNS1123Label(namespace)) errs.push(invalid('metadata.namespace', namespace, msg));
  }

  const spec: V1PodSpec = pod.spec ?? { containers: [] };
  const seen = new Set<string>();
  if ((spec.containers ?? []).length === 0) errs.push(required('spec.containers'));
  errs.push(...validateContainerList(spec.containers ?? [], 'spec.containers', seen));
  errs.push(...validateContainerList(spec.initContainers ?? [], 'spec.initContainers', seen));
  errs.push(...validateContainerList(spec.ephemeralContainers ?? [], 'spec.ephemeralContainers', seen));
  if (spec.serviceAccountName !== undefined && spec.serviceAccountName !== '') {
    for (const msg of isDNS1123Subdomain(spec.serviceAccountName)) errs.push(invalid('spec.serviceAccountName', spec.serviceAccountName, msg));
  }
  errs.push(...validateWindowsOptions(spec.securityContext?.windowsOptions, 'spec.securityContext.windowsOptions'));
  errs.push(...validateWindowsHostProcessPod(spec, 'spec', options));
  errs.push(...validateTolerations(spec.tolerations ?? [], 'spec.tolerations'));
  errs.push(...validatePodOS(spec, 'spec'));
  // ValidatePodCreate: ephemeral containers only through the ephemeralcontainers subresource.
  if ((spec.ephemeralContainers ?? []).length > 0) errs.push(forbidden('spec.ephemeralContainers', 'cannot be set on create'));
  return errs;
}

const validOSNames = ['linux', 'windows'] as const;
const notForWindows = 'cannot be set for a windows pod';
const notForLinux = 'windows options cannot be set for a linux pod';

/**
 * validateOS, then validateLinux or validateWindows (pkg/apis/core/validation/validation.go,
 * kubernetes v1.34.12): a pod that declares `spec.os.name` may not carry the other OS's fields.
 * The host namespace fields live on the spec in v1 and in the internal PodSecurityContext, which
 * the conversion always allocates, so they are checked whether or not a securityContext is given.
 */
export function validatePodOS(spec: V1PodSpec, specPath: string): FieldError[] {
  const os = spec.os;
  if (os == null) return [];
  const osPath = child(specPath, 'os');
  if (os.name == null || os.name === '') return [required(child(osPath, 'name'), 'cannot be empty')];
  if (!(validOSNames as readonly string[]).includes(os.name)) return [notSupported(osPath, os.name, validOSNames)];

  const errs: FieldError[] = [];
  const podContext = spec.securityContext ?? undefined;
  const podContextPath = child(specPath, 'securityContext');
  const containers = containersWithPaths(spec, specPath);
  if (os.name === 'linux') {
    if (podContext?.windowsOptions != null) errs.push(forbidden(child(podContextPath, 'windowsOptions'), notForLinux));
    for (const { container, path } of containers) {
      if (container.securityContext?.windowsOptions !== undefined) errs.push(forbidden(child(path, 'securityContext', 'windowsOptions'), notForLinux));
    }
    return errs;
  }

  const set = (value: unknown): boolean => value != null;
  const podChecks: Array<[boolean, string]> = [
    [set(podContext?.appArmorProfile), child(podContextPath, 'appArmorProfile')],
    [set(podContext?.seLinuxOptions), child(podContextPath, 'seLinuxOptions')],
    [set(spec.hostUsers), child(specPath, 'hostUsers')],
    [spec.hostPID === true, child(specPath, 'hostPID')],
    [spec.hostIPC === true, child(specPath, 'hostIPC')],
    [set(podContext?.seccompProfile), child(podContextPath, 'seccompProfile')],
    [set(podContext?.fsGroup), child(podContextPath, 'fsGroup')],
    [set(podContext?.fsGroupChangePolicy), child(podContextPath, 'fsGroupChangePolicy')],
    [(podContext?.sysctls ?? []).length > 0, child(podContextPath, 'sysctls')],
    [set(spec.shareProcessNamespace), child(specPath, 'shareProcessNamespace')],
    [set(podContext?.runAsUser), child(podContextPath, 'runAsUser')],
    [set(podContext?.runAsGroup), child(podContextPath, 'runAsGroup')],
    [set(podContext?.supplementalGroups), child(podContextPath, 'supplementalGroups')],
    [set(podContext?.supplementalGroupsPolicy), child(podContextPath, 'supplementalGroupsPolicy')],
    [set(podContext?.seLinuxChangePolicy), child(podContextPath, 'seLinuxChangePolicy')],
  ];
  for (const [isSet, path] of podChecks) if (isSet) errs.push(forbidden(path, notForWindows));
  for (const { container, path } of containers) {
    const sc = container.securityContext;
    if (sc == null) continue;
    const scPath = child(path, 'securityContext');
    const fields = ['appArmorProfile', 'seLinuxOptions', 'seccompProfile', 'capabilities', 'readOnlyRootFilesystem', 'privileged', 'allowPrivilegeEscalation', 'procMount', 'runAsUser', 'runAsGroup'] as const;
    for (const f of fields) if (sc[f] != null) errs.push(forbidden(child(scPath, f), notForWindows));
  }
  return errs;
}
