/**
 * What the API server's GMSA admission did to a pod, recorded when it admits it (admission.ts
 * admitPod) so `cri-winsim explain` can show the hop without running admission again: the design,
 * who did it (the webhook or the KEP's GMSAAuthorizer) and, for the pod and each regular container
 * that references a credential spec, which resource it came from and whether admission inlined it
 * or found contents the user had set and checked them against the resource.
 */
import type { V1Pod, V1WindowsSecurityContextOptions } from '@kubernetes/client-node';
import { alphaContainerAnnotationSuffix, alphaPodAnnotation, gmsaConfigMapAnnotations, gmsaWebhookName, type GmsaDesign } from './admission.js';

export interface GmsaAdmissionSite {
  readonly kind: 'pod' | 'container';
  readonly name: string;
  /** `GMSACredentialSpec/<name>` or `ConfigMap/<namespace>/<name>`. */
  readonly resource: string;
  /** inlined: admission wrote the contents; validated: the user's contents matched the resource. */
  readonly action: 'inlined' | 'validated';
}

export interface GmsaAdmissionRecord {
  readonly design: GmsaDesign;
  /** The webhook's name or the admission plugin's. */
  readonly by: string;
  /** No entry: nothing in the pod referenced a credential spec. */
  readonly sites: readonly GmsaAdmissionSite[];
  /** The random hostname the webhook gave the pod (RANDOM_HOSTNAME). */
  readonly hostname?: string;
}

type Sites = Map<string, { kind: 'pod' | 'container'; name: string; options: V1WindowsSecurityContextOptions }>;

/** The pod's windowsOptions and its regular containers' (the webhook's iterateOverWindowsSecurityOptions). */
function sites(pod: V1Pod): Sites {
  const out: Sites = new Map();
  const podOptions = pod.spec?.securityContext?.windowsOptions;
  if (podOptions != null) out.set('pod', { kind: 'pod', name: pod.metadata?.name ?? '', options: podOptions });
  for (const c of pod.spec?.containers ?? []) {
    const options = c.securityContext?.windowsOptions;
    if (options != null) out.set(`container/${c.name}`, { kind: 'container', name: c.name, options });
  }
  return out;
}

/**
 * The record of one admission that let the pod in: `before` is the pod as the client sent it,
 * `after` as the API server stored it. Only what the GMSA step changes differs between the two in
 * windowsOptions and the GMSA annotations.
 */
export function recordGmsaAdmission(design: GmsaDesign, before: V1Pod, after: V1Pod): GmsaAdmissionRecord {
  const hostname = after.spec?.hostname !== before.spec?.hostname && after.spec?.hostname !== undefined ? { hostname: after.spec.hostname } : {};
  if (design === 'alpha-1.14') {
    const annotations = after.metadata?.annotations ?? {};
    const keys = [
      ...(after.spec?.containers ?? []).map((c) => ({ kind: 'container' as const, name: c.name, key: `${c.name}${alphaContainerAnnotationSuffix}-name` })),
      { kind: 'pod' as const, name: after.metadata?.name ?? '', key: `${alphaPodAnnotation}-name` },
    ];
    const out = keys.filter((k) => (annotations[k.key] ?? '') !== '').map((k) => ({ kind: k.kind, name: k.name, resource: `GMSACredentialSpec/${annotations[k.key]}`, action: 'inlined' as const }));
    return { design, by: gmsaWebhookName, sites: out, ...hostname };
  }
  const annotations = after.metadata?.annotations ?? {};
  const configMap = gmsaConfigMapAnnotations.map((a) => annotations[a]).find((v) => v !== undefined && v !== '');
  const was = sites(before);
  const out: GmsaAdmissionSite[] = [];
  for (const [key, site] of sites(after)) {
    const name = site.options.gmsaCredentialSpecName;
    const hadContents = was.get(key)?.options.gmsaCredentialSpec !== undefined;
    if (design === 'webhook' && name !== undefined) {
      out.push({ kind: site.kind, name: site.name, resource: `GMSACredentialSpec/${name}`, action: hadContents ? 'validated' : 'inlined' });
    } else if (design === 'kep-configmap' && key === 'pod' && configMap !== undefined) {
      out.push({ kind: 'pod', name: site.name, resource: `ConfigMap/${after.metadata?.namespace || 'default'}/${configMap}`, action: hadContents ? 'validated' : 'inlined' });
    }
  }
  return { design, by: design === 'kep-configmap' ? 'GMSAAuthorizer' : gmsaWebhookName, sites: out, ...hostname };
}
