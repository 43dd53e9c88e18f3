import type { DomainState } from '../windows/live-domain.js';
import { decodeStored, encodeJson, RECORD_FORMAT } from './record-codec.js';

/** The id of the one `meta` row that holds the live domain (windows/live-domain.ts). */
export const DOMAIN_RECORD_ID = 'active-directory';

export interface StoredDomain {
  v: number;
  id: typeof DOMAIN_RECORD_ID;
  generation: number;
  source: string;
  appliedAtMs: number;
  /** The document as an apply takes it (checked again when it is loaded). */
  document: { domains: unknown; ccgPlugins: unknown };
}

const DOMAIN_FIELDS = ['generation', 'source', 'appliedAtMs', 'document'] as const;

export function encodeDomain(state: DomainState): string {
  const stored: StoredDomain = {
    v: RECORD_FORMAT,
    id: DOMAIN_RECORD_ID,
    generation: state.generation,
    source: state.source,
    appliedAtMs: state.appliedAtMs,
    document: { domains: state.domains, ccgPlugins: state.ccgPlugins },
  };
  return encodeJson(stored);
}

export function decodeDomain(data: string): StoredDomain {
  const stored = decodeStored<StoredDomain>(DOMAIN_RECORD_ID, data, DOMAIN_FIELDS);
  if (!Number.isSafeInteger(stored.generation) || stored.generation < 1) throw new Error(`generation ${JSON.stringify(stored.generation)} is not a positive integer`);
  return stored;
}
