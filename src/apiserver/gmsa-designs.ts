/**
 * The GMSA designs a user picks by name (`--gmsa-design`); `webhook` is what shipped. Apart from
 * admission.ts, so that the commands' flag definitions and the printers name them without
 * loading admission.
 */
export type GmsaDesign = 'webhook' | 'kep-configmap' | 'alpha-1.14';
export const gmsaDesigns: readonly GmsaDesign[] = ['webhook', 'kep-configmap', 'alpha-1.14'];
export const defaultGmsaDesign: GmsaDesign = 'webhook';

/** The windows-gmsa webhook's name, as its refusals name it. */
export const gmsaWebhookName = 'admission-webhook.windows-gmsa.sigs.k8s.io';
