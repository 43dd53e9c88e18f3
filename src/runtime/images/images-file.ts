import imagesSchema from '../../../schemas/images.schema.json' with { type: 'json' };
import { RuntimeError } from '../errors.js';
import { compileSchema, firstViolation } from '../windows/schema-validation.js';
import type { ImageProgram } from './image-program.js';
import { parseImageReference } from './reference.js';
import { parseUserYaml, readUserFile } from '../validation/user-file.js';

/** `--unknown-images`: what a reference nobody described is. */
export type UnknownImageRule = 'windows' | 'linux' | 'not-found';
export const UNKNOWN_IMAGE_RULES: readonly UnknownImageRule[] = ['windows', 'linux', 'not-found'];

/** An image of the user's images file (schemas/images.schema.json). */
export interface DeclaredImage {
  reference: string;
  tags?: string[];
  platforms?: { os: 'windows' | 'linux'; architecture?: 'amd64' | 'arm64'; osVersion?: string }[];
  user?: string;
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  exposedPorts?: number[];
  labels?: Record<string, string>;
  size?: number;
  program?: ImageProgram;
}

/** A registry that refuses anonymous pulls. */
export interface RegistryCredentials {
  host: string;
  username?: string;
  password?: string;
  auth?: string;
  identityToken?: string;
  tokenRealm?: string;
}

/** The images file, and the node file's `images:` section. */
export interface ImagesSection {
  unknownImages?: UnknownImageRule;
  images?: DeclaredImage[];
  registries?: RegistryCredentials[];
}

const validateImagesSchema = compileSchema<ImagesSection>(imagesSchema);

function fileError(source: string, path: string, reason: string): RuntimeError {
  return new RuntimeError('InvalidArgument', `${source}: ${path === '' ? '(top level)' : path}: ${reason}`);
}

/**
 * Validates an images section: the schema, then what a schema cannot say (references that parse,
 * one entry per reference, credentials given as a pair or a token). Errors read
 * `<source>: <field path>: <reason>`; `prefix` is the section's path in its file (`images` in a
 * node file).
 */
export function validateImagesSection(data: unknown, source: string, prefix = ''): ImagesSection {
  const at = (path: string): string => (prefix === '' ? path : path === '' ? prefix : `${prefix}.${path}`);
  const violation = firstViolation(validateImagesSchema, data);
  if (violation !== undefined) {
    const got = violation.value !== undefined && typeof violation.value !== 'object' ? ` (got ${JSON.stringify(violation.value)})` : '';
    throw fileError(source, at(violation.path), `${violation.reason}${got}`);
  }
  const section = data as ImagesSection;
  const seen = new Map<string, number>();
  (section.images ?? []).forEach((image, i) => {
    let normalised: string;
    try {
      const ref = parseImageReference(image.reference);
      normalised = `${ref.name}:${ref.tag ?? ''}@${ref.digest ?? ''}`;
    } catch (err) {
      throw fileError(source, at(`images[${i}].reference`), (err as Error).message);
    }
    if (seen.has(normalised)) throw fileError(source, at(`images[${i}].reference`), `"${image.reference}" is already described by images[${seen.get(normalised)}]`);
    seen.set(normalised, i);
    const windows = (image.platforms ?? []).filter((p) => p.os === 'windows');
    (image.platforms ?? []).forEach((p, j) => {
      if (p.os === 'linux' && p.osVersion !== undefined) throw fileError(source, at(`images[${i}].platforms[${j}].osVersion`), 'is for Windows platforms only');
    });
    if (windows.length > 1 && new Set(windows.map((p) => p.osVersion)).size < windows.length) {
      throw fileError(source, at(`images[${i}].platforms`), 'names one Windows osVersion twice');
    }
  });
  const hosts = new Map<string, number>();
  (section.registries ?? []).forEach((registry, i) => {
    if (hosts.has(registry.host)) throw fileError(source, at(`registries[${i}].host`), `"${registry.host}" is already described by registries[${hosts.get(registry.host)}]`);
    hosts.set(registry.host, i);
    const pair = registry.username !== undefined || registry.password !== undefined;
    if (pair && (registry.username === undefined || registry.password === undefined)) {
      throw fileError(source, at(`registries[${i}]`), 'username and password go together');
    }
    if (!pair && registry.auth === undefined && registry.identityToken === undefined) {
      throw fileError(source, at(`registries[${i}]`), 'needs credentials: username and password, auth, or identityToken');
    }
    if (registry.auth !== undefined && !Buffer.from(registry.auth, 'base64').toString('utf8').includes(':')) {
      throw fileError(source, at(`registries[${i}].auth`), 'must be base64 of user:password');
    }
  });
  return section;
}

/** Reads and validates `--images FILE` (YAML or JSON); messages name the path as given. */
export async function loadImagesFile(path: string): Promise<ImagesSection> {
  const data = parseUserYaml(await readUserFile(path, 'images file'), path);
  return validateImagesSection(data ?? {}, path);
}

/** Checks an `--unknown-images` value. */
export function parseUnknownImageRule(value: string): UnknownImageRule {
  if ((UNKNOWN_IMAGE_RULES as readonly string[]).includes(value)) return value as UnknownImageRule;
  throw new RuntimeError('InvalidArgument', `--unknown-images: must be one of ${UNKNOWN_IMAGE_RULES.join(', ')}, not ${JSON.stringify(value)}`);
}
