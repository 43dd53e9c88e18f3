import credentialSpecSchema from '../../../schemas/credential-spec.schema.json' with { type: 'json' };
import { deepFreeze } from '../../deep-freeze.js';
import { RuntimeError } from '../errors.js';
import { BoundedCache } from '../../bounded-cache.js';
import { compileSchema, firstViolation } from './schema-validation.js';

/** The credential spec document (REFERENCE §8, as New-CredentialSpec writes it). No secrets. */
export interface CredentialSpecDocument {
  CmsPlugins: string[];
  DomainJoinConfig: {
    /** The domain SID, S-1-5-21-a-b-c. */
    Sid: string;
    /** The gMSA SAM account name, no domain, no `$`. */
    MachineAccountName: string;
    /** The domain's objectGUID, no braces. */
    Guid: string;
    /** The forest root domain. */
    DnsTreeName: string;
    /** The domain FQDN. */
    DnsName: string;
    NetBiosName: string;
  };
  ActiveDirectoryConfig: {
    GroupManagedServiceAccounts: Array<{ Name: string; Scope: string }>;
    /** Container Credential Guard: how a host that is not domain-joined retrieves the gMSA password. */
    HostAccountConfig?: { PortableCcgVersion: string; PluginGUID: string; PluginInput: string };
  };
  [extra: string]: unknown;
}

/** Same limit as the API server's `gmsaCredentialSpec size must be under 64 KiB` (REFERENCE §5). */
export const MAX_CREDENTIAL_SPEC_BYTES = 64 * 1024;

// Compiled once, when the runtime loads this module.
const validateCredentialSpecDocument = compileSchema<CredentialSpecDocument>(credentialSpecSchema);

/** Compiles the credential spec schema now rather than at the first gMSA container. */
export function prepareCredentialSpecValidation(): void {
  void validateCredentialSpecDocument.validate;
}

/**
 * Ends every schema-check message: the check and its words are cri-winsim's own (HCS reports an
 * invalid document without naming a field), so the message says so (docs/failure-modes.md).
 */
export const OWN_CHECK_MARK = ' (cri-winsim schema check)';

function invalid(detail: string): RuntimeError {
  return new RuntimeError('InvalidArgument', `invalid credential spec: ${detail}${OWN_CHECK_MARK}`);
}

/**
 * Parses and validates credential spec JSON as the runtime receives it (CRI `credential_spec`).
 * Every rejection names the field, e.g.
 * `invalid credential spec: DomainJoinConfig.Sid "S-1-5-21-x" is not a domain SID (S-1-5-21-a-b-c)`.
 */
export function parseCredentialSpec(text: string): CredentialSpecDocument {
  return parseAndValidate(text);
}

/**
 * How many accepted credential spec texts are kept with their documents. A node runs the pods of
 * a few gMSAs: each container's start reads back one of a handful of texts, and a pod's spec is
 * the same at every restart. Looking one up by its text costs a hash and a comparison instead of
 * parsing and validating it again. At most 32 texts of up to 64 KiB each.
 */
const VALIDATED_TEXTS = 32;

/**
 * parseCredentialSpec, keeping accepted texts with their documents, deep-frozen: one document is
 * shared by every container started with that text (it goes into their OCI specs as
 * `windows.credentialSpec`). Rejections are not kept; a rejected text is checked again, with the
 * same message. One per runtime.
 */
export class CredentialSpecParser {
  private readonly validated = new BoundedCache<string, CredentialSpecDocument>(VALIDATED_TEXTS);

  parse(text: string): CredentialSpecDocument {
    return this.validated.get(text, parseAndValidate);
  }
}

function parseAndValidate(text: string): CredentialSpecDocument {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_CREDENTIAL_SPEC_BYTES) {
    throw invalid(`size must be under 64 KiB (got ${bytes} bytes)`);
  }
  if (text.trim() === '') throw invalid('the document is empty');
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw invalid(`not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  return deepFreeze(validateCredentialSpec(document));
}

/** Validates an already parsed credential spec document against the schema. */
export function validateCredentialSpec(document: unknown): CredentialSpecDocument {
  const violation = firstViolation(validateCredentialSpecDocument, document);
  if (violation === undefined) return document as CredentialSpecDocument;
  const subject = violation.path === '' ? 'the document' : violation.path;
  if (violation.describesValue) {
    throw invalid(`${subject} ${JSON.stringify(violation.value)} ${violation.reason}`);
  }
  throw invalid(`${subject} ${violation.reason}`);
}

/** The gMSA a credential spec names, as `NETBIOS\Name`, for messages. */
export function credentialSpecAccount(document: CredentialSpecDocument): string {
  return `${document.DomainJoinConfig.NetBiosName}\\${document.DomainJoinConfig.MachineAccountName}`;
}
