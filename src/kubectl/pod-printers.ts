/**
 * What `kubelet get`, `describe` and `run` print, in kubectl's shapes: the `get pods` table
 * (tabwriter columns, three spaces apart), the Pod object for `-o yaml|json`, the `describe`
 * text with its Events table, and the error lines kubectl prints for API refusals
 * (`Error from server (Forbidden): error when creating "f": …`, `The Pod "x" is invalid: …`).
 */
import type { V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { AdmissionError } from '../apiserver/admission.js';
import { gmsaWebhookName } from '../apiserver/gmsa-designs.js';
import { formatFieldError } from '../apiserver/field-errors.js';
import type { ManifestError } from '../apiserver/manifests.js';
import type { RecordedEvent } from '../kubelet/pod-records.js';
import { effectiveProbe } from '../kubelet/probes.js';
import { humanDuration, type ContainerStateView, type ContainerStatusView, type PodRow, type PodStatusView } from '../kubelet/pod-status.js';

/**
 * Left-aligned columns, each padded to its widest cell plus `gap` spaces, no trailing spaces, a
 * newline after every line. Three spaces is kubectl's tabwriter (`get`, `describe`); the demo's
 * table uses two.
 */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[], gap = 3): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]! + gap)))
      .join('')
      .trimEnd();
  return `${[header, ...rows].map(line).join('\n')}\n`;
}

export interface TableRow extends PodRow {
  /** RFC 3339: when the pod started (AGE). */
  readonly startTime?: string;
  readonly nodeName?: string;
}

export interface TableOptions {
  readonly wide?: boolean;
  /** Show the NAMESPACE column; default: when the rows span more than one namespace. */
  readonly namespaceColumn?: boolean;
  readonly now?: number;
}

/** `kubectl get pods`: NAMESPACE? NAME READY STATUS RESTARTS AGE, and IP NODE with -o wide. */
export function formatPodTable(rows: readonly TableRow[], options: TableOptions = {}): string {
  if (rows.length === 0) return 'No resources found\n';
  const now = options.now ?? Date.now();
  const withNamespace = options.namespaceColumn ?? new Set(rows.map((r) => r.namespace)).size > 1;
  const age = (t: string | undefined) => (t === undefined ? '<unknown>' : humanDuration(now - Date.parse(t)));
  const header = [...(withNamespace ? ['NAMESPACE'] : []), 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', ...(options.wide ? ['IP', 'NODE'] : [])];
  const cells = rows.map((r) => [
    ...(withNamespace ? [r.namespace] : []),
    r.name,
    r.ready,
    r.status,
    r.lastRestart === undefined ? String(r.restarts) : `${r.restarts} (${age(r.lastRestart)} ago)`,
    age(r.startTime),
    ...(options.wide ? [r.podIP || '<none>', r.nodeName || '<none>'] : []),
  ]);
  return formatTable(header, cells);
}

/** The Pod object `-o yaml|json` prints: the admitted spec and the computed status. */
export function podObject(pod: V1Pod, status: PodStatusView, nodeName?: string): Record<string, unknown> {
  const metadata = { ...pod.metadata, ...(status.startTime === undefined ? {} : { creationTimestamp: status.startTime }) };
  const spec = { ...pod.spec, ...(nodeName === undefined ? {} : { nodeName }) };
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec, status };
}

/** One object as yaml or json; several as a `List`, like `kubectl get -o yaml`. */
export function formatObjects(objects: readonly Record<string, unknown>[], format: 'yaml' | 'json', single: boolean): string {
  const value = single && objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects, metadata: { resourceVersion: '' } };
  return format === 'json' ? `${JSON.stringify(value, null, 4)}\n` : stringify(value, { lineWidth: 0 });
}

// ---- describe ----

const orNone = (map: Record<string, string> | undefined, indent: string): string => {
  const entries = Object.entries(map ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return '<none>';
  return entries.map(([k, v], i) => `${i === 0 ? '' : indent}${k}=${v}`).join('\n');
};

/** A time as describe prints it: Go's RFC1123Z in UTC. */
function describeTime(t: string | undefined): string {
  if (t === undefined) return '<unset>';
  const d = new Date(t);
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const p = (n: number) => String(n).padStart(2, '0');
  return `${days[d.getUTCDay()]}, ${p(d.getUTCDate())} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

function describeState(label: string, state: ContainerStateView, out: string[]): void {
  const pad = (s: string) => `    ${s.padEnd(16)}`;
  if (state.running !== undefined) {
    out.push(`${pad(`${label}:`)}Running`, `      Started:      ${describeTime(state.running.startedAt)}`);
  } else if (state.waiting !== undefined) {
    out.push(`${pad(`${label}:`)}Waiting`, `      Reason:       ${state.waiting.reason}`);
    if (state.waiting.message) out.push(`      Message:      ${state.waiting.message}`);
  } else if (state.terminated !== undefined) {
    out.push(`${pad(`${label}:`)}Terminated`, `      Reason:       ${state.terminated.reason}`);
    if (state.terminated.message) out.push(`      Message:      ${state.terminated.message}`);
    out.push(`      Exit Code:    ${state.terminated.exitCode}`, `      Started:      ${describeTime(state.terminated.startedAt)}`, `      Finished:     ${describeTime(state.terminated.finishedAt)}`);
  } else if (label === 'State') {
    out.push(`${pad(`${label}:`)}Waiting`);
  }
}

function describeContainers(title: string, containers: readonly V1Container[], statuses: readonly ContainerStatusView[], out: string[]): void {
  if (containers.length === 0) return;
  out.push(`${title}:`);
  for (const c of containers) {
    const s = statuses.find((x) => x.name === c.name);
    out.push(`  ${c.name}:`);
    out.push(`    Container ID:   ${s?.containerID ?? ''}`);
    out.push(`    Image:          ${c.image ?? ''}`);
    out.push(`    Image ID:       ${s?.imageID ?? ''}`);
    if (c.command !== undefined && c.command.length > 0) out.push('    Command:', ...c.command.map((a) => `      ${a}`));
    if (c.args !== undefined && c.args.length > 0) out.push('    Args:', ...c.args.map((a) => `      ${a}`));
    if (s !== undefined) {
      describeState('State', s.state, out);
      describeState('Last State', s.lastState, out);
      out.push(`    Ready:          ${s.ready ? 'True' : 'False'}`, `    Restart Count:  ${s.restartCount}`);
    }
    for (const [label, probe] of [['Liveness', c.livenessProbe], ['Readiness', c.readinessProbe], ['Startup', c.startupProbe]] as const) {
      if (probe != null) out.push(`    ${`${label}:`.padEnd(16)}${describeProbe(probe)}`);
    }
    const windows = c.securityContext?.windowsOptions;
    if (windows?.runAsUserName !== undefined) out.push(`    Run As User:    ${windows.runAsUserName}`);
    if (windows?.gmsaCredentialSpecName !== undefined) out.push(`    GMSA:           ${windows.gmsaCredentialSpecName}`);
    const env = c.env ?? [];
    out.push(`    Environment:    ${env.length === 0 ? '<none>' : ''}`.trimEnd());
    for (const e of env) out.push(`      ${e.name}:  ${e.value ?? (e.valueFrom === undefined ? '' : '<set from a reference>')}`);
  }
}

/** kubectl describe.go DescribeProbe (v0.34.12), with the API defaults a stored pod would carry. */
export function describeProbe(spec: V1Probe): string {
  const p = effectiveProbe(spec);
  const attrs = `delay=${p.initialDelaySeconds}s timeout=${p.timeoutSeconds}s period=${p.periodSeconds}s #success=${p.successThreshold} #failure=${p.failureThreshold}`;
  if (spec.exec != null) return `exec [${(spec.exec.command ?? []).join(' ')}] ${attrs}`;
  if (spec.httpGet != null) {
    const get = spec.httpGet;
    const host = get.host ?? '';
    const port = String(get.port ?? '');
    const authority = port === '' ? host : `${host.includes(':') ? `[${host}]` : host}:${port}`;
    return `http-get ${(get.scheme ?? 'HTTP').toLowerCase()}://${authority}${get.path || '/'} ${attrs}`;
  }
  if (spec.tcpSocket != null) return `tcp-socket ${spec.tcpSocket.host ?? ''}:${String(spec.tcpSocket.port)} ${attrs}`;
  if (spec.grpc != null) return `grpc <pod>:${spec.grpc.port} ${spec.grpc.service ?? ''} ${attrs}`;
  return `unknown ${attrs}`;
}

/** kubectl describe's Events table; repeated events show `(xN over …)` in the age column. */
export function formatEvents(events: readonly RecordedEvent[], now: number): string[] {
  if (events.length === 0) return ['Events:                      <none>'];
  const rows = events.map((e) => {
    const last = humanDuration(now - Date.parse(e.lastTimestamp));
    const age = e.count > 1 ? `${last} (x${e.count} over ${humanDuration(now - Date.parse(e.firstTimestamp))})` : last;
    return [e.type, e.reason, age, 'kubelet', e.message];
  });
  const table = formatTable(['Type', 'Reason', 'Age', 'From', 'Message'], [['----', '------', '----', '----', '-------'], ...rows]);
  return ['Events:', ...table.trimEnd().split('\n').map((l) => `  ${l}`)];
}

export interface DescribeInput {
  readonly pod: V1Pod;
  readonly status: PodStatusView;
  readonly events: readonly RecordedEvent[];
  readonly nodeName?: string;
  readonly now?: number;
}

export function describePod({ pod, status, events, nodeName, now = Date.now() }: DescribeInput): string {
  const m = pod.metadata ?? {};
  const windows = pod.spec?.securityContext?.windowsOptions;
  const out = [
    `Name:             ${m.name ?? ''}`,
    `Namespace:        ${m.namespace ?? ''}`,
    'Priority:         0',
    `Service Account:  ${pod.spec?.serviceAccountName ?? 'default'}`,
    `Node:             ${nodeName ?? '<none>'}`,
    `Start Time:       ${describeTime(status.startTime)}`,
    `Labels:           ${orNone(m.labels, '                  ')}`,
    `Annotations:      ${orNone(m.annotations, '                  ')}`,
    `Status:           ${status.phase}`,
    `IP:               ${status.podIP ?? ''}`,
  ];
  if (windows?.runAsUserName !== undefined) out.push(`Run As User:      ${windows.runAsUserName}`);
  if (windows?.gmsaCredentialSpecName !== undefined) out.push(`GMSA:             ${windows.gmsaCredentialSpecName}`);
  describeContainers('Init Containers', pod.spec?.initContainers ?? [], status.initContainerStatuses ?? [], out);
  describeContainers('Containers', pod.spec?.containers ?? [], status.containerStatuses, out);
  out.push('Conditions:', '  Type                        Status', ...status.conditions.map((c) => `  ${c.type.padEnd(28)}${c.status}`));
  out.push(`QoS Class:        BestEffort`, `Node-Selectors:   ${orNone(pod.spec?.nodeSelector, '                  ')}`);
  out.push(...formatEvents(events, now));
  return `${out.join('\n')}\n`;
}

// ---- API errors, as kubectl prints them ----

const httpReasons: Record<number, string> = {
  400: 'BadRequest',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'AlreadyExists',
  417: 'ExpectationFailed',
  422: 'Invalid',
  500: 'InternalError',
};

/**
 * An admission refusal for `kubectl create -f FILE`. The apiserver wraps a webhook's denial
 * without a reason (webhook errors.ToStatusErr), so kubectl prints `Error from server: …`; the
 * in-tree plugins answer with a reason and, for Forbidden, the `pods "x" is forbidden: ` prefix.
 */
export function admissionErrorText(error: AdmissionError, podName: string, file: string, operation: 'create' | 'update' = 'create'): string {
  // kubectl apply says `error when applying patch:` followed by the patch and the object; the
  // patch and object are left out here.
  const when = operation === 'update' ? `error when applying patch to ${JSON.stringify(file)}` : `error when creating ${JSON.stringify(file)}`;
  if (error.by === 'gmsa-webhook') {
    return `Error from server: ${when}: admission webhook ${JSON.stringify(gmsaWebhookName)} denied the request: ${error.message}`;
  }
  const reason = httpReasons[error.code] ?? 'InternalError';
  const forbiddenPrefix = `pods ${JSON.stringify(podName)} is forbidden: `;
  const message = error.code === 403 && !error.message.startsWith(forbiddenPrefix) ? `${forbiddenPrefix}${error.message}` : error.message;
  return `Error from server (${reason}): ${when}: ${message}`;
}

/** `pods "x" already exists`, for a pod the node runs already. */
export function alreadyExistsText(podName: string, file: string): string {
  return `Error from server (AlreadyExists): error when creating ${JSON.stringify(file)}: pods ${JSON.stringify(podName)} already exists`;
}

/**
 * Manifest errors, one line per error with file and document; API validation failures of a
 * named object are grouped as kubectl prints them (`The Pod "x" is invalid: a` or, for several,
 * `The Pod "x" is invalid: \n* a\n* b`).
 */
export function manifestErrorTexts(errors: readonly Error[]): string[] {
  const lines: string[] = [];
  const groups = new Map<string, { head: string; kind: string; name: string; fields: string[] }>();
  for (const err of errors) {
    const m = err as Partial<ManifestError>;
    if (m.invalidObject !== undefined && m.source !== undefined && m.field !== undefined) {
      const key = `${m.source.file}#${m.source.document}`;
      const group = groups.get(key) ?? { head: `${m.source.file}: document ${m.source.document}`, kind: m.invalidObject.kind, name: m.invalidObject.name, fields: [] };
      // kubectl prints a repeated cause once (statusCausesToAggrError): ValidatePodUpdate reports
      // an invalid new toleration twice.
      const text = formatFieldError(m.field);
      if (!group.fields.includes(text)) group.fields.push(text);
      if (!groups.has(key)) {
        groups.set(key, group);
        lines.push(key); // placeholder, replaced below to keep the order of first appearance
      }
      continue;
    }
    lines.push(`error: ${err.message}`);
  }
  return lines.map((line) => {
    const group = groups.get(line);
    if (group === undefined) return line;
    const body = group.fields.length === 1 ? group.fields[0]! : `\n${group.fields.map((f) => `* ${f}`).join('\n')}`;
    return `error: ${group.head}: The ${group.kind} ${JSON.stringify(group.name)} is invalid: ${body}`;
  });
}
