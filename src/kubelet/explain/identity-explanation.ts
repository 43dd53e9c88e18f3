/**
 * `cri-winsim explain`: the path of a pod's credential spec, hop by hop, from the records each hop
 * left — the API server's GMSA admission (gmsa-admission-record.ts), the admitted pod, the
 * kubelet's effective security context and CRI config per container (security-context.ts, kept in
 * the pod's record), and the runtime's own records through its Identity service (the hand-off, the
 * HCS document, how the start went, the domain's answers: src/runtime/identity-explain.ts). Nothing
 * is decided again here: each hop's verdict is read from what the hop recorded, and the first hop
 * that broke is named with the section of docs/failure-modes.md that explains it.
 *
 * The shape is stable for machines (`-o json`); the words in `received`, `changed` and `detail`
 * are cri-winsim's own.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { GmsaAdmissionRecord } from '../../apiserver/gmsa-admission-record.js';
import type { ExplainContainerResponse__Output } from '../../generated/criwinsim/identity/v1/ExplainContainerResponse.js';
import type { ContainerRecord } from '../pod-records.js';

export const EXPLANATION_API_VERSION = 'criwinsim.io/v1';
export const EXPLANATION_KIND = 'IdentityExplanation';

/** The hops in the order the credential spec travels them. */
export const HOPS = [
  'credential-spec-source',
  'admission',
  'pod-spec',
  'effective-security-context',
  'cri-config',
  'hand-off',
  'hcs-document',
  'domain',
] as const;
export type HopName = (typeof HOPS)[number];

/**
 * ok: the hop did its part; broken: it failed or lost the credential spec; none: there was no
 * credential spec for it to carry (not an error by itself); not-reached: an earlier step stopped;
 * unknown: the hop left no record this explanation can read.
 */
export type Verdict = 'ok' | 'broken' | 'none' | 'not-reached' | 'unknown';

export interface Hop {
  readonly hop: HopName;
  readonly received: string;
  readonly changed: string;
  readonly verdict: Verdict;
  readonly detail?: string;
  /** docs/failure-modes.md#… for a broken hop. */
  readonly docs?: string;
}

export interface ContainerExplanation {
  readonly name: string;
  readonly containerId?: string;
  readonly hops: readonly Hop[];
}

export interface BrokenHop {
  readonly hop: HopName;
  /** Absent for a pod-level hop. */
  readonly container?: string;
  readonly detail: string;
  readonly docs?: string;
}

export interface IdentityExplanation {
  readonly apiVersion: typeof EXPLANATION_API_VERSION;
  readonly kind: typeof EXPLANATION_KIND;
  readonly pod: { readonly namespace: string; readonly name: string; readonly uid: string };
  /** The first hop that broke, in travel order (pod hops, then each hop across the containers); absent when none did. */
  readonly broken?: BrokenHop;
  /** The pod's hops: the credential spec's source, admission, the admitted pod spec. */
  readonly hops: readonly Hop[];
  readonly containers: readonly ContainerExplanation[];
}

/** A refused pod creation, as the fake kubelet records it (the pod never existed). */
export interface AdmissionRefusal {
  readonly code: number;
  readonly by: string;
  readonly message: string;
}

/** What the explanation is made from: the records, nothing else. */
export interface ExplainInput {
  /** The pod as stored (admitted); for a refused pod, the pod as sent. */
  readonly pod: V1Pod;
  /** The pod as the user sent it, when known. */
  readonly sent?: V1Pod;
  readonly gmsaAdmission?: GmsaAdmissionRecord;
  /** Set when admission refused the pod. */
  readonly refusal?: AdmissionRefusal;
  /** The kubelet's container records by container name. */
  readonly containers: Readonly<Record<string, ContainerRecord>>;
  /** The runtime's answers by container id (an error text when the runtime could not answer). */
  readonly runtime: ReadonlyMap<string, ExplainContainerResponse__Output | { readonly error: string }>;
}

export const FAILURE_MODES_DOC = 'docs/failure-modes.md';
const docs = (anchor: string): string => `${FAILURE_MODES_DOC}#${anchor}`;

/** The failure-modes section of each identity failure reason of the runtime (container-identity.ts). */
const REASON_ANCHORS: Readonly<Record<string, string>> = {
  'node-not-domain-joined': 'node-not-domain-joined',
  'node-not-allowed': 'node-not-allowed',
  'gmsa-not-found': 'gmsa-not-found',
  'domain-unknown': 'domain-unknown',
  'domain-mismatch': 'domain-mismatch',
  'domain-controller-unreachable': 'domain-controller-unreachable',
  'ccg-plugin-failure': 'ccg-plugin-failure',
  'unknown-user': 'unknown-user',
};
const HANDOFF_ANCHOR = 'errors-of-the-credential-spec-hand-off';

const bytes = (n: number): string => `${n} bytes`;
const hop = (name: HopName, received: string, changed: string, verdict: Verdict, extra: { detail?: string; docs?: string } = {}): Hop => ({
  hop: name,
  received,
  changed,
  verdict,
  ...(extra.detail === undefined ? {} : { detail: extra.detail }),
  ...(extra.docs === undefined ? {} : { docs: extra.docs }),
});

interface GmsaSite {
  readonly where: string;
  readonly name?: string;
  readonly contentsBytes: number;
}

/** The pod's and regular containers' GMSA fields, as a pod spec carries them. */
function gmsaSites(pod: V1Pod): GmsaSite[] {
  const out: GmsaSite[] = [];
  const add = (where: string, o: { gmsaCredentialSpecName?: string; gmsaCredentialSpec?: string } | undefined): void => {
    if (o?.gmsaCredentialSpecName === undefined && o?.gmsaCredentialSpec === undefined) return;
    out.push({ where, ...(o.gmsaCredentialSpecName === undefined ? {} : { name: o.gmsaCredentialSpecName }), contentsBytes: Buffer.byteLength(o.gmsaCredentialSpec ?? '', 'utf8') });
  };
  add('pod', pod.spec?.securityContext?.windowsOptions);
  for (const c of pod.spec?.containers ?? []) add(`container ${c.name}`, c.securityContext?.windowsOptions);
  return out;
}

const describeSites = (sites: readonly GmsaSite[]): string =>
  sites.length === 0 ? 'no gMSA fields' : sites.map((s) => `${s.where}: ${s.name === undefined ? '' : `gmsaCredentialSpecName ${s.name}`}${s.name !== undefined && s.contentsBytes > 0 ? ', ' : ''}${s.contentsBytes > 0 ? `gmsaCredentialSpec ${bytes(s.contentsBytes)}` : ''}`).join('; ');

function podHops(input: ExplainInput): Hop[] {
  const sent = input.sent ?? input.pod;
  const sentSites = gmsaSites(sent);
  const admission = input.gmsaAdmission;
  const configMapAnnotation = Object.entries(sent.metadata?.annotations ?? {}).find(([k]) => /windows-gmsa-config-map$|gmsa-credential-spec-name$/.test(k));
  const references = [...sentSites.filter((s) => s.name !== undefined).map((s) => `GMSACredentialSpec/${s.name} (${s.where})`), ...(configMapAnnotation === undefined ? [] : [`${configMapAnnotation[0]}: ${configMapAnnotation[1]}`])];

  const source = references.length === 0 && sentSites.every((s) => s.contentsBytes === 0)
    ? hop('credential-spec-source', 'the pod names no GMSACredentialSpec or ConfigMap', 'nothing', 'none')
    : hop('credential-spec-source', references.length === 0 ? 'contents set in the pod itself' : references.join(', '), 'nothing', 'ok');

  if (input.refusal !== undefined) {
    const r = input.refusal;
    return [
      source,
      hop('admission', describeSites(sentSites), 'refused the pod: it was never created', 'broken', { detail: `${r.by} (${r.code}): ${r.message}` }),
      hop('pod-spec', '', '', 'not-reached'),
    ];
  }

  const admitted = gmsaSites(input.pod);
  // What the pod asked for that reached no contents: names nothing inlined, or a reference the
  // cluster's design does not read (a KEP ConfigMap annotation under the webhook, …).
  const lostNames = admitted.filter((s) => s.name !== undefined && s.contentsBytes === 0).map((s) => `${s.name} (${s.where})`);
  const nothingArrived = references.length > 0 && !admitted.some((s) => s.contentsBytes > 0);
  const lost = lostNames.length > 0 ? lostNames : nothingArrived ? references : [];
  let admissionHop: Hop;
  if (admission !== undefined) {
    const did = admission.sites.map((s) => `${s.action} ${s.resource} into ${s.kind}${s.kind === 'container' ? ` ${s.name}` : ''}`).join('; ');
    const changed = [did, admission.hostname === undefined ? '' : `set the random hostname ${admission.hostname}`].filter((s) => s !== '').join('; ') || 'nothing';
    admissionHop = lost.length > 0
      ? hop('admission', `${admission.design} design, by ${admission.by}`, changed, 'broken', {
          detail: `nothing inlined ${lost.join(', ')}: the ${admission.design} design does not read it, and the kubelet never reads a name`,
          docs: docs('no-credential-spec'),
        })
      : hop('admission', `${admission.design} design, by ${admission.by}`, changed, admission.sites.length === 0 && admitted.length === 0 ? 'none' : 'ok');
  } else {
    // Pods from an API server were admitted there: only the result is on the node.
    admissionHop = lost.length > 0
      ? hop('admission', 'admitted by the API server (its record is not on the node)', 'nothing inlined', 'broken', {
          detail: `nothing inlined ${lost.join(', ')}: is the windows-gmsa webhook installed for this design?`,
          docs: docs('no-credential-spec'),
        })
      : hop('admission', 'admitted by the API server (its record is not on the node)', admitted.some((s) => s.contentsBytes > 0) ? 'credential spec contents present' : 'nothing', admitted.length === 0 ? 'none' : 'ok');
  }
  const runAs = input.pod.spec?.securityContext?.windowsOptions?.runAsUserName;
  const specHop = hop('pod-spec', `${describeSites(admitted)}${runAs === undefined ? '' : `; pod runAsUserName ${runAs}`}`, 'nothing', admitted.some((s) => s.contentsBytes > 0) ? 'ok' : 'none');
  return [source, admissionHop, specHop];
}

type RuntimeAnswer = ExplainContainerResponse__Output | { readonly error: string } | undefined;

function containerHops(input: ExplainInput, name: string, record: ContainerRecord | undefined): Hop[] {
  const identity = record?.identity;
  const hops: Hop[] = [];
  const rest = (from: HopName, detail?: string): void => {
    for (const h of HOPS.slice(HOPS.indexOf(from))) hops.push(hop(h, '', '', 'not-reached', detail === undefined ? {} : { detail }));
  };
  // The effective security context and the CRI config: the kubelet's record of what it sent.
  if (record === undefined) {
    hops.push(hop('effective-security-context', '', '', 'unknown', { detail: 'the kubelet has no record of this container' }));
    rest('cri-config');
    return hops;
  }
  if (identity === undefined) {
    if (record.reason === 'CreateContainerConfigError') {
      hops.push(hop('effective-security-context', 'the pod and container security contexts', 'refused', 'broken', { detail: `CreateContainerConfigError: ${record.message ?? ''}` }));
      rest('cri-config');
    } else {
      hops.push(hop('effective-security-context', '', '', 'not-reached'));
      hops.push(hop('cri-config', '', 'never built', 'broken', { detail: `the container never got a CRI config: ${record.reason ?? 'not started'}${record.message === undefined ? '' : `: ${record.message}`}` }));
      rest('hand-off');
    }
    return hops;
  }
  const e = identity.effective;
  const containerSpec = input.pod.spec?.containers.find((c) => c.name === name);
  const own = containerSpec?.securityContext?.windowsOptions;
  const podOptions = input.pod.spec?.securityContext?.windowsOptions;
  const droppedPodSpec = e.credentialSpecFrom === 'container' && e.credentialSpecBytes === 0 && (podOptions?.gmsaCredentialSpec ?? '') !== '';
  const effectiveText = `credential spec from ${e.credentialSpecFrom === 'none' ? 'neither pod nor container' : `the ${e.credentialSpecFrom}`} (${bytes(e.credentialSpecBytes)}${e.gmsaCredentialSpecName === undefined ? '' : `, name ${e.gmsaCredentialSpecName}`}); runAsUserName ${e.runAsUserName ?? '(unset)'} from the ${e.runAsUserNameFrom}${e.hostProcess ? '; hostProcess' : ''}`;
  hops.push(
    droppedPodSpec
      ? hop('effective-security-context', `pod gmsaCredentialSpec ${bytes(Buffer.byteLength(podOptions?.gmsaCredentialSpec ?? '', 'utf8'))}; container gmsaCredentialSpecName ${own?.gmsaCredentialSpecName ?? ''} without contents`, effectiveText, 'broken', {
          detail: "the container names a spec without contents: the two GMSA fields move as a pair, so the pod's inlined spec is dropped and nothing inlined the container's",
          docs: docs('no-credential-spec'),
        })
      : hop('effective-security-context', `pod ${podOptions === undefined ? 'none' : 'windowsOptions'}; container ${own === undefined ? 'none' : 'windowsOptions'}`, effectiveText, e.credentialSpecBytes > 0 || e.runAsUserName !== undefined ? 'ok' : 'none'),
  );
  const c = identity.criConfig;
  hops.push(
    hop(
      'cri-config',
      'the effective security context',
      `windows.security_context: credential_spec ${c.credentialSpecBytes > 0 ? `${bytes(c.credentialSpecBytes)} (sha256 ${c.credentialSpecSha256.slice(0, 12)}…)` : "''"}, run_as_username ${c.runAsUsername === '' ? "''" : c.runAsUsername}, host_process ${c.hostProcess}`,
      c.credentialSpecBytes > 0 ? 'ok' : 'none',
    ),
  );
  if (record.reason === 'CreateContainerError') {
    hops.push(hop('hand-off', 'the CRI config', 'CreateContainer refused', 'broken', { detail: `CreateContainerError: ${record.message ?? ''}`, docs: docs(HANDOFF_ANCHOR) }));
    rest('hcs-document');
    return hops;
  }
  const answer: RuntimeAnswer = record.containerId === undefined ? undefined : input.runtime.get(record.containerId);
  if (answer === undefined || 'error' in answer) {
    const detail = answer === undefined ? 'the runtime has no record of this container' : `the runtime did not answer: ${answer.error}`;
    for (const h of ['hand-off', 'hcs-document', 'domain'] as const) hops.push(hop(h, '', '', 'unknown', { detail }));
    return hops;
  }
  hops.push(...runtimeHops(answer, c.credentialSpecSha256));
  return hops;
}

function runtimeHops(r: ExplainContainerResponse__Output, sentSha: string): Hop[] {
  const out: Hop[] = [];
  const start = r.start;
  const failedAt = start?.state === 'failed' ? start.failed_step : '';
  const failure = start === null ? '' : `StartContainer: ${start.error_code} ${start.error}`;
  // The hand-off.
  const h = r.handoff;
  const received = r.received;
  const receivedText = received === null || !received.has_credential_spec ? "credential_spec ''" : `credential_spec ${bytes(Number(received.credential_spec_bytes))}`;
  const handoffChanged = h === null || h.kind === 'none' ? 'nothing to hand over' : h.kind === 'oci-spec' ? `${r.runtime_flavor}: the string goes into the OCI spec (windows.credentialSpec), no hand-off` : `${r.runtime_flavor}: ${h.security_option} (${h.state})`;
  if (received !== null && received.credential_spec_sha256 !== sentSha) {
    out.push(hop('hand-off', receivedText, handoffChanged, 'broken', { detail: 'the runtime received another credential spec than the kubelet sent (SHA-256 differs)' }));
  } else if (failedAt === 'hand-off') {
    out.push(hop('hand-off', receivedText, handoffChanged, 'broken', { detail: failure, docs: docs(HANDOFF_ANCHOR) }));
  } else {
    out.push(hop('hand-off', receivedText, handoffChanged, received?.has_credential_spec === true ? (failedAt === 'image' ? 'not-reached' : 'ok') : 'none'));
  }
  // The HCS document.
  const d = r.hcs_document;
  const docText = d === null ? '' : `${d.credential_spec ? `windows.credentialSpec: ${d.account} in ${d.dns_name} (${d.netbios_name}, ${d.sid})${d.ccg_plugin_guid === '' ? '' : `, CCG plugin ${d.ccg_plugin_guid}`}` : 'no windows.credentialSpec'}; process.user.username ${d.username || "''"}${d.host_process ? '; HostProcess' : ''}`;
  const afterHandoff = failedAt === 'hand-off' || failedAt === 'image';
  if (afterHandoff) {
    out.push(hop('hcs-document', '', '', failedAt === 'image' ? 'broken' : 'not-reached', failedAt === 'image' ? { detail: failure } : {}));
  } else if (failedAt === 'hcs-document') {
    out.push(hop('hcs-document', 'the credential spec text', 'refused the document', 'broken', { detail: failure, docs: docs('invalid-credential-spec') }));
  } else if (failedAt === 'logon' && start?.failure_reason === 'unknown-user') {
    out.push(hop('hcs-document', 'the credential spec and the run-as user', docText, 'broken', { detail: failure, docs: docs('unknown-user') }));
  } else {
    out.push(hop('hcs-document', 'the credential spec and the run-as user', docText, d?.credential_spec === true ? 'ok' : start?.state === 'not-started' ? 'not-reached' : 'none'));
  }
  // The domain's answer.
  const logon = r.logon;
  const failedOps = r.operations.filter((o) => o.result === 'failed');
  const lastFailed = failedOps[failedOps.length - 1];
  const opsText = r.operations.length === 0 ? '' : `; last operations: ${r.operations.slice(-3).map((o) => `${o.command} → ${o.status}`).join(', ')}`;
  if (afterHandoff || failedAt === 'hcs-document' || (failedAt === 'logon' && start?.failure_reason === 'unknown-user')) {
    out.push(hop('domain', '', '', 'not-reached'));
  } else if (failedAt === 'logon') {
    const reason = start?.failure_reason ?? '';
    out.push(hop('domain', `the logon of ${d?.account ?? ''}`, `${r.ad_mode}: the start was refused`, 'broken', { detail: failure, ...(REASON_ANCHORS[reason] === undefined ? {} : { docs: docs(REASON_ANCHORS[reason]) }) }));
  } else if (failedAt !== '') {
    out.push(hop('domain', '', '', 'not-reached', { detail: failure }));
  } else if (logon === null || logon.result === '') {
    out.push(hop('domain', '', 'no logon yet', start?.state === 'not-started' ? 'not-reached' : 'unknown', start?.state === 'unrecorded' ? { detail: 'the runtime restarted since the container started: its identity journal is gone' } : {}));
  } else if (logon.result === 'none') {
    out.push(hop('domain', `${logon.user}, no credential spec`, `no domain identity (nltest /parentdomain: RPC_S_SERVER_UNAVAILABLE)${opsText}`, 'none', { docs: docs('no-credential-spec') }));
  } else if (logon.result === 'failed') {
    out.push(hop('domain', `${logon.user} as ${logon.network_identity || d?.account || ''}`, `${logon.netlogon_status}; klist ${logon.kerberos_status}${opsText}`, 'broken', {
      detail: logon.message,
      ...(REASON_ANCHORS[logon.failure_reason] === undefined ? {} : { docs: docs(REASON_ANCHORS[logon.failure_reason]!) }),
    }));
  } else if (lastFailed !== undefined && lastFailed.sequence === r.operations[r.operations.length - 1]?.sequence) {
    out.push(hop('domain', `${logon.user} as ${logon.network_identity}`, `secure channel with ${logon.domain_controller}${opsText}`, 'broken', { detail: `the domain answered ${lastFailed.command} with ${lastFailed.status} at ${lastFailed.time}` }));
  } else {
    out.push(hop('domain', `${logon.user} as ${logon.network_identity || '(a local account)'}`, `secure channel with ${logon.domain_controller}${logon.upn === '' ? '' : `, UPN ${logon.upn}`}${opsText}`, 'ok'));
  }
  return out;
}

/** The explanation of one pod from its records. */
export function explainIdentity(input: ExplainInput): IdentityExplanation {
  const m = input.pod.metadata ?? {};
  const hops = podHops(input);
  const containers: ContainerExplanation[] = input.refusal !== undefined
    ? []
    : (input.pod.spec?.containers ?? []).map((c) => {
        const record = input.containers[c.name];
        return { name: c.name, ...(record?.containerId === undefined ? {} : { containerId: record.containerId }), hops: containerHops(input, c.name, record) };
      });
  return {
    apiVersion: EXPLANATION_API_VERSION,
    kind: EXPLANATION_KIND,
    pod: { namespace: m.namespace ?? 'default', name: m.name ?? '', uid: m.uid ?? '' },
    ...firstBroken(hops, containers),
    hops,
    containers,
  };
}

/** The first broken hop in travel order: pod hops first, then hop by hop across the containers. */
function firstBroken(hops: readonly Hop[], containers: readonly ContainerExplanation[]): { broken?: BrokenHop } {
  const found = (h: Hop, container?: string): { broken: BrokenHop } => ({
    broken: { hop: h.hop, ...(container === undefined ? {} : { container }), detail: h.detail ?? '', ...(h.docs === undefined ? {} : { docs: h.docs }) },
  });
  const podBroken = hops.find((h) => h.verdict === 'broken');
  if (podBroken !== undefined) return found(podBroken);
  for (const name of HOPS) {
    for (const c of containers) {
      const h = c.hops.find((x) => x.hop === name && x.verdict === 'broken');
      if (h !== undefined) return found(h, c.name);
    }
  }
  return {};
}
